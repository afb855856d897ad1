"""MCP's wire and tools, pure: messages in, requests for tickets and results out."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from proxy.mcp.tools import (
    APPROVAL_TOOL,
    ToolCall,
    answer_result,
    approval_result,
    read_tool_call,
    tool_request,
)
from proxy.mcp.wire import (
    LATEST_VERSION,
    InvalidParams,
    InvalidRequest,
    ParseError,
    agent_of_session,
    negotiate_version,
    new_session_id,
    read_message,
    sse_event,
)
from ticketing.desk import Outcome
from ticketing.desk.outcome import encode_release
from ticketing.release import Release
from ticketing.request import ToolCall as Call
from ticketing.store.model import StoredAnswer, Ticket, TicketState

NOW = datetime(2026, 11, 26, tzinfo=UTC)


def _outcome(release: Release) -> Outcome:
    ticket = Ticket(
        1, "k", "req", TicketState.ANSWERED, 7, "https://gh/acme/agents/issues/7", NOW, NOW
    )
    answer = StoredAnswer(
        ticket_id=1,
        comment_id=9,
        comment_url="https://gh/c/9",
        text="signed",
        signer="alice",
        kid="kid",
        jti="jti",
        digest="ab" * 32,
        accepted_at=NOW,
        delivered_at=None,
        release=encode_release(release),
    )
    return Outcome(ticket=ticket, answer=answer)


def test_a_body_that_is_not_json_is_a_parse_error() -> None:
    """A body that is not JSON is JSON-RPC's parse error."""
    with pytest.raises(ParseError):
        read_message(b"{not json")


def test_a_message_without_jsonrpc_is_an_invalid_request() -> None:
    """A message that does not say jsonrpc 2.0 is refused as an invalid request."""
    with pytest.raises(InvalidRequest):
        read_message(b'{"id": 1, "method": "ping"}')


def test_a_notification_and_a_request_are_told_apart_by_their_id() -> None:
    """A message without an id is a notification, one with an id a request."""
    assert not read_message(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}').is_request
    assert read_message(b'{"jsonrpc": "2.0", "id": 0, "method": "ping"}').is_request


def test_an_unknown_protocol_version_gets_the_newest_served() -> None:
    """A client asking for a version not served is offered the newest one."""
    assert negotiate_version({"protocolVersion": "1999-01-01"}) == LATEST_VERSION
    assert negotiate_version({"protocolVersion": "2025-06-18"}) == "2025-06-18"


def test_the_session_id_carries_the_clients_name_and_nothing_unprintable() -> None:
    """The session id gives back the client's name; a forged unprintable one is not shown."""
    session = new_session_id({"clientInfo": {"name": "claude-code"}})
    assert agent_of_session(session) == "claude-code"
    assert agent_of_session("x." + "\u0007bell".encode().hex()) == "MCP client"
    assert agent_of_session(None) == "MCP client"


def test_an_sse_event_carries_one_json_message() -> None:
    """An SSE event is a message event whose data is one JSON line."""
    event = sse_event({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert event.startswith(b"event: message\ndata: {")
    assert event.endswith(b"\n\n")


def test_unknown_tool_is_a_protocol_error() -> None:
    """A call of a tool this server does not offer is JSON-RPC's invalid params."""
    with pytest.raises(InvalidParams, match="Unknown tool"):
        read_tool_call({"name": "delete_repo", "arguments": {}})


def test_arguments_not_matching_the_input_schema_are_problems() -> None:
    """Arguments the input schema refuses come back as problems, each named."""
    problems = read_tool_call({"name": "ask_team", "arguments": {"question": 3, "extra": 1}})
    assert isinstance(problems, list)
    assert any("question" in p for p in problems)


def test_answer_schema_that_is_not_a_valid_json_schema_is_a_problem() -> None:
    """An answer_schema that is not a JSON Schema is refused before any ticket."""
    problems = read_tool_call(
        {"name": "ask_team", "arguments": {"question": "Q?", "answer_schema": {"type": 12}}}
    )
    assert isinstance(problems, list)
    assert "not a valid JSON Schema" in problems[0]


def test_identical_calls_share_a_request_key_and_other_clients_do_not() -> None:
    """The same call from the same client has one key; another client's differs."""
    call = ToolCall("ask_team", {"question": "Ship it?"})
    first = tool_request(call, client="key-a", agent="claude-code")
    again = tool_request(call, client="key-a", agent="other name")
    other = tool_request(call, client="key-b", agent="claude-code")
    assert first.key == again.key != other.key
    assert first.metadata == {"agent": "claude-code"}


def test_answer_schema_becomes_a_json_schema_response_format() -> None:
    """With answer_schema, the ticket asks for a json_schema answer, checked before release."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    chat = tool_request(
        ToolCall("ask_team", {"question": "Ship?", "answer_schema": schema}),
        client="c",
        agent="a",
    )
    assert chat.response_format is not None
    assert chat.response_format.type == "json_schema"
    assert dict(chat.response_format.schema or {}) == schema


def test_approval_offers_one_call_pinned_to_the_action_and_command() -> None:
    """request_approval's ticket offers run_command, whose arguments must be the asked ones."""
    chat = tool_request(
        ToolCall("request_approval", {"action": "Deploy", "command": "make deploy"}),
        client="c",
        agent="a",
    )
    (spec,) = chat.tools
    assert spec.name == APPROVAL_TOOL
    assert spec.parameters["properties"]["command"] == {"const": "make deploy"}


def test_a_structured_answer_is_the_answer_object_and_names_signer_and_digest() -> None:
    """With a schema, structuredContent is the answer object; the text names the provenance."""
    result = answer_result(_outcome(Release('{"ok": true}', (), "stop")), schema=True)
    assert result["structuredContent"] == {"ok": True}
    assert "alice" in result["content"][0]["text"]
    assert result["_meta"]["ticketproxy"]["digest"] == "sha256:" + "ab" * 32


def test_a_plain_text_answer_to_an_approval_is_a_refusal_not_an_error() -> None:
    """A plain-text answer refuses: approved false, its text the reason, not isError."""
    result = approval_result(_outcome(Release("Not on a Friday.", (), "stop")), ["bob"])
    assert result["isError"] is False
    assert result["structuredContent"]["approved"] is False
    assert result["structuredContent"]["reason"] == "Not on a Friday."
    assert result["structuredContent"]["reviewers"] == []


def test_the_approval_call_approves_with_its_reviewers() -> None:
    """An answer with the run_command call is approved, naming its reviewers."""
    call = Call("call_1", APPROVAL_TOOL, json.dumps({"action": "Deploy"}))
    result = approval_result(_outcome(Release(None, (call,), "tool_calls")), ["bob"])
    assert result["structuredContent"]["approved"] is True
    assert result["structuredContent"]["reviewers"] == ["bob"]
