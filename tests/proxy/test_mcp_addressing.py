"""``ask_team``'s ``to``: checked against the keyring; the ticket pings only whom it names."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from auth.keyring import Keyring, add_key_to_keyring
from auth.keys import generate_signing_key
from auth.roles import Role
from proxy.mcp.addressing import Addressee, resolve_addressee
from tests.helpers.mcp_runs import answer_when_open, run_sdk_client
from tests.helpers.stack import Stack

_MENTION = re.compile(r"(?<![\w`])@([A-Za-z0-9-]+)")
# GitHub links no mention inside a fenced code block, where the agent's text is shown.
_FENCED = re.compile(r"^(`{3,})[^\n]*\n.*?^\1", re.MULTILINE | re.DOTALL)


async def _refused(stack: Stack, to: str) -> str:
    report = await run_sdk_client(stack, [["ask_team", {"question": "Ship?", "to": to}]])
    result = report["calls"][0]
    assert result["isError"] is True
    assert await stack.issues() == []
    text: str = result["content"][0]["text"]
    return text


@pytest.mark.slow
async def test_to_a_login_not_in_the_keyring_is_a_tool_error_naming_it(stack: Stack) -> None:
    """A `to` naming nobody with a key is refused as the tool's error, and no ticket opens."""
    text = await _refused(stack, "zelda")
    assert "'zelda'" in text
    assert "keyring" in text


@pytest.mark.slow
async def test_to_a_team_not_in_the_keyring_is_a_tool_error_naming_it(stack: Stack) -> None:
    """A `to` naming a team the keyring does not have is refused; no ticket opens."""
    text = await _refused(stack, "platform-team")
    assert "'platform-team'" in text


async def _mentions_when_asked_of(stack: Stack, to: str) -> tuple[set[str], str]:
    arguments = {"question": "Is @alice around? Ship?", "to": to}
    call = asyncio.create_task(run_sdk_client(stack, [["ask_team", arguments]]))
    editor = asyncio.create_task(answer_when_open(stack, "Yes."))
    report = await call
    await editor
    assert report["calls"][0]["structuredContent"]["answer"] == "Yes."
    (issue,) = await stack.issues()
    return set(_MENTION.findall(_FENCED.sub("", issue.body))), issue.body


@pytest.mark.slow
async def test_to_a_keyring_login_is_shown_and_pings_only_them(stack: Stack) -> None:
    """`to: bob` puts bob in the header and mentions him alone, not the agent's @alice."""
    mentions, body = await _mentions_when_asked_of(stack, "@Bob")
    assert mentions == {"bob"}
    assert "| Asked of | @bob |" in body


@pytest.mark.slow
async def test_to_a_team_pings_its_members_only(stack: Stack) -> None:
    """`to: reviewers` mentions the keyring's reviewers (bob, mallory) and nobody else."""
    mentions, body = await _mentions_when_asked_of(stack, "reviewers")
    assert mentions == {"bob", "mallory"}
    assert "Asked of: the reviewer team" in body


def test_resolving_to_reads_logins_case_blind_and_teams_by_role(tmp_path: Path) -> None:
    """A login matches whatever its case; a role's name, singular or plural, is its team."""
    path = tmp_path / "keyring.json"
    for login, roles in (("alice", [Role.EDITOR]), ("bob", [Role.EDITOR, Role.REVIEWER])):
        add_key_to_keyring(path, generate_signing_key(login=login), roles=roles)
    keyring = Keyring.load(path)
    assert resolve_addressee("ALICE", keyring) == Addressee("alice", ("alice",))
    assert resolve_addressee("editors", keyring) == Addressee("the editor team", ("alice", "bob"))
    assert resolve_addressee("reviewer", keyring) == Addressee("the reviewer team", ("bob",))
    assert isinstance(resolve_addressee("nobody", keyring), str)
