"""Tests for proxy.wire: OpenAI chat requests in, completions that the openai SDK accepts out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from proxy.errors import InvalidRequest, NotFound
from proxy.wire.requests import parse_chat_request, parse_json_body
from proxy.wire.responses import render_completion
from ticketing.request import ToolCall, request_key

SAMPLES = Path(__file__).parent.parent / "samples" / "autogpt"
MODELS = frozenset({"gpt-4", "gpt-4-turbo", "gpt-4o", "gpt-3.5-turbo"})
CLIENT = "key-0123456789ab"
HELLO = [{"role": "user", "content": "hello"}]


def sample_body(path: Path) -> dict[str, Any]:
    """Return the JSON body AutoGPT sent in one captured request."""
    body = json.loads(path.read_text(encoding="utf-8"))["body"]
    assert isinstance(body, dict)
    return body


def parse(body: Any) -> Any:
    """Parse a body as the standard client against the standard models."""
    return parse_chat_request(body, client=CLIENT, models=MODELS)


# --- accepting what real clients send ------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    sorted((SAMPLES / "run1_default").glob("*_POST_*.json")),
    ids=lambda p: p.name,
)
def test_captured_autogpt_requests_are_accepted(path: Path) -> None:
    """Every chat request AutoGPT sent in its default mode parses, keeping every message."""
    body = sample_body(path)
    request = parse(body)
    assert request.model == body["model"]
    assert [m.role for m in request.messages] == [m["role"] for m in body["messages"]]
    assert [m.content for m in request.messages] == [m["content"] for m in body["messages"]]
    assert request.client == CLIENT
    assert len(request.key) == 64
    if "max_tokens" in body:
        assert request.max_tokens == body["max_tokens"]


def test_tool_call_history_with_object_arguments_is_stringified() -> None:
    """AutoGPT echoes ``arguments`` as an object; it is kept as its canonical JSON string."""
    body = sample_body(SAMPLES / "run2_functions" / "006_POST_v1_chat_completions.json")
    request = parse(body)
    assistant = next(m for m in request.messages if m.role == "assistant")
    assert assistant.tool_calls == (
        ToolCall(
            id="call_cb407f1d61ad40268c3059c6",
            name="write_file",
            arguments='{"contents": "hello from stub", "filename": "hello.txt"}',
        ),
    )
    tool = next(m for m in request.messages if m.role == "tool")
    assert tool.tool_call_id == "call_cb407f1d61ad40268c3059c6"


def test_tool_call_history_with_string_arguments_is_kept_verbatim() -> None:
    """The usual string form of ``arguments`` is passed through unchanged."""
    arguments = '{"command":  "ls"}'
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": "list"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "execute_shell", "arguments": arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "README.md"},
        ],
    }
    request = parse(body)
    assert request.messages[1].content == ""
    assert request.messages[1].tool_calls == (
        ToolCall(id="call_1", name="execute_shell", arguments=arguments),
    )


def test_content_parts_are_joined_into_text() -> None:
    """Text parts (``text`` and ``input_text``) are joined line by line; refusals kept."""
    body = {
        "model": "gpt-4o",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "first"},
                    {"type": "input_text", "text": "second"},
                ],
            },
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "I cannot."}]},
        ],
    }
    request = parse(body)
    assert request.messages[0].content == "first\nsecond"
    assert request.messages[1].content == "I cannot."


def test_max_completion_tokens_is_read_when_max_tokens_is_absent() -> None:
    """The newer ``max_completion_tokens`` bounds the answer like ``max_tokens``."""
    assert parse({"model": "gpt-4o", "messages": HELLO, "max_completion_tokens": 9}).max_tokens == 9


def test_non_json_body_is_refused_as_invalid_json() -> None:
    """A body that is not UTF-8 JSON is a 400 with code invalid_json."""
    for raw in (b"{not json", b"\xff\xfe"):
        with pytest.raises(InvalidRequest) as caught:
            parse_json_body(raw)
        assert caught.value.code == "invalid_json"
        assert caught.value.status == 400


# --- refusing malformed requests, naming the field -----------------------------------------


def _with(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "gpt-4o", "messages": HELLO}
    body.update(fields)
    return body


def _message(**fields: Any) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": [fields]}


@pytest.mark.parametrize(
    ("body", "param"),
    [
        pytest.param({"messages": HELLO}, "model", id="model-missing"),
        pytest.param(_with(model=""), "model", id="model-empty"),
        pytest.param(_with(model=4), "model", id="model-not-string"),
        pytest.param({"model": "gpt-4o"}, "messages", id="messages-missing"),
        pytest.param(_with(messages="hello"), "messages", id="messages-not-array"),
        pytest.param(_with(messages=[]), "messages", id="messages-empty"),
        pytest.param(_with(messages=["hello"]), "messages[0]", id="message-not-object"),
        pytest.param(_message(content="hi"), "messages[0].role", id="role-missing"),
        pytest.param(_message(role="robot", content="hi"), "messages[0].role", id="role-unknown"),
        pytest.param(_message(role="user"), "messages[0].content", id="user-content-null"),
        pytest.param(_message(role="user", content=7), "messages[0].content", id="content-number"),
        pytest.param(
            _message(role="user", content=["hi"]), "messages[0].content[0]", id="part-not-object"
        ),
        pytest.param(
            _message(role="user", content=[{"type": "text"}]),
            "messages[0].content[0]",
            id="text-part-without-text",
        ),
        pytest.param(
            _message(role="user", content=[{"type": "image_url", "image_url": {"url": "x"}}]),
            "messages[0].content[0]",
            id="image-part",
        ),
        pytest.param(_message(role="user", content="hi", name=3), "messages[0].name", id="name"),
        pytest.param(
            _message(role="tool", content="ok"), "messages[0].tool_call_id", id="tool-without-id"
        ),
        pytest.param(
            _message(role="assistant", content="x", tool_calls={"id": "c"}),
            "messages[0].tool_calls",
            id="tool-calls-not-array",
        ),
        pytest.param(
            _message(role="assistant", content="x", tool_calls=[{"id": "c"}]),
            "messages[0].tool_calls[0]",
            id="tool-call-without-function",
        ),
        pytest.param(
            _message(role="assistant", content="x", tool_calls=[{"function": {"name": ""}}]),
            "messages[0].tool_calls[0]",
            id="tool-call-without-name",
        ),
        pytest.param(_with(temperature=2.5), "temperature", id="temperature-too-high"),
        pytest.param(_with(temperature="hot"), "temperature", id="temperature-not-number"),
        pytest.param(_with(temperature=True), "temperature", id="temperature-bool"),
        pytest.param(_with(top_p=1.5), "top_p", id="top-p"),
        pytest.param(_with(presence_penalty=-3), "presence_penalty", id="presence-penalty"),
        pytest.param(_with(frequency_penalty=9), "frequency_penalty", id="frequency-penalty"),
        pytest.param(_with(max_tokens=0), "max_tokens", id="max-tokens-zero"),
        pytest.param(_with(max_tokens=1.5), "max_tokens", id="max-tokens-float"),
        pytest.param(_with(max_tokens=True), "max_tokens", id="max-tokens-bool"),
        pytest.param(
            _with(max_completion_tokens=-1), "max_completion_tokens", id="max-completion-tokens"
        ),
        pytest.param(_with(user=5), "user", id="user"),
        pytest.param(_with(metadata={"a": 1}), "metadata", id="metadata-values"),
        pytest.param(_with(metadata=["a"]), "metadata", id="metadata-not-object"),
        pytest.param(_with(n=2), "n", id="n"),
    ],
)
def test_malformed_field_is_refused_naming_its_param(body: dict[str, Any], param: str) -> None:
    """Each malformed field is a 400 invalid_request_error whose ``param`` names it."""
    with pytest.raises(InvalidRequest) as caught:
        parse(body)
    assert caught.value.param == param
    assert caught.value.status == 400
    assert caught.value.envelope()["error"]["param"] == param
    assert caught.value.envelope()["error"]["type"] == "invalid_request_error"


def test_body_that_is_not_an_object_is_refused() -> None:
    """A JSON array, string or null at the top level is a 400."""
    bodies: list[Any] = [[], "hello", None]
    for body in bodies:
        with pytest.raises(InvalidRequest) as caught:
            parse(body)
        assert caught.value.code == "invalid_type"


def test_unknown_model_is_a_404_naming_the_models_on_offer() -> None:
    """A model this proxy does not route is model_not_found, like OpenAI's own 404."""
    with pytest.raises(NotFound) as caught:
        parse(_with(model="gpt-5-ultra"))
    assert caught.value.status == 404
    assert caught.value.param == "model"
    assert caught.value.code == "model_not_found"
    assert "gpt-4o" in caught.value.message


