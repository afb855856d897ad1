"""smolagents' recorded requests (``smolagents_requests.json``): read, parsed, replayed.

Two consecutive steps of a real ``ToolCallingAgent`` run, recorded from smolagents 1.26 with
``OpenAIServerModel``: step 1 asks, step 2 re-sends step 1's tool call as assistant text
(``Calling tools:\\n[{...}]``) followed by the tool's observation. ``call_only`` was answered
with the call alone, ``text_and_call`` with text beside it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from proxy.wire.requests import parse_chat_request
from ticketing.request import ChatRequest

RECORDED = Path(__file__).with_name("smolagents_requests.json")
RUNS: dict[str, Any] = json.loads(RECORDED.read_text())["runs"]


def capture(run: str, step: int) -> dict[str, Any]:
    """Return step ``step`` (1 or 2) of a recorded run: method, path, headers and body."""
    return dict(RUNS[run]["steps"][step - 1])


def parsed(run: str, step: int, *, client: str = "smolagents") -> ChatRequest:
    """Return a recorded step as the proxy parses it."""
    return parse_chat_request(
        capture(run, step)["body"], client=client, models=frozenset({"gpt-4o"})
    )


def first_answer(run: str) -> str:
    """Return what the editor signs for step 1: the recorded reply, as text and blocks."""
    answer = RUNS[run]["first_answer"]
    blocks = [f"```tool_call\n{json.dumps(call)}\n```" for call in answer["tool_calls"]]
    return "\n\n".join([answer["content"], *blocks] if answer["content"] else blocks)
