"""The requests a real AutoGPT sent (``tests/samples/autogpt``): read, parsed, replayed, answered.

Each capture is one JSON file per request, with its method, path, headers and body. Pure tests
parse them as the proxy does (:func:`captured_request`); end-to-end tests replay them byte for
byte against a running stack (:func:`send`) and answer as an editor would (:func:`editor_answer`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp

from tests.helpers.stack import CLIENT_KEY, Stack
from ticketing.request import ChatRequest, Message, ToolCall

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "autogpt"
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


def load(path: Path) -> dict[str, Any]:
    """Load one captured request."""
    return dict(json.loads(path.read_text()))


def captured_request(run: str, name: str, *, client: str = "autogpt") -> ChatRequest:
    """Return a captured AutoGPT request as the proxy parses it (roles and text)."""
    body = json.loads((SAMPLES / run / name).read_text())["body"]
    if isinstance(body, str):
        body = json.loads(body)
    messages = []
    for m in body["messages"]:
        calls = tuple(
            ToolCall(
                id=c["id"],
                name=c["function"]["name"],
                arguments=c["function"]["arguments"]
                if isinstance(c["function"]["arguments"], str)
                else json.dumps(c["function"]["arguments"]),
            )
            for c in m.get("tool_calls") or ()
        )
        messages.append(Message(role=m["role"], content=m.get("content") or "", tool_calls=calls))
    return ChatRequest(model=body["model"], messages=tuple(messages), client=client)


def editor_answer(body: dict[str, Any]) -> str:
    """Return what an editor writes for this request, following the ticket's template."""
    if body["model"] == "gpt-3.5-turbo":
        return "hello.txt holds hello."
    if body.get("tools"):
        call = {"name": "write_file", "arguments": AUTOGPT_STEP["use_tool"]["arguments"]}
        thoughts = json.dumps({"thoughts": AUTOGPT_STEP["thoughts"]})
        return f"{thoughts}\n\n```tool_call\n{json.dumps(call)}\n```"
    return json.dumps(AUTOGPT_STEP)


def replay_headers(capture: dict[str, Any]) -> dict[str, str]:
    """Return the captured headers, with our client key instead of AutoGPT's dummy one."""
    headers = {k: v for k, v in capture["headers"].items() if k.lower() not in _HOP_HEADERS}
    headers["Authorization"] = f"Bearer {CLIENT_KEY}"
    return headers


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
