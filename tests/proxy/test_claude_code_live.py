"""Claude Code itself against a running stack: opt in with TICKETPROXY_CLAUDE_CODE=<its binary>.

Install it anywhere (``npm install @anthropic-ai/claude-code`` in a temporary folder) and
point the variable at ``node_modules/.bin/claude``. Without it the test is skipped: Claude
Code is not a dependency of the suite, and its recorded requests are replayed through the
anthropic SDK in ``test_claude_code_replay.py`` on every run.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.helpers.agent_runs import wait_for_step
from tests.helpers.anthropic_clients import root_url, tool_call
from tests.helpers.stack import CLIENT_KEY, REPO, Stack

CLAUDE = os.environ.get("TICKETPROXY_CLAUDE_CODE")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CLAUDE, reason="set TICKETPROXY_CLAUDE_CODE to Claude Code's binary"),
]


async def test_claude_code_print_mode_runs_a_tool_and_answers_from_people(
    stack: Stack, tmp_path: Path
) -> None:
    """`claude -p` asks, runs the Bash call people sign, and prints their next answer."""
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("hello\n")
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "ANTHROPIC_BASE_URL": root_url(stack),
        "ANTHROPIC_API_KEY": CLIENT_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    assert CLAUDE is not None
    claude = await asyncio.create_subprocess_exec(
        CLAUDE,
        "-p",
        "What files are in this folder?",
        "--allowedTools",
        "Bash(ls)",
        cwd=tmp_path / "work",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    issue = await stack.wait_for_issue(1, within=60)
    assert issue.title.endswith("What files are in this folder?")
    await stack.answer(1, "Listing.\n\n" + tool_call("Bash", {"command": "ls"}))
    await wait_for_step(stack, 2, within=60)
    answer = "The folder holds notes.txt."
    await stack.comment(1, stack.signed(answer, number=1, ticket=f"{REPO}#1/2"))
    printed, _ = await asyncio.wait_for(claude.communicate(), 60)
    assert claude.returncode == 0
    assert printed.decode().strip() == answer
    assert [i.number for i in await stack.issues()] == [1]
