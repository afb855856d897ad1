"""OpenAI's wire format: chat requests in, completions and model lists out.

References: https://platform.openai.com/docs/api-reference/chat/create and
https://platform.openai.com/docs/api-reference/models/list.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from ticketing.request import ChatRequest, Message, ToolCall, request_key

from .errors import InvalidRequest, NotFound

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
# A fixed "created" for models: they are ids of ticket routes, not trained artefacts.
MODEL_CREATED = 1_700_000_000
OWNED_BY = "ticketproxy"


def _require(condition: bool, message: str, param: str, code: str = "invalid_value") -> None:
    if not condition:
        raise InvalidRequest(message, param=param, code=code)


def parse_json_body(raw: bytes) -> Any:
    """Decode a request body, rejecting anything that is not UTF-8 JSON."""
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidRequest(
            f"We could not parse the JSON body of your request ({exc}). The body must be a "
            'JSON object, e.g. {"model": "gpt-4o", "messages": [...]}.',
            code="invalid_json",
        ) from None


def _text_content(content: Any, param: str, *, nullable: bool) -> str:
    if content is None:
        _require(nullable, "content must not be null for this role", param, "invalid_type")
        return ""
    if isinstance(content, str):
        return content
    _require(isinstance(content, list), "content must be a string or an array of parts", param)
    texts: list[str] = []
    for index, part in enumerate(content):
        where = f"{param}[{index}]"
        _require(isinstance(part, dict), "each content part must be an object", where)
        kind = part.get("type")
        if kind in {"text", "input_text"}:
            _require(isinstance(part.get("text"), str), "a text part needs a string 'text'", where)
            texts.append(part["text"])
        elif kind == "refusal":
            texts.append(str(part.get("refusal", "")))
        else:
            raise InvalidRequest(
                f"content parts of type {kind!r} are not supported: ticketproxy shows people "
                "text only; send text parts",
                param=where,
                code="unsupported_content",
            )
    return "\n".join(texts)


def _tool_calls(value: Any, param: str) -> tuple[ToolCall, ...]:
    if value is None:
        return ()
    _require(isinstance(value, list), "tool_calls must be an array", param)
    calls: list[ToolCall] = []
    for index, call in enumerate(value):
        where = f"{param}[{index}]"
        _require(isinstance(call, dict), "each tool call must be an object", where)
        function = call.get("function")
        _require(isinstance(function, dict), "a tool call needs a 'function' object", where)
        name = function.get("name")
        _require(isinstance(name, str) and name != "", "a tool call needs a function name", where)
        arguments = function.get("arguments", "")
        # AutoGPT echoes arguments back as a JSON object, not a string: accept both.
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        calls.append(ToolCall(id=str(call.get("id", "")), name=name, arguments=arguments))
    return tuple(calls)


def _message(value: Any, index: int) -> Message:
    param = f"messages[{index}]"
    _require(isinstance(value, dict), "each message must be an object", param, "invalid_type")
    role = value.get("role")
    _require(
        isinstance(role, str) and role in ROLES,
        f"role must be one of {', '.join(sorted(ROLES))}",
        f"{param}.role",
    )
    tool_calls = _tool_calls(value.get("tool_calls"), f"{param}.tool_calls")
    if value.get("function_call") is not None:
        tool_calls += _tool_calls(
            [{"id": "", "function": value["function_call"]}], f"{param}.function_call"
        )
    content = _text_content(
        value.get("content"), f"{param}.content", nullable=role == "assistant" and bool(tool_calls)
    )
    name = value.get("name")
    _require(name is None or isinstance(name, str), "name must be a string", f"{param}.name")
    tool_call_id = value.get("tool_call_id")
    if role == "tool":
        _require(
            isinstance(tool_call_id, str),
            "a tool message needs tool_call_id",
            f"{param}.tool_call_id",
        )
    return Message(
        role=role,
        content=content,
        name=name,
        tool_calls=tool_calls,
        tool_call_id=tool_call_id if isinstance(tool_call_id, str) else None,
    )


def _optional_number(body: Mapping[str, Any], name: str, low: float, high: float) -> None:
    value = body.get(name)
    if value is None:
        return
    _require(
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value),
        f"{name} must be a number",
        name,
        "invalid_type",
    )
    _require(low <= value <= high, f"{name} must be between {low:g} and {high:g}", name)


def _optional_positive_int(body: Mapping[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    _require(
        isinstance(value, int) and not isinstance(value, bool) and value >= 1,
        f"{name} must be a positive integer",
        name,
    )
    assert isinstance(value, int)
    return value


def _refuse_until_supported(body: Mapping[str, Any]) -> None:
    if body.get("stream") is True:
        raise InvalidRequest(
            "stream=true is not supported yet by this ticketproxy; send stream=false",
            param="stream",
            code="unsupported_parameter",
        )
    for name in ("tools", "functions"):
        if body.get(name):
            raise InvalidRequest(
                f"{name} are not supported yet by this ticketproxy; send the request without "
                f"{name}",
                param=name,
                code="unsupported_parameter",
            )
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


def parse_chat_request(body: Any, *, client: str, models: frozenset[str]) -> ChatRequest:
    """Validate a chat completion body and return the request a ticket carries."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.", code="invalid_type")
    model = body.get("model")
    _require(isinstance(model, str) and model != "", "you must provide a model", "model", "missing")
    assert isinstance(model, str)
    if model not in models:
        raise NotFound(
            f"The model `{model}` does not exist on this ticketproxy; use one of: "
            f"{', '.join(sorted(models))}",
            param="model",
            code="model_not_found",
        )
    messages = body.get("messages")
    _require(isinstance(messages, list), "messages must be an array", "messages", "missing")
    assert isinstance(messages, list)
    _require(len(messages) > 0, "messages must not be empty", "messages", "empty_array")
    parsed = tuple(_message(message, index) for index, message in enumerate(messages))
    _refuse_until_supported(body)
    _optional_number(body, "temperature", 0, 2)
    _optional_number(body, "top_p", 0, 1)
    _optional_number(body, "presence_penalty", -2, 2)
    _optional_number(body, "frequency_penalty", -2, 2)
    max_tokens = _optional_positive_int(body, "max_completion_tokens")
    max_tokens = _optional_positive_int(body, "max_tokens") or max_tokens
    user = body.get("user")
    _require(user is None or isinstance(user, str), "user must be a string", "user", "invalid_type")
    metadata = body.get("metadata") or {}
    _require(
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
    )


def count_tokens(text: str) -> int:
    """Estimate tokens the way OpenAI's rule of thumb does: about four characters each."""
    return math.ceil(len(text) / 4) if text else 0


def prompt_tokens(request: ChatRequest) -> int:
    """Estimate the prompt's tokens: each message's text plus a small per-message overhead."""
    return sum(count_tokens(m.content) + 4 for m in request.messages) + 3


def render_completion(
    *, completion_id: str, created: int, model: str, content: str, prompt_token_count: int
) -> dict[str, Any]:
    """Return a ``chat.completion`` object with one assistant choice."""
    completion_tokens = count_tokens(content)
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_token_count,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_token_count + completion_tokens,
        },
        "system_fingerprint": "ticketproxy",
    }


def render_model(model: str) -> dict[str, Any]:
    """Return one ``model`` object."""
    return {"id": model, "object": "model", "created": MODEL_CREATED, "owned_by": OWNED_BY}


def render_model_list(models: tuple[str, ...]) -> dict[str, Any]:
    """Return the ``list`` of models ``GET /v1/models`` answers."""
    return {"object": "list", "data": [render_model(m) for m in models]}
