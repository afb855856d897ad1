"""``ticketproxy answer`` on a ticket whose answer was already delivered: refused unless forced."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from auth.keys import write_signing_key
from proxy.cli import main
from tests.helpers.stack import REPO, Stack

PROMPT = [{"role": "user", "content": "Which port does staging use?"}]


async def _delivered_ticket(stack: Stack) -> tuple[str, Path]:
    """Ask, answer as alice and deliver; return the issue URL and alice's key file."""
    pending = asyncio.ensure_future(
        stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    issue = await stack.wait_for_issue(1)
    await stack.answer(1, "8443")
    assert (await asyncio.wait_for(pending, 10)).choices[0].message.content == "8443"
    await stack.desk.followups.drain()  # the delivered notice and the close are on GitHub
    key = stack.tmp / "alice.key"
    write_signing_key(key, stack.keys["alice"])
    return str(issue.html_url), key


async def test_answer_on_a_delivered_closed_ticket_is_refused_saying_when(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second answer to a delivered ticket exits 2, saying it was delivered and when."""
    url, key = await _delivered_ticket(stack)
    before = len(await stack.comments(1))
    answer_file = stack.tmp / "late.txt"
    answer_file.write_text("8080\n", encoding="utf-8")
    argv = ["answer", url, "--key", str(key), "--file", str(answer_file)]
    env = {"GITHUB_TOKEN": stack.token("alice")}
    assert await asyncio.to_thread(main, argv, env) == 2
    err = capsys.readouterr().err
    assert f"{REPO}#1 was already answered" in err
    assert "delivered to the agent at" in err
    assert "closed" in err
    assert "--force" in err
    assert len(await stack.comments(1)) == before


async def test_answer_with_force_posts_on_a_delivered_ticket(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--force`` posts the answer anyway: the editor asked for it knowing it was delivered."""
    url, key = await _delivered_ticket(stack)
    before = len(await stack.comments(1))
    answer_file = stack.tmp / "late.txt"
    answer_file.write_text("8080\n", encoding="utf-8")
    argv = ["answer", url, "--key", str(key), "--file", str(answer_file), "--force"]
    env = {"GITHUB_TOKEN": stack.token("alice")}
    assert await asyncio.to_thread(main, argv, env) == 0
    assert "signed answer posted" in capsys.readouterr().out
    assert len(await stack.comments(1)) == before + 1


def test_answer_step_help_says_it_never_guesses(capsys: pytest.CaptureFixture[str]) -> None:
    """``answer --help`` no longer claims --step defaults to the newest step."""
    with pytest.raises(SystemExit):
        main(["answer", "--help"], {})
    out = " ".join(capsys.readouterr().out.split())
    assert "the newest" not in out
    assert "never guessed" in out
