"""The Responses API's wire format, pure: bodies into ChatRequests, answers into events."""

from __future__ import annotations

from proxy.wire.responses_api.objects import (
    ResponseEcho,
    render_answer_events,
    render_completed,
)
from proxy.wire.responses_api.requests import parse_responses_request
from ticketing.request import ResponseFormat, ToolCall

TOOL = {
    "type": "function",
    "name": "list_folder",
    "parameters": {"type": "object", "properties": {"folder": {"type": "string"}}},
    "strict": True,
}


def test_items_become_the_conversation_a_chat_ticket_shows() -> None:
    """Instructions lead as system; an assistant's text and its calls are one turn."""
    chat = parse_responses_request(
        {
            "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "List it."}]},
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Looking."}],
                },
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "list_folder",
                    "arguments": '{"folder": "."}',
                },
                {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
            ],
            "tools": [TOOL],
        },
        client="k",
        model="gpt-4o",
    )
    assert [m.role for m in chat.messages] == ["system", "user", "assistant", "tool"]
    assert chat.messages[2].content == "Looking."
    assert chat.messages[2].tool_calls == (ToolCall("c1", "list_folder", '{"folder": "."}'),)
    assert chat.messages[3].tool_call_id == "c1"
    assert chat.tools[0].name == "list_folder"
    assert chat.tools[0].strict


def test_text_format_json_schema_becomes_the_checked_response_format() -> None:
    """text.format's flat json_schema is the response_format release checks."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    chat = parse_responses_request(
        {"input": "x", "text": {"format": {"type": "json_schema", "name": "c", "schema": schema}}},
        client="k",
        model="m",
    )
    assert chat.response_format == ResponseFormat(type="json_schema", name="c", schema=schema)


def test_a_retry_that_flips_stream_has_the_same_request_key() -> None:
    """stream does not change the answer, so a retry with it flipped re-attaches."""
    body = {"input": "x", "model": "m"}
    plain = parse_responses_request(body, client="k", model="m")
    streamed = parse_responses_request({**body, "stream": True}, client="k", model="m")
    assert plain.key == streamed.key


def test_reasoning_and_max_output_tokens_are_taken_and_reasoning_ignored() -> None:
    """reasoning is accepted and ignored; max_output_tokens bounds the answer."""
    chat = parse_responses_request(
        {"input": "x", "reasoning": {"effort": "high"}, "max_output_tokens": 50},
        client="k",
        model="m",
    )
    assert chat.max_tokens == 50


def test_empty_answer_is_one_empty_message() -> None:
    """An answer with neither text nor calls still has a message an agent can read."""
    echo = ResponseEcho(model="m", input_tokens=3)
    body = render_completed(response_id="resp_1", created=1, echo=echo, content="", tool_calls=())
    assert body["output"][0]["content"][0]["text"] == ""


def test_stream_events_number_on_from_the_preamble() -> None:
    """The answer's events continue the preamble's sequence numbers (0 and 1)."""
    echo = ResponseEcho(model="m", input_tokens=3)
    events = render_answer_events(
        response_id="resp_1",
        created=1,
        echo=echo,
        content="hi",
        tool_calls=(ToolCall("c1", "f", "{}"),),
    )
    assert [e["sequence_number"] for e in events] == list(range(2, 2 + len(events)))
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["output"][1]["call_id"] == "c1"