# --- the request key -----------------------------------------------------------------------


def test_request_key_ignores_key_order_and_whitespace() -> None:
    """Two encodings of the same JSON value map to the same ticket."""
    compact = b'{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.5}'
    spaced = (
        b'{\n  "temperature": 0.5,\n  "messages": [ { "content": "hi", "role": "user" } ],\n'
        b'  "model": "gpt-4o"\n}'
    )
    first = parse(parse_json_body(compact))
    second = parse(parse_json_body(spaced))
    assert first.key == second.key


def test_request_key_ignores_stream() -> None:
    """Flipping ``stream`` (a retry without streaming) re-attaches to the same ticket."""
    body = {"model": "gpt-4o", "messages": HELLO}
    plain = request_key(CLIENT, body)
    assert request_key(CLIENT, {**body, "stream": True}) == plain
    assert request_key(CLIENT, {**body, "stream": False}) == plain
    assert parse({**body, "stream": False}).key == plain


def test_request_key_changes_with_anything_that_changes_the_answer() -> None:
    """Another client, model, message or temperature is another ticket."""
    body = {"model": "gpt-4o", "messages": HELLO}
    key = request_key(CLIENT, body)
    others = {
        request_key("key-another00000", body),
        request_key(CLIENT, {**body, "model": "gpt-4"}),
        request_key(CLIENT, {**body, "messages": [{"role": "user", "content": "hello!"}]}),
        request_key(CLIENT, {**body, "temperature": 0.1}),
    }
    assert key not in others
    assert len(others) == 4


