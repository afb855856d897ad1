"""Request bodies in: chat completions and legacy completions, validated into the
``ChatRequest`` a ticket carries.

Reference: https://platform.openai.com/docs/api-reference/chat/create and
https://platform.openai.com/docs/api-reference/completions/create.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from proxy.errors import InvalidRequest, NotFound
from proxy.wire.invalid import require
from proxy.wire.messages import parse_message
from proxy.wire.tools import parse_response_format, parse_tools
from ticketing.json_depth import MAX_JSON_DEPTH, too_deep
from ticketing.request import ChatRequest, request_key


def parse_json_body(raw: bytes) -> Any:
    """Decode a request body, refusing anything not UTF-8 JSON or nested past the limit."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidRequest(
            f"We could not parse the JSON body of your request ({exc}). The body must be a "
            'JSON object, e.g. {"model": "gpt-4o", "messages": [...]}.',
            code="invalid_json",
        ) from None
    except RecursionError:
        # The decoder gives up about a thousand levels down, far past the limit.
        raise nested_too_deep("The JSON body of your request") from None
    if too_deep(body):
        raise nested_too_deep("The JSON body of your request")
    return body


def nested_too_deep(subject: str) -> InvalidRequest:
    """Return the 400 for JSON nested past MAX_JSON_DEPTH levels of arrays and objects."""
    return InvalidRequest(
        f"{subject} nests arrays and objects more than {MAX_JSON_DEPTH} levels deep, which "
        "ticketproxy refuses (real requests and tool schemas stay far below it): flatten it.",
        code="json_too_deep",
    )


def _optional_number(body: Mapping[str, Any], name: str, low: float, high: float) -> None:
    value = body.get(name)
    if value is None:
        return
    require(
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value),
        f"{name} must be a number",
        name,
        "invalid_type",
    )
    require(low <= value <= high, f"{name} must be between {low:g} and {high:g}", name)


def _optional_positive_int(body: Mapping[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    require(
        isinstance(value, int) and not isinstance(value, bool) and value >= 1,
        f"{name} must be a positive integer",
        name,
    )
    assert isinstance(value, int)
    return value


def _refuse_what_people_cannot_do(body: Mapping[str, Any]) -> None:
    n = body.get("n")
    if n is not None and n != 1:
        raise InvalidRequest(
            "n must be 1: one team of people writes one answer", param="n", code="unsupported_value"
        )
    if body.get("logprobs") or body.get("top_logprobs"):
        raise InvalidRequest(
            "logprobs are not available: the answers are written by people",
            param="logprobs",
            code="unsupported_parameter",
        )
    modalities = body.get("modalities")
    if modalities is not None and modalities != ["text"]:
        raise InvalidRequest(
            "only text output is available: people answer in text",
            param="modalities",
            code="unsupported_value",
        )


def _stop(body: Mapping[str, Any]) -> tuple[str, ...]:
    value = body.get("stop")
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value else ()
    require(
        isinstance(value, list) and len(value) <= 4 and all(isinstance(v, str) for v in value),
        "stop must be a string or an array of up to 4 strings",
        "stop",
    )
    return tuple(v for v in value if v)


def stream_settings(body: Mapping[str, Any]) -> tuple[bool, bool]:
    """Return whether to stream, and whether to send a usage chunk at the end."""
    stream = body.get("stream", False)
    require(stream is None or isinstance(stream, bool), "stream must be a boolean", "stream")
    options = body.get("stream_options")
    if options is None:
        return bool(stream), False
    require(isinstance(options, dict), "stream_options must be an object", "stream_options")
    require(bool(stream), "stream_options is only allowed with stream=true", "stream_options")
    include = options.get("include_usage", False)
    require(isinstance(include, bool), "include_usage must be a boolean", "stream_options")
    return True, bool(include)


def parse_chat_request(body: Any, *, client: str, models: frozenset[str]) -> ChatRequest:
    """Validate a chat completion body and return the request a ticket carries."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.", code="invalid_type")
    model = body.get("model")
    require(isinstance(model, str) and model != "", "you must provide a model", "model", "missing")
    assert isinstance(model, str)
    if model not in models:
        raise NotFound(
            f"The model `{model}` does not exist on this ticketproxy; use one of: "
            f"{', '.join(sorted(models))}",
            param="model",
            code="model_not_found",
        )
    messages = body.get("messages")
    require(isinstance(messages, list), "messages must be an array", "messages", "missing")
    assert isinstance(messages, list)
    require(len(messages) > 0, "messages must not be empty", "messages", "empty_array")
    parsed = tuple(parse_message(message, index) for index, message in enumerate(messages))
    _refuse_what_people_cannot_do(body)
    stream_settings(body)
    tools, tool_choice, legacy = parse_tools(body)
    parallel = body.get("parallel_tool_calls", True)
    require(
        isinstance(parallel, bool), "parallel_tool_calls must be a boolean", "parallel_tool_calls"
    )
    _optional_number(body, "temperature", 0, 2)
    _optional_number(body, "top_p", 0, 1)
    _optional_number(body, "presence_penalty", -2, 2)
    _optional_number(body, "frequency_penalty", -2, 2)
    max_tokens = _optional_positive_int(body, "max_completion_tokens")
    max_tokens = _optional_positive_int(body, "max_tokens") or max_tokens
    user = body.get("user")
    require(user is None or isinstance(user, str), "user must be a string", "user", "invalid_type")
    metadata = body.get("metadata")
    metadata = {} if metadata is None else metadata
    require(
        isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values()),
        "metadata must be an object of strings",
        "metadata",
        "invalid_type",
    )
    return ChatRequest(
        model=model,
        messages=parsed,
        client=client,
        user=user,
        metadata=dict(metadata),
        max_tokens=max_tokens,
        key=request_key(client, body),
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        legacy_functions=legacy,
        response_format=parse_response_format(body),
        stop=_stop(body),
    )


def parse_legacy_completion(body: Any, *, client: str, models: frozenset[str]) -> ChatRequest:
    """Validate a legacy ``/v1/completions`` body and return it as a one-message chat request."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.", code="invalid_type")
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    require(
        isinstance(prompt, str),
        "prompt must be a string (arrays of several prompts or of tokens are not supported)",
        "prompt",
        "invalid_type",
    )
    for name in ("suffix", "logprobs"):
        if body.get(name) is not None:
            raise InvalidRequest(
                f"{name} is not available: the answers are written by people",
                param=name,
                code="unsupported_parameter",
            )
    if body.get("echo"):
        raise InvalidRequest("echo is not supported", param="echo", code="unsupported_parameter")
    best_of = body.get("best_of")
    require(best_of in (None, 1), "best_of must be 1", "best_of", "unsupported_value")
    chat_body = {k: v for k, v in body.items() if k not in {"prompt", "echo", "best_of", "suffix"}}
    chat_body["messages"] = [{"role": "user", "content": prompt}]
    parsed = parse_chat_request(chat_body, client=client, models=models)
    # A distinct key space: the same text sent to both endpoints are two requests.
    return replace(parsed, key=request_key(client, {"/v1/completions": body}))
