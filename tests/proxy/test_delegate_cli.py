"""``ticketproxy delegate``: an editor signs and posts the split of a ticket into sub-questions."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from github import Auth, Github

from auth.delegation import Delegation
from auth.keyring import Keyring, add_key_to_keyring
from auth.keys import generate_signing_key, write_signing_key
from auth.roles import Act, Role
from auth.verify import Accepted, verify_comment
from embedded_github import RunningSandbox, SandboxConfig
from proxy.cli import main

REPO = "acme/agents"


def token_of(config: SandboxConfig, login: str) -> str:
    """Return a sandbox user's token."""
    return next(user.token for user in config.users if user.login == login)


async def bot_issue_comments(
    sandbox: RunningSandbox, config: SandboxConfig
) -> tuple[int, list[Any]]:
    """Open an issue as the bot; return its number and a reader of its comments."""
    github = Github(base_url=sandbox.api_url, auth=Auth.Token(token_of(config, "ticketproxy-bot")))
    repo = await asyncio.to_thread(github.get_repo, REPO)
    issue = await asyncio.to_thread(repo.create_issue, title="Which command?")
    return issue.number, [issue]


@pytest.fixture
def keyring_path(tmp_path: Path) -> Path:
    """Return the keyring: alice and bob, both editors."""
    path = tmp_path / "keyring.json"
    for login, user_id in (("bob", 1002),):
        add_key_to_keyring(
            path, generate_signing_key(login=login), roles=(Role.EDITOR,), user_id=user_id
        )
    return path


@pytest.fixture
def alice_key(tmp_path: Path, keyring_path: Path) -> Path:
    """Write alice's private key (editor, id 1001) and trust it."""
    key = generate_signing_key(login="alice")
    path = tmp_path / "alice.key"
    write_signing_key(path, key)
    add_key_to_keyring(keyring_path, key, roles=(Role.EDITOR,), user_id=1001)
    return path


async def test_delegate_posts_a_signed_delegation_of_the_issues_ticket(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    alice_key: Path,
    keyring_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each ``--ask`` is a sub-question; a ``--to`` after it addresses that one."""
    number, [issue] = await bot_issue_comments(github_sandbox, sandbox_config)
    url = f"{github_sandbox.web_url}/{REPO}/issues/{number}"
    argv = ["delegate", url, "--key", str(alice_key)]
    argv += ["--ask", "Is the index used?", "--to", "@bob", "--ask", "Anything else?"]
    env = {"GITHUB_TOKEN": token_of(sandbox_config, "alice")}
    assert await asyncio.to_thread(main, argv, env) == 0
    [comment] = await asyncio.to_thread(lambda: list(issue.get_comments()))
    login, body = comment.user.login, comment.body
    verdict = verify_comment(
        body,
        author_login=login,
        author_id=1001,
        ticket=f"{REPO}#{number}",
        keyring=Keyring.load(keyring_path),
        now=datetime.now(UTC),
        is_jti_used=lambda _jti: False,
        acts=frozenset({Act.DELEGATE}),
    )
    assert isinstance(verdict, Accepted), verdict
    assert verdict.delegations == (
        Delegation("Is the index used?", to="bob"),
        Delegation("Anything else?"),
    )
    assert "1. Is the index used? (for @bob)" in body
    assert "signed delegation posted" in capsys.readouterr().out


@pytest.mark.parametrize(
    "flags",
    [
        ["--to", "bob"],
        ["--ask", "x", "--to", "bob", "--to", "carol"],
        ["--ask", "x", "--to", "a b"],
    ],
)
def test_delegate_with_a_to_not_after_its_own_ask_is_refused(
    flags: list[str], alice_key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``--to`` with no sub-question of its own to address, or no login, is refused."""
    url = f"https://github.com/{REPO}/issues/1"
    with pytest.raises(SystemExit) as exited:
        main(["delegate", url, "--key", str(alice_key), *flags], {})
    assert exited.value.code == 2
    assert "--to" in capsys.readouterr().err


def test_delegate_without_a_sub_question_is_refused(
    alice_key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing to delegate: told before anything is signed or posted."""
    url = f"https://github.com/{REPO}/issues/1"
    code = main(["delegate", url, "--key", str(alice_key), "--token", "ghp_unused"], {})
    assert code == 2
    assert "at least one sub-question" in capsys.readouterr().err


def test_sign_act_delegate_points_to_the_delegate_command(
    alice_key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``sign --act delegate`` has no sub-questions to sign: it says which command has."""
    text = tmp_path / "t.md"
    text.write_text("x", encoding="utf-8")
    code = main(
        ["sign", "--ticket", f"{REPO}#1", "--key", str(alice_key), "--act", "delegate", str(text)],
        {},
    )
    assert code == 2
    assert "ticketproxy delegate" in capsys.readouterr().err
