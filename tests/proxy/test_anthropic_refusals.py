"""Bad ``POST /v1/messages`` requests: each refused in Anthropic's envelope, and no ticket."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from tests.helpers.anthropic_clients import LIST_FOLDER, async_client
from tests.helpers.raw_requests import raw
from tests.helpers.stack import CLIENT_KEY, Stack

HEADERS = {
    "x-api-key": CLIENT_KEY,
    "anthropic-version": "2023-06-01",
    "Content-Type": "application/json",
}
ASK: list[Any] = [{"role": "user", "content": "List the folder."}]
USED: dict[str, Any] = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": "toolu_1", "name": "list_folder", "input": {}}],
}


async def refused(stack: Stack, **body: Any) -> str:
    """Send ``body`` with the anthropic SDK, expect a 400, check no issue opened; return why."""
    body.setdefault("max_tokens", 256)
    body.setdefault("messages", ASK)
    async with async_client(stack) as client:
        with pytest.raises(anthropic.BadRequestError) as caught:
            await client.messages.create(model="claude-opus-4-8", **body)
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error"
    assert await stack.issues() == []
    return str(error["error"]["message"])


async def post(stack: Stack, body: Any, headers: dict[str, str] = HEADERS) -> tuple[int, Any]:
    """Send a raw ``POST /v1/messages`` and return its status and JSON body."""
    status, _, answer = await raw(
        stack, "POST", "/v1/messages", data=json.dumps(body).encode(), headers=headers
    )
    return status, answer


async def test_missing_max_tokens_is_refused(stack: Stack) -> None:
    """A body without max_tokens is a 400 naming it, as Anthropic requires it."""
    status, error = await post(stack, {"model": "claude-opus-4-8", "messages": ASK})
    assert status == 400
    assert error == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "max_tokens: max_tokens is required"},
    }
    assert await stack.issues() == []


async def test_tool_result_without_its_tool_use_is_refused(stack: Stack) -> None:
    """A tool_result whose tool_use_id no earlier assistant turn issued is a 400."""
    result = {"type": "tool_result", "tool_use_id": "toolu_forged", "content": "done"}
    why = await refused(stack, messages=[*ASK, {"role": "user", "content": [result]}])
    assert why.startswith("messages[1].content[0].tool_use_id:")
    assert "toolu_forged" in why


async def test_tool_result_for_an_older_turns_tool_use_is_refused(stack: Stack) -> None:
    """A tool_result answers the assistant turn just before it, not one further back."""
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "done"}
    conversation = [
        *ASK,
        USED,
        {"role": "user", "content": [result]},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": [result]},
    ]
    why = await refused(stack, messages=conversation, tools=[LIST_FOLDER])
    assert why.startswith("messages[4].content[0].tool_use_id:")


async def test_unknown_content_block_type_is_refused(stack: Stack) -> None:
    """A block type the front does not know is named in the 400."""
    block = {"type": "hologram", "data": "..."}
    why = await refused(stack, messages=[{"role": "user", "content": [block]}])
    assert why.startswith("messages[0].content[0].type:")
    assert "hologram" in why


async def test_image_block_is_refused_saying_people_see_text_only(stack: Stack) -> None:
    """An image block is a 400: the people answering are shown text only."""
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    why = await refused(stack, messages=[{"role": "user", "content": [image]}])
    assert why.startswith("messages[0].content[0]:")
    assert "text only" in why


async def test_document_in_a_tool_result_is_refused(stack: Stack) -> None:
    """A document returned by a tool is refused as a document sent by the user is."""
    document = {
        "type": "document",
        "source": {"type": "text", "data": "x", "media_type": "text/plain"},
    }
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": [document]}
    why = await refused(
        stack, messages=[*ASK, USED, {"role": "user", "content": [result]}], tools=[LIST_FOLDER]
    )
    assert why.startswith("messages[2].content[0].content[0]:")


async def test_server_web_search_tool_is_refused_saying_why(stack: Stack) -> None:
    """A server tool runs on Anthropic's servers: the 400 says to offer a custom tool."""
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    why = await refused(stack, tools=[search])
    assert why.startswith("tools[0].type:")
    assert "custom tool" in why


async def test_server_bash_tool_is_refused(stack: Stack) -> None:
    """Anthropic's bash tool (a typed tool) is refused like any other server tool."""
    why = await refused(stack, tools=[{"type": "bash_20250124", "name": "bash"}])
    assert "bash_20250124" in why


async def test_custom_tool_without_input_schema_is_refused(stack: Stack) -> None:
    """A custom tool needs input_schema: its arguments are checked against it before release."""
    why = await refused(stack, tools=[{"name": "list_folder", "description": "List."}])
    assert why.startswith("tools[0].input_schema:")


async def test_tool_choice_naming_a_tool_not_offered_is_refused(stack: Stack) -> None:
    """tool_choice of type tool must name one of the tools."""
    why = await refused(stack, tools=[LIST_FOLDER], tool_choice={"type": "tool", "name": "rm"})
    assert why.startswith("tool_choice:")


async def test_unknown_tool_choice_type_is_refused(stack: Stack) -> None:
    """A tool_choice type other than auto, any, tool or none is a 400."""
    why = await refused(stack, tools=[LIST_FOLDER], tool_choice={"type": "required"})
    assert why.startswith("tool_choice.type:")


async def test_mcp_servers_in_the_request_are_refused(stack: Stack) -> None:
    """MCP servers Anthropic would call for the agent are refused, saying what to do instead."""
    server = {"type": "url", "url": "https://mcp.example.com/sse", "name": "example"}
    why = await refused(stack, extra_body={"mcp_servers": [server]})
    assert why.startswith("mcp_servers:")


async def test_unpublished_anthropic_version_is_refused(stack: Stack) -> None:
    """An anthropic-version that is no published version is a 400 naming the known ones."""
    status, error = await post(
        stack,
        {"model": "claude-opus-4-8", "max_tokens": 64, "messages": ASK},
        headers={**HEADERS, "anthropic-version": "2099-01-01"},
    )
    assert status == 400
    assert error["error"]["message"].startswith("anthropic-version:")
    assert "2023-06-01" in error["error"]["message"]
    assert await stack.issues() == []


async def test_wrong_x_api_key_is_an_authentication_error(stack: Stack) -> None:
    """A wrong x-api-key is a 401 in Anthropic's envelope, saying where the key goes."""
    status, error = await post(
        stack,
        {"model": "claude-opus-4-8", "max_tokens": 64, "messages": ASK},
        headers={**HEADERS, "x-api-key": "sk-ant-wrong"},
    )
    assert status == 401
    assert error["error"]["type"] == "authentication_error"
    assert "x-api-key" in error["error"]["message"]
    assert await stack.issues() == []


async def test_count_tokens_without_a_key_is_an_authentication_error(stack: Stack) -> None:
    """count_tokens sits under /v1/messages: the same key and the same envelope apply."""
    async with async_client(stack, api_key="sk-ant-wrong") as client:
        with pytest.raises(anthropic.AuthenticationError) as caught:
            await client.messages.count_tokens(model="claude-opus-4-8", messages=ASK)
    assert caught.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]


async def test_unknown_path_under_messages_is_not_found_in_anthropics_envelope(
    stack: Stack,
) -> None:
    """A path under /v1/messages that is not served is a 404 not_found_error."""
    status, _, error = await raw(stack, "POST", "/v1/messages/batches", data=b"{}", headers=HEADERS)
    assert status == 404
    assert error["error"]["type"] == "not_found_error"
