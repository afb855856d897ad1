"""Claude Code's recorded requests replayed through the anthropic SDK: a tool turn, its follow-up.

``tests/helpers/claude_code_requests.json`` holds what Claude Code 2.1.197 sent (headers and
bodies) for ``claude -p "What files are in this folder?"``: a streamed turn offering its 24
tools, and after running the Bash tool_use it was given, the follow-up with its tool_result.
"""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

from tests.helpers.agent_runs import wait_for_step
from tests.helpers.anthropic_clients import async_client, tool_call
from tests.helpers.stack import CLIENT_KEY, REPO, Stack

RECORDED = json.loads((Path(__file__).parents[1] / "helpers/claude_code_requests.json").read_text())
# What the first turn was answered with when it was recorded.
LISTING = {"command": "ls", "description": "List files in the folder"}
# Headers Claude Code sends that the SDK would not: its version, its betas, its x-api-key.
SENT_HEADERS = ("anthropic-version", "anthropic-beta", "x-app", "User-Agent")


def replayed(turn: dict[str, Any]) -> dict[str, Any]:
    """Return the keyword arguments that make the SDK send a recorded turn's request."""
    body = dict(turn["body"])
    del body["stream"]
    headers = {name: turn["headers"][name] for name in SENT_HEADERS}
    return {
        **{k: body.pop(k) for k in list(body) if k != "context_management"},
        "extra_headers": {**headers, "x-api-key": CLIENT_KEY},
        "extra_query": {"beta": "true"},
        "extra_body": body,
    }


def with_tool_use_id(turn: dict[str, Any], recorded: str, released: str) -> dict[str, Any]:
    """Return a turn whose tool_use and tool_result carry the id ticketproxy released."""
    text = json.dumps(turn).replace(json.dumps(recorded), json.dumps(released))
    return dict(json.loads(text))


async def test_claude_code_tool_turn_and_follow_up_land_on_one_issue(stack: Stack) -> None:
    """Claude Code's Bash turn is answered with a tool_use, and its tool_result is step 2."""
    first, follow_up = RECORDED["turns"]
    assert first["headers"]["anthropic-version"] == "2023-06-01"
    async with async_client(stack) as client:

        async def ask(turn: dict[str, Any]) -> Any:
            async with client.messages.stream(**replayed(turn)) as stream:
                return await stream.get_final_message()

        pending = asyncio.create_task(ask(copy.deepcopy(first)))
        issue = await stack.wait_for_issue(1)
        await stack.answer(1, "I will list the folder.\n\n" + tool_call("Bash", LISTING))
        message = await asyncio.wait_for(pending, 10)
        assert message.stop_reason == "tool_use"
        text, use = message.content
        assert text.text == "I will list the folder."
        assert (use.name, use.input) == ("Bash", LISTING)
        second = with_tool_use_id(follow_up, "toolu_rec1", use.id)
        pending = asyncio.create_task(ask(second))
        await wait_for_step(stack, 2)
        await stack.comment(
            1, stack.signed("The folder holds notes.txt.", number=1, ticket=f"{REPO}#1/2")
        )
        reply = await asyncio.wait_for(pending, 10)
    assert reply.content[0].text == "The folder holds notes.txt."
    assert reply.stop_reason == "end_turn"
    assert [i.number for i in await stack.issues()] == [1]
    # The person's words lead the title, not Claude Code's <system-reminder> context.
    assert issue.title == "What files are in this folder?"
    assert "| Bash |" in issue.body
    assert r"session\_id" in issue.body  # metadata.user_id, shown escaped as metadata
