"""The ``ticketproxy`` command refuses bad arguments with exit 2 and a sentence saying why."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from github import Auth, Github

from auth.keyring import add_key_to_keyring
from auth.keys import generate_signing_key, write_signing_key
from auth.roles import Role
from embedded_github import RunningSandbox, SandboxConfig
from proxy.cli import main
from ticketing.render.markers import step_marker

REPO = "acme/agents"
# Nothing listens on port 9 (discard): a refusal that reached the network would fail loudly.
NOWHERE = f"http://127.0.0.1:9/{REPO}/issues/1"


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
    add_key_to_keyring(keyring_path, key, roles=(Role.EDITOR, Role.REVIEWER), user_id=1001)
    return path


@pytest.fixture
def answer_file(tmp_path: Path) -> Path:
    """Write an answer text to a file."""
    path = tmp_path / "answer.md"
    path.write_text("Run `make test`.\n", encoding="utf-8")
    return path


def token_of(config: SandboxConfig, login: str) -> str:
    """Return a sandbox user's token."""
    return next(user.token for user in config.users if user.login == login)


def github_as(sandbox: RunningSandbox, config: SandboxConfig, login: str) -> Github:
    """Return a PyGithub client for the sandbox acting as ``login``."""
    return Github(
        base_url=sandbox.api_url,
        auth=Auth.Token(token_of(config, login)),
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )


@pytest.mark.parametrize("step", ["two", "0", "1.5"])
def test_answer_with_a_step_that_is_not_a_number_is_a_usage_error(
    alice_key: Path, answer_file: Path, step: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--step two`` is refused by argparse (exit 2) naming the value, before any GitHub call."""
    argv = ["answer", NOWHERE, "--key", str(alice_key), "--file", str(answer_file)]
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--token", "ghp_unused", "--step", step], {})
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --step: {step!r} is not a step number (1, 2, 3 …)" in err
    assert err.startswith("usage: ticketproxy answer")


@pytest.mark.parametrize(
    ("author", "body"),
    [
        ("alice", "Looks like the build folder again."),
        ("alice", f"Step 2 of this run, honest.\n\n{step_marker('ab12', 2)}"),
        ("ticketproxy-bot", "A note from the bot that is not a step."),
    ],
    ids=["ordinary-comment", "step-marker-forged-by-alice", "bots-non-step-comment"],
)
async def test_answer_to_a_comment_url_that_is_not_a_step_comment_exits_2(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    alice_key: Path,
    answer_file: Path,
    author: str,
    body: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An issue URL whose #issuecomment- is not one of the bot's step comments posts nothing."""

    def prepare() -> tuple[int, int]:
        with github_as(github_sandbox, sandbox_config, "ticketproxy-bot") as bot:
            number = bot.get_repo(REPO).create_issue(title="Which command?").number
        with github_as(github_sandbox, sandbox_config, author) as github:
            comment = github.get_repo(REPO).get_issue(number).create_comment(body)
        return int(number), int(comment.id)

    def comment_count(number: int) -> int:
        with github_as(github_sandbox, sandbox_config, "ticketproxy-bot") as bot:
            return bot.get_repo(REPO).get_issue(number).get_comments().totalCount

    number, comment_id = await asyncio.to_thread(prepare)
    issue_url = f"{github_sandbox.web_url}/{REPO}/issues/{number}"
    url = f"{issue_url}#issuecomment-{comment_id}"
    argv = ["answer", url, "--key", str(alice_key), "--file", str(answer_file)]
    env = {"GITHUB_TOKEN": token_of(sandbox_config, "alice")}
    assert await asyncio.to_thread(main, argv, env) == 2
    assert capsys.readouterr().err == (
        f"ticketproxy: error: {url} does not point at one of the bot's step comments on "
        f"{REPO}#{number}: pass the issue's URL with --step N\n"
    )
    assert await asyncio.to_thread(comment_count, number) == 1


@pytest.mark.parametrize("act", ["approve", "reject"])
def test_approve_without_a_token_exits_2_naming_github_token(
    alice_key: Path, act: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """With neither --token nor GITHUB_TOKEN a review says which to give, before signing."""
    argv = [act, NOWHERE, "--key", str(alice_key), "--yes"]
    if act == "reject":
        argv += ["--reason", "not needed"]
    assert main(argv, {"TICKETPROXY_GITHUB_TOKEN": "ghp_the_servers_not_yours"}) == 2
    assert capsys.readouterr().err == (
        "ticketproxy: error: no GitHub token: pass --token or set GITHUB_TOKEN to your own token\n"
    )


@pytest.mark.parametrize("reason", ["", "   ", "\n\t"], ids=["empty", "spaces", "whitespace"])
def test_reject_with_an_empty_reason_exits_2(
    alice_key: Path, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rejection must say why: a blank --reason is exit 2 before GitHub is asked anything."""
    argv = ["reject", NOWHERE, "--key", str(alice_key), "--yes", "--token", "ghp_unused"]
    assert main([*argv, "--reason", reason], {}) == 2
    assert capsys.readouterr().err == (
        "ticketproxy: error: --reason is empty: say why the answer must not be released\n"
    )


@pytest.mark.parametrize(
    "repo",
    ["acme", "acme/agents/issues", "https://github.com/acme/agents", "acme/ agents", "/agents"],
)
def test_audit_with_a_repo_that_is_not_owner_slash_repo_exits_2(
    alice_key: Path, keyring_path: Path, repo: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``audit --repo`` takes OWNER/REPO only; anything else is exit 2 naming the value."""
    argv = ["audit", "--repo", repo, "--keyring", str(keyring_path)]
    assert main([*argv, "--api-url", "http://127.0.0.1:9/api/v3"], {}) == 2
    captured = capsys.readouterr()
    assert captured.err == f"ticketproxy: error: --repo {repo!r} is not OWNER/REPO\n"
    assert captured.out == ""


@pytest.mark.parametrize("user_id", ["0", "-1001"])
def test_keygen_with_a_non_positive_user_id_exits_2(
    tmp_path: Path, keyring_path: Path, user_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GitHub account id is positive: 0 or a negative id is exit 2 and writes no key."""
    out = tmp_path / "carol.key"
    argv = ["keygen", "--login", "carol", "--keyring", str(keyring_path), "--out", str(out)]
    assert main([*argv, f"--user-id={user_id}"], {}) == 2
    assert capsys.readouterr().err == (
        f"ticketproxy: error: --user-id {user_id} is not a GitHub account id (a positive number)\n"
    )
    assert not out.exists()
    assert not keyring_path.exists()
