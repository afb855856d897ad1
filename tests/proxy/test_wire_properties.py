"""Property tests: the chat-request parser answers any input with a request or a typed refusal."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.errors import APIError
from proxy.wire.requests import parse_chat_request, parse_json_body, parse_legacy_completion
from ticketing.request import ChatRequest

MODELS = frozenset({"gpt-4o"})

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)

# Bodies that look like chat requests, with every field drawn from plausible and hostile values.
message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "system", "assistant", "tool", "function", "x"])},
    optional={
        "content": json_values,
        "tool_calls": json_values,
        "tool_call_id": json_values,
        "name": json_values,
        "function_call": json_values,
    },
)
OPTIONAL_FIELDS = (
    "tools",
    "functions",
    "tool_choice",
    "function_call",
    "response_format",
    "stop",
    "stream",
    "stream_options",
    "n",
    "logprobs",
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "user",
    "metadata",
    "parallel_tool_calls",
    "modalities",
)
chat_body = st.fixed_dictionaries(
    {"model": st.sampled_from(["gpt-4o", "nope"]) | json_values, "messages": st.lists(message)},
    optional=dict.fromkeys(OPTIONAL_FIELDS, json_values),
)


def outcome(parse: Callable[[], object]) -> object:
    """Return what ``parse`` returned, or the API error it raised (any other error escapes)."""
    try:
        return parse()
    except APIError as error:
        return error


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(body=chat_body | json_values)
def test_any_chat_body_yields_a_request_or_an_api_error(body: Any) -> None:
    """No body makes the parser raise anything but an OpenAI-shaped API error."""
    parsed = outcome(lambda: parse_chat_request(body, client="c", models=MODELS))
    if isinstance(parsed, APIError):
        assert parsed.status in {400, 404}
        assert parsed.message
    else:
        assert isinstance(parsed, ChatRequest)
        assert parsed.model == "gpt-4o"
        assert parsed.messages


@settings(max_examples=200)
@given(body=json_values)
def test_any_legacy_body_yields_a_request_or_an_api_error(body: Any) -> None:
    """The legacy completions parser is just as total."""
    parsed = outcome(lambda: parse_legacy_completion(body, client="c", models=MODELS))
    assert isinstance(parsed, ChatRequest) or (
        isinstance(parsed, APIError) and parsed.status in {400, 404}
    )


@settings(max_examples=300)
@given(raw=st.binary(max_size=200))
def test_any_bytes_are_json_or_a_400(raw: bytes) -> None:
    """Arbitrary bytes either decode as JSON or are refused with invalid_json."""
    parsed = outcome(lambda: parse_json_body(raw))
    if isinstance(parsed, APIError):
        assert parsed.status == 400
        assert parsed.code == "invalid_json"
