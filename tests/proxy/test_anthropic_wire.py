"""The Messages wire format without a network: bodies in, messages and events out."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.errors import APIError, InvalidRequest, PayloadTooLarge, RateLimited, Unauthorized
from proxy.wire.anthropic_messages.objects import anthropic_envelope, error_type, stop_of
from proxy.wire.anthropic_messages.requests import check_version, parse_messages_request
from ticketing.request import ChatRequest, ToolCall

TOOL: dict[str, Any] = {
    "name": "list_folder",
    "input_schema": {"type": "object", "properties": {"folder": {"type": "string"}}},
}


def parse(**body: Any) -> ChatRequest:
    """Parse a Messages body with a question and max_tokens unless given."""
    body.setdefault("max_tokens", 64)
    body.setdefault("messages", [{"role": "user", "content": "Hi"}])
    return parse_messages_request(body, client="c", model="claude-opus-4-8")


def test_system_string_and_text_blocks_read_the_same() -> None:
    """system as a string or as text blocks (Claude Code's, with cache_control) is one message."""
    blocks = [
        {"type": "text", "text": "You are terse."},
        {"type": "text", "text": "Answer in English.", "cache_control": {"type": "ephemeral"}},
    ]
    assert parse(system=blocks).messages[0].content == "You are terse.\nAnswer in English."
    assert parse(system="You are terse.").system_prompt == "You are terse."


def test_tool_choice_any_is_required_and_disable_parallel_is_honoured() -> None:
    """tool_choice any means some tool must be called; disable_parallel_tool_use allows one."""
    chat = parse(tools=[TOOL], tool_choice={"type": "any", "disable_parallel_tool_use": True})
    assert chat.tool_choice == "required"
    assert chat.parallel_tool_calls is False
    named = parse(tools=[TOOL], tool_choice={"type": "tool", "name": "list_folder"})
    assert named.tool_choice == "function:list_folder"
    assert parse(tools=[TOOL], tool_choice={"type": "none"}).tool_choice == "none"


def test_custom_tool_input_schema_becomes_the_functions_parameters() -> None:
    """A custom tool (type absent or custom) is a function whose parameters are input_schema."""
    [spec] = parse(tools=[{**TOOL, "type": "custom", "cache_control": {"type": "ephemeral"}}]).tools
    assert spec.name == "list_folder"
    assert spec.parameters == TOOL["input_schema"]


def test_thinking_sampling_and_context_management_are_accepted_and_ignored() -> None:
    """thinking, temperature, top_p, top_k and context_management change nothing people see."""
    plain = parse()
    tuned = parse(
        thinking={"type": "adaptive"},
        temperature=0.2,
        top_p=0.9,
        top_k=40,
        context_management={"edits": []},
    )
    assert tuned.messages == plain.messages
    assert tuned.key != plain.key  # another request all the same: a retry must match exactly


def test_output_config_format_is_checked_as_a_json_schema() -> None:
    """output_config.format (structured outputs) is the ticket's json_schema response format."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    fmt = parse(
        output_config={"effort": "high", "format": {"type": "json_schema", "schema": schema}}
    )
    assert fmt.response_format is not None
    assert fmt.response_format.schema == schema


def test_system_reminders_follow_the_persons_words() -> None:
    """Claude Code's <system-reminder> block follows the question, which then titles the ticket."""
    reminder = {"type": "text", "text": "<system-reminder>\nToday is Monday.\n</system-reminder>\n"}
    chat = parse(
        messages=[{"role": "user", "content": [reminder, {"type": "text", "text": "Why?"}]}]
    )
    assert chat.messages[-1].content.startswith("Why?\n<system-reminder>")


def test_tool_result_becomes_a_tool_message_before_the_users_text() -> None:
    """A user turn's tool_result blocks are tool messages, then its text is a user message."""
    used = {"type": "tool_use", "id": "toolu_1", "name": "list_folder", "input": {"folder": "."}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt", "is_error": True}
    chat = parse(
        tools=[TOOL],
        messages=[
            {"role": "user", "content": "List it."},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}, used]},
            {"role": "user", "content": [result, {"type": "text", "text": "Thanks."}]},
        ],
    )
    assert [m.role for m in chat.messages] == ["user", "assistant", "tool", "user"]
    assert chat.messages[1].tool_calls == (
        ToolCall(id="toolu_1", name="list_folder", arguments='{"folder": "."}'),
    )
    assert chat.messages[2].tool_call_id == "toolu_1"
    assert chat.messages[2].content == "(the tool failed) a.txt"


def test_metadata_user_id_is_metadata_not_the_agents_name() -> None:
    """metadata.user_id (Claude Code's session) is shown as metadata."""
    assert parse(metadata={"user_id": "u-1"}).metadata == {"user_id": "u-1"}


def test_negative_max_tokens_is_refused() -> None:
    """max_tokens must be a positive integer."""
    with pytest.raises(InvalidRequest) as caught:
        parse(max_tokens=0)
    assert caught.value.param == "max_tokens"


def test_tool_name_refusal_names_the_tool_as_the_client_sent_it() -> None:
    """A bad tool name is named tools[0].name, not chat's tools[0].function.name."""
    with pytest.raises(InvalidRequest) as caught:
        parse(tools=[{**TOOL, "name": "has spaces"}])
    assert caught.value.param == "tools[0].name"


@pytest.mark.parametrize("version", [None, "2023-01-01", "2023-06-01", "2026-10-21"])
def test_published_anthropic_versions_are_accepted(version: str | None) -> None:
    """Every published version, or none, is served."""
    check_version({} if version is None else {"anthropic-version": version})


def test_malformed_anthropic_version_is_refused() -> None:
    """A version that is not a published date is a 400 naming the header."""
    with pytest.raises(InvalidRequest) as caught:
        check_version({"anthropic-version": "latest"})
    assert caught.value.param == "anthropic-version"


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (InvalidRequest("x"), "invalid_request_error"),
        (Unauthorized("x"), "authentication_error"),
        (PayloadTooLarge("x"), "request_too_large"),
        (RateLimited("x", retry_after=1), "rate_limit_error"),
        (APIError("x"), "api_error"),
    ],
)
def test_errors_take_anthropics_types_by_status(error: APIError, kind: str) -> None:
    """Each status maps to Anthropic's error type in its envelope."""
    assert anthropic_envelope(error) == {"type": "error", "error": {"type": kind, "message": "x"}}


def test_overloaded_and_unknown_statuses_map_as_anthropic_does() -> None:
    """529 is overloaded_error, other 5xx api_error, other 4xx invalid_request_error."""
    assert (error_type(529), error_type(502), error_type(405)) == (
        "overloaded_error",
        "api_error",
        "invalid_request_error",
    )


def test_stop_reason_is_tool_use_then_stop_sequence_then_end_turn() -> None:
    """Calls win; else the earliest stop sequence the signed text held; else end_turn."""
    call = ToolCall(id="call_1", name="f", arguments="{}")
    assert stop_of("a END", [call], ["END"]) == ("tool_use", None)
    assert stop_of("a STOP b END", [], ["END", "STOP"]) == ("stop_sequence", "STOP")
    assert stop_of("a", [], ["END"]) == ("end_turn", None)
    assert stop_of(None, [], ["END"]) == ("end_turn", None)
