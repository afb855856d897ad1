"""``ticketproxy sandbox add-user``: a second person joins a running ``serve``, no restart."""

from __future__ import annotations

import re
import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from github import Auth, Github, GithubException
from openai import OpenAI

from auth.keyring import Keyring
from auth.keys import load_signing_key
from auth.roles import Role
from auth.sign import sign_comment
from proxy.cli import main
from proxy.embedded import ensure_demo_identity
from proxy.settings import Settings
from tests.helpers.serving import TICKETPROXY, serve_env, serving

pytestmark = pytest.mark.slow


def _comment_as(api_url: str, token: str, repo: str, body: str, *, within: float) -> None:
    """Post ``body`` on issue 1 with ``token``, retrying while the sandbox does not know it yet."""
    github = Github(base_url=api_url, auth=Auth.Token(token), retry=None, lazy=True)
    deadline = time.monotonic() + within
    while True:
        try:
            github.get_repo(repo).get_issue(1).create_comment(body)
            return
        except GithubException as exc:
            if exc.status != 401 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_person_added_while_serving_signs_and_is_accepted(tmp_path: Path) -> None:
    """carol, added by ``sandbox add-user`` while serve runs, answers with her key and token."""
    env = serve_env(tmp_path)
    with serving(env, tmp_path / "serve.log") as banner:
        base = re.search(r"OpenAI base URL (\S+)", banner)
        api = re.search(r"\(API (\S+), repository (\S+)\)", banner)
        assert base is not None
        assert api is not None
        api_url, repo = api.group(1), api.group(2)
        added = subprocess.run(
            [str(TICKETPROXY), "sandbox", "add-user", "carol", "--roles", "editor,reviewer"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        token = re.search(r"GitHub token: (\S+)", added)
        key_path = re.search(r"private key: (\S+)", added)
        assert token is not None
        assert key_path is not None
        key = load_signing_key(Path(key_path.group(1)))
        client = OpenAI(base_url=base.group(1), api_key="unused", max_retries=0, timeout=60)
        answers: list[str] = []
        asking = threading.Thread(
            target=lambda: answers.append(
                client.chat.completions.create(
                    model="gpt-4o", messages=[{"role": "user", "content": "Say hello"}]
                )
                .choices[0]
                .message.content
                or ""
            )
        )
        asking.start()
        body = sign_comment("Hello from carol", ticket=f"{repo}#1", key=key, now=datetime.now(UTC))
        deadline = time.monotonic() + 20
        while True:  # the issue appears once the proxy has opened it
            try:
                _comment_as(api_url, token.group(1), repo, body, within=10)
                break
            except GithubException as exc:
                if exc.status != 404 or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        asking.join(timeout=30)
    assert answers == ["Hello from carol"]
    keyring = Keyring.load(Path(env["TICKETPROXY_DATA_DIR"]) / "keyring.json")
    [entry] = [e for e in keyring if e.login == "carol"]
    assert entry.roles == frozenset({Role.EDITOR, Role.REVIEWER})


def test_adding_a_person_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A login the embedded GitHub already has is refused, and nothing is written."""
    env = serve_env(tmp_path)
    data = Path(env["TICKETPROXY_DATA_DIR"])
    assert main(["sandbox", "add-user", "carol"], env) == 2  # no embedded GitHub yet
    assert "ticketproxy serve" in capsys.readouterr().err
    ensure_demo_identity(Settings.from_env(env))
    assert main(["sandbox", "add-user", "carol"], env) == 0
    before = (data / "keyring.json").read_text()
    assert main(["sandbox", "add-user", "Carol"], env) == 2
    assert "already a user" in capsys.readouterr().err
    assert (data / "keyring.json").read_text() == before
