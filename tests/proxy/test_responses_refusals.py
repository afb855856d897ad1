"""Bad ``POST /v1/responses`` bodies: each a 400 in OpenAI's envelope, and no ticket."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from tests.helpers.stack import Stack


async def refused(stack: Stack, **body: Any) -> dict[str, Any]:
    """Send ``body`` with the openai client, expect a 400, check no issue opened, return it."""
    client = stack.openai()
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model="gpt-4o", **body)
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["type"] == "invalid_request_error"
    assert await stack.issues() == []
    return error


async def test_built_in_web_search_tool_is_refused_saying_why(stack: Stack) -> None:
    """A hosted tool people cannot run is a 400 that says to offer a function instead."""
    error = await refused(stack, input="news?", tools=[{"type": "web_search"}])
    assert error["param"] == "tools[0].type"
    assert error["code"] == "unsupported_tool"
    assert "function tool" in error["message"]


async def test_built_in_tool_forced_by_tool_choice_is_refused(stack: Stack) -> None:
    """tool_choice naming a hosted tool (file_search) is refused as the tool itself is."""
    error = await refused(stack, input="find it", tool_choice={"type": "file_search"})
    assert error["param"] == "tool_choice.type"


async def test_unknown_input_item_type_is_refused(stack: Stack) -> None:
    """An item type ticketproxy cannot show (a web search call) is named in the 400."""
    error = await refused(stack, input=[{"type": "web_search_call", "id": "ws_1"}])
    assert error["param"] == "input[0].type"
    assert "web_search_call" in error["message"]


async def test_function_call_output_for_a_call_never_issued_is_refused(stack: Stack) -> None:
    """A function_call_output whose call_id no function_call in input issued is a 400."""
    error = await refused(
        stack,
        input=[
            {"role": "user", "content": "go"},
            {"type": "function_call_output", "call_id": "call_forged", "output": "done"},
        ],
    )
    assert error["param"] == "input[1].call_id"
    assert error["code"] == "unknown_call_id"


async def test_image_input_is_refused_naming_the_part(stack: Stack) -> None:
    """An input_image part is a 400: people are shown text only."""
    image = {"type": "input_image", "image_url": "https://example.com/a.png"}
    error = await refused(stack, input=[{"role": "user", "content": [image]}])
    assert error["param"] == "input[0].content[0]"


async def test_conversation_is_refused_pointing_at_previous_response_id(stack: Stack) -> None:
    """conversation is refused, saying to chain with previous_response_id or send it all."""
    error = await refused(stack, input="and then?", conversation="conv_abc")
    assert error["param"] == "conversation"
    assert "previous_response_id" in error["message"]


async def test_background_response_is_refused(stack: Stack) -> None:
    """background=true is refused: the wait happens on the open connection."""
    error = await refused(stack, input="later", background=True)
    assert error["param"] == "background"


async def test_missing_input_is_refused(stack: Stack) -> None:
    """A body without input is a 400 naming input."""
    error = await refused(stack, instructions="Be brief.")
    assert error["param"] == "input"


async def test_tool_choice_naming_a_function_not_offered_is_refused(stack: Stack) -> None:
    """tool_choice naming a function that is not offered is a 400."""
    error = await refused(
        stack, input="go", tool_choice={"type": "function", "name": "missing_tool"}
    )
    assert error["param"] == "tool_choice"
