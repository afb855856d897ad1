"""The ``ticketproxy`` command line: keys, signing, answering, and refusing bad settings."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from github import Auth, Github

from auth.keyring import Keyring, add_key_to_keyring
from auth.keys import generate_signing_key, load_signing_key, write_signing_key
from auth.roles import Role
from auth.verify import Accepted, Rejected, RejectReason, verify_comment
from embedded_github import RunningSandbox, SandboxConfig
from proxy.cli import main
from proxy.cli.rules import parse_issue_url
from proxy.embedded import loopback_url
from proxy.errors import ProxyError

REPO = "acme/agents"
TICKETPROXY = Path(sys.executable).with_name("ticketproxy")
ANSWER = "Run `make test`, then read the summary.\nIt lists every failure."


@pytest.fixture
def keyring_path(tmp_path: Path) -> Path:
    """Return where the test keyring lives."""
    return tmp_path / "keyring.json"


@pytest.fixture
def alice_key(tmp_path: Path, keyring_path: Path) -> Path:
    """Write alice's private key (editor, id 1001, as in the sandbox) and trust it."""
    key = generate_signing_key(login="alice")
    path = tmp_path / "alice.key"
    write_signing_key(path, key)
    add_key_to_keyring(keyring_path, key, roles=(Role.EDITOR,), user_id=1001)
    return path


@pytest.fixture
def answer_file(tmp_path: Path) -> Path:
    """Write the answer text to a file."""
    path = tmp_path / "answer.md"
    path.write_text(ANSWER + "\n", encoding="utf-8")
    return path


def verify(body: str, keyring_path: Path, *, ticket: str, author: str = "alice") -> Any:
    """Verify a comment body as if ``author`` (id 1001) posted it on ``ticket`` just now."""
    return verify_comment(
        body,
        author_login=author,
        author_id=1001,
        ticket=ticket,
        keyring=Keyring.load(keyring_path),
        now=datetime.now(UTC),
        is_jti_used=lambda _jti: False,
    )


def process_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Return a clean environment for a child process: no inherited tokens or settings."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), **extra}


# keygen


