"""Replay what a real AutoGPT sent, answer each ticket, and check AutoGPT can use the reply."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from openai.types import Model
from openai.types.chat import ChatCompletion

from tests.helpers.stack import CLIENT_KEY, Stack

SAMPLES = Path(__file__).parent.parent / "samples" / "autogpt"
CAPTURES = sorted(SAMPLES.glob("run*/*.json"))
# Headers that belong to the captured connection, not to the request.
_HOP_HEADERS = {"host", "content-length", "authorization", "connection"}

AUTOGPT_STEP: dict[str, Any] = {
    "thoughts": {
        "observations": "The task asks for a file named hello.txt.",
        "text": "Write the file, then finish.",
        "reasoning": "One write is enough.",
        "self_criticism": "None.",
        "plan": ["write hello.txt", "finish"],
        "speak": "Writing hello.txt.",
    },
    "use_tool": {"name": "write_file", "arguments": {"filename": "hello.txt", "contents": "hello"}},
}


def editor_answer(body: dict[str, Any]) -> str:
    """Return what an editor writes for this request, following the ticket's template."""
    if body["model"] == "gpt-3.5-turbo":
        return "hello.txt holds hello."
    if body.get("tools"):
        call = {"name": "write_file", "arguments": AUTOGPT_STEP["use_tool"]["arguments"]}
        thoughts = json.dumps({"thoughts": AUTOGPT_STEP["thoughts"]})
        return f"{thoughts}\n\n```tool_call\n{json.dumps(call)}\n```"
    return json.dumps(AUTOGPT_STEP)


def load(path: Path) -> dict[str, Any]:
    """Load one captured request."""
    return dict(json.loads(path.read_text()))


def replay_headers(capture: dict[str, Any]) -> dict[str, str]:
    """Return the captured headers, with our client key instead of AutoGPT's dummy one."""
    headers = {k: v for k, v in capture["headers"].items() if k.lower() not in _HOP_HEADERS}
    headers["Authorization"] = f"Bearer {CLIENT_KEY}"
    return headers


def autogpt_accepts(body: dict[str, Any], completion: ChatCompletion) -> None:
    """Apply AutoGPT's own parsing rule for the reply to this request."""
    message = completion.choices[0].message
    content = message.content or ""
    if body["model"] == "gpt-3.5-turbo":
        # The history summary: any text.
        assert content.strip()
        return
    reply = json.loads(content)
    if body.get("tools"):
        # OPENAI_FUNCTIONS mode: thoughts in the content, the command as a tool call.
        assert "thoughts" in reply
        offered = {t["function"]["name"] for t in body["tools"]}
        calls = message.tool_calls or []
        assert len(calls) == 1
        assert calls[0].function.name in offered
        assert isinstance(json.loads(calls[0].function.arguments), dict)
        return
    assert set(reply) >= {"thoughts", "use_tool"}
    assert isinstance(reply["use_tool"]["name"], str)
    assert isinstance(reply["use_tool"]["arguments"], dict)


async def send(stack: Stack, capture: dict[str, Any]) -> tuple[int, bytes]:
    """Send a captured request byte for byte (but for our key) and return status and body."""
    url = stack.base_url.removesuffix("/v1") + capture["path"]
    data = None if capture["body"] is None else json.dumps(capture["body"]).encode()
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            capture["method"], url, data=data, headers=replay_headers(capture)
        ) as response,
    ):
        return response.status, await response.read()


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
async def test_captured_autogpt_request_gets_a_reply_autogpt_accepts(
    stack: Stack, path: Path
) -> None:
    """Each captured request is answered through a signed comment and parses as AutoGPT needs."""
    capture = load(path)
    if capture["method"] == "GET":
        status, raw = await send(stack, capture)
        assert status == 200
        listed = json.loads(raw)
        assert {"gpt-4-turbo", "gpt-3.5-turbo"} <= {
            Model.model_validate(m).id for m in listed["data"]
        }
        return
    body = capture["body"]
    pending = asyncio.create_task(send(stack, capture))
    await stack.wait_for_issue(1)
    await stack.answer(1, editor_answer(body))
    status, raw = await asyncio.wait_for(pending, 10)
    assert status == 200
    completion = ChatCompletion.model_validate_json(raw)
    assert completion.model == body["model"]
    autogpt_accepts(body, completion)
