"""Requests for the rendering tests to render, with a fixed key, fixed times and a fixed repo."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.helpers.autogpt_samples import SAMPLES
from ticketing.render.ticket import RenderedTicket, render_ticket
from ticketing.request import ChatRequest, Message, ToolSpec, request_key

SAMPLE = SAMPLES / "run1_default" / "004_POST_v1_chat_completions.json"
CREATED = datetime(2026, 11, 21, 20, 34, 4, tzinfo=UTC)
DEADLINE = CREATED + timedelta(hours=4)
KEY = "ab" * 32


def tools_from_body(body: dict[str, Any]) -> tuple[ToolSpec, ...]:
    """Return the tools of a wire body as ToolSpecs."""
    return tuple(
        ToolSpec(
            name=t["function"]["name"],
            description=t["function"].get("description", ""),
            parameters=t["function"].get("parameters", {}),
        )
        for t in body.get("tools", [])
    )


def request_from_body(body: dict[str, Any], **fields: Any) -> ChatRequest:
    """Build a ChatRequest from a wire body, keeping only each message's role and content."""
    messages = tuple(Message(role=m["role"], content=m["content"]) for m in body["messages"])
    return ChatRequest(
        model=body["model"],
        messages=messages,
        key=request_key("test-client", body),
        **fields,
    )


def chat(*messages: Message, **fields: Any) -> ChatRequest:
    """Build a ChatRequest for gpt-4-turbo from messages, with a fixed key."""
    return ChatRequest(model="gpt-4-turbo", messages=messages, key=KEY, **fields)


def render(request: ChatRequest) -> RenderedTicket:
    """Render a request with fixed times and repo."""
    return render_ticket(
        request, request_id="req_42", created=CREATED, deadline=DEADLINE, repo="acme/tickets"
    )


def many_tools(count: int) -> tuple[ToolSpec, ...]:
    """Return ``count`` tools whose rows are long after escaping."""
    properties = {f"parameter_number_{i}": {"type": "string"} for i in range(20)}
    return tuple(
        ToolSpec(
            name=f"tool_{i:03d}_" + "n" * 50,
            description="a." * 200,
            parameters={"type": "object", "properties": properties},
        )
        for i in range(count)
    )