def test_keygen_writes_an_owner_only_key_and_adds_login_roles_and_id_to_the_keyring(
    tmp_path: Path, keyring_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The private key file is mode 0600 and the keyring names its login, roles and user id."""
    out = tmp_path / "keys" / "carol.key"
    argv = ["keygen", "--login", "carol", "--roles", "editor, reviewer", "--user-id", "4242"]
    code = main([*argv, "--keyring", str(keyring_path), "--out", str(out)], {})
    assert code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    key = load_signing_key(out)
    assert key.login == "carol"
    entry = Keyring.load(keyring_path).get(key.kid)
    assert entry is not None
    assert (entry.login, entry.user_id) == ("carol", 4242)
    assert entry.roles == {Role.EDITOR, Role.REVIEWER}
    printed = capsys.readouterr().out
    assert str(out) in printed
    assert key.kid in printed


def test_keygen_refuses_to_overwrite_an_existing_key_file(
    tmp_path: Path, keyring_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An existing file at --out is left alone, the exit code is 2 and the keyring unchanged."""
    out = tmp_path / "carol.key"
    out.write_text("my only copy\n", encoding="utf-8")
    code = main(
        ["keygen", "--login", "carol", "--keyring", str(keyring_path), "--out", str(out)], {}
    )
    assert code == 2
    assert out.read_text(encoding="utf-8") == "my only copy\n"
    assert not keyring_path.exists()
    err = capsys.readouterr().err
    assert "refusing to overwrite" in err
    assert str(out) in err


def test_keygen_with_an_unknown_role_lists_the_known_roles_and_writes_nothing(
    tmp_path: Path, keyring_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--roles editor,admin`` is a clear error naming the known roles, not a traceback."""
    out = tmp_path / "carol.key"
    argv = ["keygen", "--login", "carol", "--roles", "editor,admin"]
    code = main([*argv, "--keyring", str(keyring_path), "--out", str(out)], {})
    assert code == 2
    err = capsys.readouterr().err
    assert "admin" in err
    assert "editor, reviewer" in err
    assert "Traceback" not in err
    assert not out.exists()
    assert not keyring_path.exists()


def test_keygen_uses_the_data_dir_keyring_despite_an_unrelated_github_token(
    tmp_path: Path,
) -> None:
    """An editor's own GITHUB_TOKEN does not make keygen demand TICKETPROXY_GITHUB_REPO."""
    env = {"GITHUB_TOKEN": "ghp_editors_own_token", "TICKETPROXY_DATA_DIR": str(tmp_path / "d")}
    out = tmp_path / "carol.key"
    assert main(["keygen", "--login", "carol", "--out", str(out)], env) == 0
    keyring = Keyring.load(tmp_path / "d" / "keyring.json")
    assert [entry.login for entry in keyring] == ["carol"]


def test_keygen_refuses_a_broken_keyring_before_writing_a_key(
    tmp_path: Path, keyring_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A keyring that is not JSON fails the command and leaves no orphan private key behind."""
    keyring_path.write_text("{not json", encoding="utf-8")
    out = tmp_path / "carol.key"
    code = main(
        ["keygen", "--login", "carol", "--keyring", str(keyring_path), "--out", str(out)], {}
    )
    assert code == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert not out.exists()


# sign


def test_sign_prints_a_comment_whose_trailer_verifies_for_the_ticket_and_its_author(
    alice_key: Path, answer_file: Path, keyring_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The printed comment, posted by alice on acme/agents#1, is an accepted answer."""
    code = main(["sign", "--ticket", f"{REPO}#1", "--key", str(alice_key), str(answer_file)], {})
    assert code == 0
    body = capsys.readouterr().out
    assert body.startswith(ANSWER)
    assert "<!-- ticketproxy-signature: " in body
    verdict = verify(body, keyring_path, ticket=f"{REPO}#1")
    assert isinstance(verdict, Accepted), verdict
    assert (verdict.text, verdict.signer) == (ANSWER, "alice")


def test_sign_with_ask_prints_an_answer_that_verifies_as_a_question(
    alice_key: Path, answer_file: Path, keyring_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``sign --ask`` signs the ``ask`` claim: the verified answer asks back."""
    code = main(
        ["sign", "--ask", "--ticket", f"{REPO}#1", "--key", str(alice_key), str(answer_file)], {}
    )
    assert code == 0
    verdict = verify(capsys.readouterr().out, keyring_path, ticket=f"{REPO}#1")
    assert isinstance(verdict, Accepted), verdict
    assert verdict.ask is True


def test_sign_without_ask_prints_a_final_answer(
    alice_key: Path, answer_file: Path, keyring_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ``--ask`` the answer is final."""
    main(["sign", "--ticket", f"{REPO}#1", "--key", str(alice_key), str(answer_file)], {})
    verdict = verify(capsys.readouterr().out, keyring_path, ticket=f"{REPO}#1")
    assert isinstance(verdict, Accepted), verdict
    assert verdict.ask is False


def test_sign_ask_on_an_approval_is_refused_saying_why(
    alice_key: Path, answer_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An approval cannot ask back: exit 2 with the reason, nothing printed to post."""
    code = main(
        [
            "sign",
            "--ask",
            "--act",
            "approve",
            "--judged-sha256",
            "0" * 64,
            "--ticket",
            f"{REPO}#1",
            "--key",
            str(alice_key),
            str(answer_file),
        ],
        {},
    )
    assert code == 2
    captured = capsys.readouterr()
    assert "--ask" in captured.err
    assert "signature" not in captured.out


def test_signed_comment_is_rejected_on_another_ticket(
    alice_key: Path, answer_file: Path, keyring_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A signature for acme/agents#1 does not answer acme/agents#2."""
    main(["sign", "--ticket", f"{REPO}#1", "--key", str(alice_key), str(answer_file)], {})
    verdict = verify(capsys.readouterr().out, keyring_path, ticket=f"{REPO}#2")
    assert isinstance(verdict, Rejected)
    assert verdict.reason is RejectReason.WRONG_TICKET


def test_sign_with_a_missing_key_file_says_how_to_make_one(
    tmp_path: Path, answer_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wrong --key path exits 2 and points at ``ticketproxy keygen``."""
    missing = tmp_path / "nobody.key"
    code = main(["sign", "--ticket", f"{REPO}#1", "--key", str(missing), str(answer_file)], {})
    assert code == 2
    err = capsys.readouterr().err
    assert str(missing) in err
    assert "ticketproxy keygen" in err


def test_sign_refuses_an_empty_answer(
    alice_key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A blank answer file is refused instead of signing nothing."""
    blank = tmp_path / "blank.md"
    blank.write_text("  \n", encoding="utf-8")
    code = main(["sign", "--ticket", f"{REPO}#1", "--key", str(alice_key), str(blank)], {})
    assert code == 2
    assert "answer is empty" in capsys.readouterr().err


@pytest.mark.slow
def test_console_script_signs_an_answer_read_from_standard_input(
    alice_key: Path, keyring_path: Path, tmp_path: Path
) -> None:
    """``.venv/bin/ticketproxy sign ... -`` reads stdin and prints a verifying comment."""
    result = subprocess.run(
        [str(TICKETPROXY), "sign", "--ticket", f"{REPO}#7", "--key", str(alice_key), "-"],
        input=ANSWER,
        capture_output=True,
        text=True,
        env=process_env(tmp_path),
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    verdict = verify(result.stdout, keyring_path, ticket=f"{REPO}#7")
    assert isinstance(verdict, Accepted), verdict
    assert verdict.text == ANSWER


# answer


def github_as(sandbox: RunningSandbox, token: str) -> Github:
    """Return a PyGithub client for the sandbox acting as the token's user."""
    return Github(base_url=sandbox.api_url, auth=Auth.Token(token), retry=None, lazy=True)


def token_of(config: SandboxConfig, login: str) -> str:
    """Return a sandbox user's token."""
    return next(user.token for user in config.users if user.login == login)


async def open_issue(sandbox: RunningSandbox, config: SandboxConfig) -> int:
    """Open an issue in acme/agents as the bot and return its number."""

    def create() -> int:
        with github_as(sandbox, token_of(config, "ticketproxy-bot")) as github:
            return int(github.get_repo(REPO).create_issue(title="Which command?").number)

    return await asyncio.to_thread(create)


async def issue_comments(
    sandbox: RunningSandbox, config: SandboxConfig, number: int
) -> list[tuple[str, int, str]]:
    """Return (login, user id, body) of each comment on an issue."""

    def fetch() -> list[tuple[str, int, str]]:
        with github_as(sandbox, token_of(config, "ticketproxy-bot")) as github:
            issue = github.get_repo(REPO).get_issue(number)
            return [(c.user.login, c.user.id, c.body) for c in issue.get_comments()]

    return await asyncio.to_thread(fetch)


async def test_answer_posts_the_signed_comment_as_the_tokens_user(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    alice_key: Path,
    answer_file: Path,
    keyring_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``answer`` on the sandbox's issue page URL posts, as alice, an answer that verifies."""
    number = await open_issue(github_sandbox, sandbox_config)
    url = f"{github_sandbox.web_url}/{REPO}/issues/{number}"
    argv = ["answer", url, "--key", str(alice_key), "--file", str(answer_file)]
    env = {"GITHUB_TOKEN": token_of(sandbox_config, "alice")}
    assert await asyncio.to_thread(main, argv, env) == 0
    [(login, user_id, body)] = await issue_comments(github_sandbox, sandbox_config, number)
    assert (login, user_id) == ("alice", 1001)
    verdict = verify(body, keyring_path, ticket=f"{REPO}#{number}", author=login)
    assert isinstance(verdict, Accepted), verdict
    assert verdict.text == ANSWER
    assert f"signed answer posted: {url}#issuecomment-" in capsys.readouterr().out


async def test_answer_with_a_wrong_token_exits_2_naming_github_token_and_the_flag(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    alice_key: Path,
    answer_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """GitHub's 401 becomes exit 2 and a message about GITHUB_TOKEN and --token; nothing posts."""
    number = await open_issue(github_sandbox, sandbox_config)
    url = f"{github_sandbox.web_url}/{REPO}/issues/{number}"
    argv = ["answer", url, "--key", str(alice_key), "--file", str(answer_file)]
    argv += ["--token", "ghp_" + "0" * 36]
    assert await asyncio.to_thread(main, argv, {}) == 2
    err = capsys.readouterr().err
    assert "401" in err
    assert "GITHUB_TOKEN" in err
    assert "--token" in err
    assert "TICKETPROXY_GITHUB_TOKEN" not in err
    assert await issue_comments(github_sandbox, sandbox_config, number) == []


async def test_answer_to_a_missing_issue_exits_2_naming_the_issue(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    alice_key: Path,
    answer_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """GitHub's 404 becomes exit 2 and a message naming the issue, not a server setting."""
    url = f"{github_sandbox.web_url}/{REPO}/issues/99"
    argv = ["answer", url, "--key", str(alice_key), "--file", str(answer_file)]
    env = {"GITHUB_TOKEN": token_of(sandbox_config, "alice")}
    assert await asyncio.to_thread(main, argv, env) == 2
    err = capsys.readouterr().err
    assert f"{REPO}#99" in err
    assert "TICKETPROXY_GITHUB_REPO" not in err


def test_answer_without_a_token_exits_2_naming_github_token(
    alice_key: Path, answer_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With neither --token nor GITHUB_TOKEN the command says which to give."""
    url = f"http://127.0.0.1:9/{REPO}/issues/1"
    code = main(["answer", url, "--key", str(alice_key), "--file", str(answer_file)], {})
    assert code == 2
    err = capsys.readouterr().err
    assert "GITHUB_TOKEN" in err
    assert "--token" in err


def test_answer_to_a_url_that_is_not_an_issue_exits_2(
    alice_key: Path, answer_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pull-request URL is refused before anything is signed or sent."""
    url = f"http://127.0.0.1:9/{REPO}/pull/1"
    argv = ["answer", url, "--key", str(alice_key), "--file", str(answer_file)]
    assert main([*argv, "--token", "ghp_unused"], {}) == 2
    assert "is not an issue URL" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://github.com/acme/agents/issues/12",
            ("https://api.github.com", "acme/agents", 12),
        ),
        (
            "https://github.com/acme/agents/issues/12#issuecomment-34",
            ("https://api.github.com", "acme/agents", 12),
        ),
        (
            "https://api.github.com/repos/acme/agents/issues/12",
            ("https://api.github.com", "acme/agents", 12),
        ),
        ("https://ghe.example.com/o/r/issues/3", ("https://ghe.example.com/api/v3", "o/r", 3)),
        (
            "https://ghe.example.com/api/v3/repos/o/r/issues/3",
            ("https://ghe.example.com/api/v3", "o/r", 3),
        ),
        (
            "http://127.0.0.1:8081/acme/agents/issues/1",
            ("http://127.0.0.1:8081/api/v3", "acme/agents", 1),
        ),
    ],
    ids=["github", "github-comment-link", "github-api", "ghe", "ghe-api", "sandbox"],
)
def test_issue_url_maps_to_its_api_repository_and_number(
    url: str, expected: tuple[str, str, int]
) -> None:
    """github.com goes to api.github.com; Enterprise and the sandbox to /api/v3 on their host."""
    assert parse_issue_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/acme/agents/pull/12",
        "https://github.com/acme/agents",
        "https://github.com/acme/agents/issues/new",
        "https://github.com/acme/agents/issues/0",
        "https://github.com/acme/agents/issues/²",
        "https://example.com/prefix/acme/agents/issues/3",
        "ftp://github.com/acme/agents/issues/12",
        "github.com/acme/agents/issues/12",
    ],
)
def test_url_that_is_not_an_issue_is_refused(url: str) -> None:
    """Anything but an issue page or issue API URL is a usage error, never a guess."""
    with pytest.raises(ProxyError, match="issue"):
        parse_issue_url(url)


# configuration


@pytest.fixture
def occupied_ports() -> Iterator[tuple[int, int]]:
    """Hold two listening ports, so a server that wrongly starts fails instead of hanging."""
    with socket.socket() as first, socket.socket() as second:
        for sock in (first, second):
            sock.bind(("127.0.0.1", 0))
            sock.listen()
        yield first.getsockname()[1], second.getsockname()[1]


@pytest.mark.parametrize(
    ("env", "flags", "variable"),
    [
        ({"TICKETPROXY_POLL_INTERVAL": "abc"}, [], "TICKETPROXY_POLL_INTERVAL"),
        ({"TICKETPROXY_GITHUB_REPO": "nope"}, [], "TICKETPROXY_GITHUB_REPO"),
        ({"TICKETPROXY_API_KEYS": "short"}, [], "TICKETPROXY_API_KEYS"),
        ({}, ["--host", "0.0.0.0"], "TICKETPROXY_API_KEYS"),
        ({"TICKETPROXY_GITHUB_TOKEN": "ghp_x"}, [], "TICKETPROXY_GITHUB_REPO"),
        ({"TICKETPROXY_LOG_LEVEL": "loud"}, [], "TICKETPROXY_LOG_LEVEL"),
    ],
    ids=["poll-interval", "repo", "short-api-key", "exposed-host", "token-no-repo", "log-level"],
)
def test_serve_with_bad_configuration_exits_2_naming_the_variable_before_starting(
    env: dict[str, str],
    flags: list[str],
    variable: str,
    tmp_path: Path,
    occupied_ports: tuple[int, int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each bad setting fails at start with its name; no data dir is made, nothing listens."""
    port, sandbox_port = occupied_ports
    data = tmp_path / "data"
    environ = {
        "TICKETPROXY_DATA_DIR": str(data),
        "TICKETPROXY_SANDBOX_PORT": str(sandbox_port),
        **env,
    }
    assert main(["serve", "--port", str(port), *flags], environ) == 2
    err = capsys.readouterr().err
    assert variable in err
    assert "Traceback" not in err
    assert not data.exists()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://0.0.0.0:8081", "http://127.0.0.1:8081"),
        ("http://0.0.0.0:8081/api/v3", "http://127.0.0.1:8081/api/v3"),
        ("http://[::]:8081/", "http://[::1]:8081/"),
        ("http://127.0.0.1:8081", "http://127.0.0.1:8081"),
        ("http://192.0.2.7:8081", "http://192.0.2.7:8081"),
        ("http://ghe.example.com/api/v3", "http://ghe.example.com/api/v3"),
    ],
)
def test_loopback_url_replaces_only_the_all_interfaces_address(url: str, expected: str) -> None:
    """A server bound to every interface is shown on loopback; a real address is kept."""
    assert loopback_url(url) == expected


@pytest.mark.slow
def test_github_sandbox_on_all_interfaces_prints_usable_urls_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    """``github-sandbox --host 0.0.0.0`` prints 127.0.0.1 URLs that answer, and exits 0 on TERM."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = process_env(tmp_path, TICKETPROXY_DATA_DIR=str(tmp_path / "data"))
    argv = [str(TICKETPROXY), "github-sandbox", "--host", "0.0.0.0", "--port", str(port)]
    process = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("GitHub sandbox: pages "), line
        pages = line.split()[3]
        assert pages == f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 10
        while True:
            try:
                with urllib.request.urlopen(f"{pages}/", timeout=5) as response:
                    assert response.status == 200
                    assert "acme/agents" in response.read().decode()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
        if process.stderr is not None:
            process.stderr.close()


def test_serve_with_a_short_desk_token_exits_2_naming_it_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A desk token under 16 characters stops ``serve`` with a one-line error, exit 2."""
    env = {
        "TICKETPROXY_GITHUB_TOKEN": "ghp_not_used_before_the_refusal",
        "TICKETPROXY_GITHUB_REPO": "acme/agents",
        "TICKETPROXY_GITHUB_API_URL": "http://127.0.0.1:9/api/v3",
        "TICKETPROXY_DATA_DIR": str(tmp_path / "data"),
        "TICKETPROXY_KEYRING": str(tmp_path / "keyring.json"),
        "TICKETPROXY_DESK_TOKEN": "short",
    }
    assert main(["serve", "--port", "0"], env) == 2
    err = capsys.readouterr().err
    assert "TICKETPROXY_DESK_TOKEN" in err
    assert "Traceback" not in err


def test_embedded_github_port_clash_names_the_port_and_the_variable(
    tmp_path: Path, occupied_ports: tuple[int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    """A taken embedded GitHub port stops serve naming the port and TICKETPROXY_SANDBOX_PORT."""
    port, sandbox_port = occupied_ports
    environ = {
        "TICKETPROXY_DATA_DIR": str(tmp_path / "data"),
        "TICKETPROXY_SANDBOX_PORT": str(sandbox_port),
    }
    assert main(["serve", "--port", str(port)], environ) == 2
    err = capsys.readouterr().err
    assert f"127.0.0.1:{sandbox_port}" in err
    assert "TICKETPROXY_SANDBOX_PORT" in err
    assert "Errno" not in err
