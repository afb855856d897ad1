"""The official anthropic SDK pointed at a running stack, and tool calls as people sign them."""

from __future__ import annotations

import json
from typing import Any

import anthropic

from tests.helpers.stack import CLIENT_KEY, Stack

# A custom tool as the anthropic SDK offers it.
LIST_FOLDER: dict[str, Any] = {
    "name": "list_folder",
    "description": "List the files in a folder.",
    "input_schema": {
        "type": "object",
        "properties": {"folder": {"type": "string"}},
        "required": ["folder"],
    },
}


def root_url(stack: Stack) -> str:
    """Return the proxy's root: the anthropic SDK adds ``/v1/messages`` itself."""
    return stack.base_url.removesuffix("/v1")


def async_client(stack: Stack, **options: Any) -> anthropic.AsyncAnthropic:
    """Return an async anthropic client for the stack (close it with ``async with``)."""
    settings: dict[str, Any] = {"api_key": CLIENT_KEY, "max_retries": 0, "timeout": 30.0}
    settings.update(options)
    return anthropic.AsyncAnthropic(base_url=root_url(stack), **settings)


def sync_client(stack: Stack, **options: Any) -> anthropic.Anthropic:
    """Return a sync anthropic client for the stack (close it with ``with``)."""
    settings: dict[str, Any] = {"api_key": CLIENT_KEY, "max_retries": 0, "timeout": 30.0}
    settings.update(options)
    return anthropic.Anthropic(base_url=root_url(stack), **settings)


def tool_call(name: str, arguments: dict[str, Any]) -> str:
    """Return a fenced tool_call block as an editor writes it."""
    return "```tool_call\n" + json.dumps({"name": name, "arguments": arguments}) + "\n```"