def test_captured_retry_maps_to_the_same_key() -> None:
    """The same captured AutoGPT body, re-encoded by another client, gives the same key."""
    body = sample_body(SAMPLES / "run1_default" / "004_POST_v1_chat_completions.json")
    reencoded = json.loads(json.dumps(body, indent=4, ensure_ascii=True))
    assert parse(body).key == parse(reencoded).key


# --- rendering -----------------------------------------------------------------------------


def test_rendered_completion_is_a_valid_openai_chat_completion() -> None:
    """The openai SDK's own model accepts the completion, with the answer as the message."""
    rendered = render_completion(
        completion_id="chatcmpl-abc1",
        created=1_800_000_000,
        model="gpt-4o",
        content="Done: hello.txt now holds hello.",
        prompt_token_count=42,
    )
    completion = ChatCompletion.model_validate(rendered)
    assert completion.id == "chatcmpl-abc1"
    assert completion.object == "chat.completion"
    assert completion.model == "gpt-4o"
    assert completion.choices[0].message.role == "assistant"
    assert completion.choices[0].message.content == "Done: hello.txt now holds hello."
    assert completion.choices[0].finish_reason == "stop"


def test_rendered_usage_totals_add_up() -> None:
    """total_tokens is prompt plus completion, and a non-empty answer costs tokens."""
    rendered = render_completion(
        completion_id="chatcmpl-abc1",
        created=1_800_000_000,
        model="gpt-4o",
        content="x" * 41,
        prompt_token_count=42,
    )
    usage = ChatCompletion.model_validate(rendered).usage
    assert usage is not None
    assert usage.prompt_tokens == 42
    assert usage.completion_tokens == 11
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_rendered_completion_survives_a_json_round_trip_with_leading_spaces() -> None:
    """Heartbeat spaces before the JSON (what the client really reads) still validate."""
    rendered = render_completion(
        completion_id="chatcmpl-abc1",
        created=1_800_000_000,
        model="gpt-4",
        content="ünïcödé ✓",
        prompt_token_count=3,
    )
    wire = b"   " + json.dumps(rendered, ensure_ascii=False).encode()
    completion = ChatCompletion.model_validate(json.loads(wire))
    assert completion.choices[0].message.content == "ünïcödé ✓"
