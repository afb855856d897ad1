"""OpenAI's wire format: chat requests in, completions and model lists out.

References: https://platform.openai.com/docs/api-reference/chat/create and
https://platform.openai.com/docs/api-reference/models/list.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ticketing.request import (
    ChatRequest,
    Message,
    ResponseFormat,
    ToolCall,
    ToolSpec,
    request_key,
)

from .errors import InvalidRequest, NotFound

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
# A fixed "created" for models: they are ids of ticket routes, not trained artefacts.
MODEL_CREATED = 1_700_000_000
OWNED_BY = "ticketproxy"
SYSTEM_FINGERPRINT = "ticketproxy"


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
        call_id = call.get("id")
        _require(
            call_id is None or isinstance(call_id, str), "a tool call id must be a string", where
        )
        calls.append(ToolCall(id=call_id or "", name=name, arguments=arguments))
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


_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


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


def _tool_spec(value: Any, param: str, *, legacy: bool) -> ToolSpec:
    _require(isinstance(value, dict), "each tool must be an object", param, "invalid_type")
    if legacy:
        function = value
    else:
        _require(value.get("type") == "function", "tool type must be 'function'", f"{param}.type")
        function = value.get("function")
        param = f"{param}.function"
        _require(isinstance(function, dict), "a tool needs a 'function' object", param)
    name = function.get("name")
    _require(
        isinstance(name, str) and bool(_TOOL_NAME.match(name)),
        "function name must be 1-64 letters, digits, underscores or dashes",
        f"{param}.name",
    )
    description = function.get("description", "")
    _require(isinstance(description, str), "description must be a string", f"{param}.description")
    parameters = function.get("parameters", {})
    _require(
        isinstance(parameters, dict),
        "parameters must be a JSON Schema object",
        f"{param}.parameters",
    )
    strict = function.get("strict", False)
    _require(isinstance(strict, bool), "strict must be a boolean", f"{param}.strict")
    return ToolSpec(name=name, description=description, parameters=parameters, strict=bool(strict))


def _tools(body: Mapping[str, Any]) -> tuple[tuple[ToolSpec, ...], str, bool]:
    """Return the offered tools, the tool choice, and whether the legacy `functions` were used."""
    if body.get("tools") is not None and body.get("functions") is not None:
        raise InvalidRequest("send either tools or functions, not both", param="functions")
    legacy = body.get("functions") is not None
    # A legacy function_call names a function of `functions`; without them it is a mistake,
    # not something to ignore (OpenAI refuses it too).
    _require(
        legacy or body.get("function_call") is None,
        "function_call needs functions",
        "function_call",
    )
    name = "functions" if legacy else "tools"
    raw = body.get(name) or []
    _require(isinstance(raw, list), f"{name} must be an array", name, "invalid_type")
    _require(len(raw) <= 128, f"{name} may hold at most 128 functions", name)
    tools = tuple(_tool_spec(t, f"{name}[{i}]", legacy=legacy) for i, t in enumerate(raw))
    names = [t.name for t in tools]
    _require(len(set(names)) == len(names), "function names must be unique", name)
    choice_param = "function_call" if legacy else "tool_choice"
    choice = body.get(choice_param)
    if choice is None:
        return tools, "auto" if tools else "none", legacy
    if isinstance(choice, str):
        _require(
            choice in {"auto", "none", "required"} and not (legacy and choice == "required"),
            f"{choice_param} must be auto, none{'' if legacy else ', required'} or a function",
            choice_param,
        )
        _require(bool(tools) or choice == "none", f"{choice_param} needs {name}", choice_param)
        return tools, choice, legacy
    _require(
        isinstance(choice, dict), f"{choice_param} must be a string or an object", choice_param
    )
    named = choice.get("name") if legacy else (choice.get("function") or {}).get("name")
    _require(
        isinstance(named, str) and named in names,
        f"{choice_param} names a function that is not in {name}",
        choice_param,
    )
    return tools, f"function:{named}", legacy


def _response_format(body: Mapping[str, Any]) -> ResponseFormat | None:
    value = body.get("response_format")
    if value is None:
        return None
    _require(isinstance(value, dict), "response_format must be an object", "response_format")
    kind = value.get("type")
    if kind in {"text", "json_object"}:
        return ResponseFormat(type=kind)
    _require(
        kind == "json_schema",
        "response_format.type must be text, json_object or json_schema",
        "response_format.type",
    )
    spec = value.get("json_schema")
    _require(isinstance(spec, dict), "json_schema must be an object", "response_format.json_schema")
    name = spec.get("name")
    _require(
        isinstance(name, str) and bool(_TOOL_NAME.match(name)),
        "json_schema.name must be 1-64 letters, digits, underscores or dashes",
        "response_format.json_schema.name",
    )
    schema = spec.get("schema", {})
    _require(
        isinstance(schema, dict),
        "json_schema.schema must be a JSON Schema object",
        "response_format.json_schema.schema",
    )
    return ResponseFormat(
        type="json_schema", name=name, schema=schema, strict=spec.get("strict") is True
    )


def _stop(body: Mapping[str, Any]) -> tuple[str, ...]:
    value = body.get("stop")
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value else ()
    _require(
        isinstance(value, list) and len(value) <= 4 and all(isinstance(v, str) for v in value),
        "stop must be a string or an array of up to 4 strings",
        "stop",
    )
    return tuple(v for v in value if v)


def stream_settings(body: Mapping[str, Any]) -> tuple[bool, bool]:
    """Return whether to stream, and whether to send a usage chunk at the end."""
    stream = body.get("stream", False)
    _require(stream is None or isinstance(stream, bool), "stream must be a boolean", "stream")
    options = body.get("stream_options")
    if options is None:
        return bool(stream), False
    _require(isinstance(options, dict), "stream_options must be an object", "stream_options")
    _require(bool(stream), "stream_options is only allowed with stream=true", "stream_options")
    include = options.get("include_usage", False)
    _require(isinstance(include, bool), "include_usage must be a boolean", "stream_options")
    return True, bool(include)


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
    _refuse_what_people_cannot_do(body)
    stream_settings(body)
    tools, tool_choice, legacy = _tools(body)
    parallel = body.get("parallel_tool_calls", True)
    _require(
        isinstance(parallel, bool), "parallel_tool_calls must be a boolean", "parallel_tool_calls"
    )
    _optional_number(body, "temperature", 0, 2)
    _optional_number(body, "top_p", 0, 1)
    _optional_number(body, "presence_penalty", -2, 2)
    _optional_number(body, "frequency_penalty", -2, 2)
    max_tokens = _optional_positive_int(body, "max_completion_tokens")
    max_tokens = _optional_positive_int(body, "max_tokens") or max_tokens
    user = body.get("user")
    _require(user is None or isinstance(user, str), "user must be a string", "user", "invalid_type")
    metadata = body.get("metadata")
    metadata = {} if metadata is None else metadata
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
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        legacy_functions=legacy,
        response_format=_response_format(body),
        stop=_stop(body),
    )


def count_tokens(text: str) -> int:
    """Estimate tokens the way OpenAI's rule of thumb does: about four characters each."""
    return math.ceil(len(text) / 4) if text else 0


def prompt_tokens(request: ChatRequest) -> int:
    """Estimate the prompt's tokens: each message's text plus a small per-message overhead."""
    return sum(count_tokens(m.content) + 4 for m in request.messages) + 3


def _assistant_message(
    content: str | None, tool_calls: tuple[ToolCall, ...], *, legacy: bool
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls and legacy:
        call = tool_calls[0]
        message["function_call"] = {"name": call.name, "arguments": call.arguments}
    elif tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in tool_calls
        ]
    return message


def completion_tokens(content: str | None, tool_calls: tuple[ToolCall, ...]) -> int:
    """Estimate the completion's tokens: its text plus each call's name and arguments."""
    return count_tokens(content or "") + sum(
        count_tokens(c.name) + count_tokens(c.arguments) for c in tool_calls
    )


def render_usage(prompt_token_count: int, completion_token_count: int) -> dict[str, int]:
    """Return a ``usage`` object."""
    return {
        "prompt_tokens": prompt_token_count,
        "completion_tokens": completion_token_count,
        "total_tokens": prompt_token_count + completion_token_count,
    }


def render_completion(
    *,
    completion_id: str,
    created: int,
    model: str,
    content: str | None,
    prompt_token_count: int,
    tool_calls: tuple[ToolCall, ...] = (),
    finish_reason: str = "stop",
    legacy_functions: bool = False,
) -> dict[str, Any]:
    """Return a ``chat.completion`` object with one assistant choice."""
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": _assistant_message(content, tool_calls, legacy=legacy_functions),
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": render_usage(prompt_token_count, completion_tokens(content, tool_calls)),
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }


def render_chunks(
    *,
    completion_id: str,
    created: int,
    model: str,
    content: str | None,
    prompt_token_count: int,
    tool_calls: tuple[ToolCall, ...] = (),
    finish_reason: str = "stop",
    legacy_functions: bool = False,
    include_usage: bool = False,
    piece: int = 256,
) -> list[dict[str, Any]]:
    """Return the ``chat.completion.chunk`` events of a streamed answer, in order.

    https://platform.openai.com/docs/api-reference/chat-streaming: a first chunk with the
    role, content and tool-call deltas, a final chunk with ``finish_reason``, and, with
    ``stream_options.include_usage``, a last chunk with empty ``choices`` and the usage.
    """

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            body["usage"] = None
        return body

    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    text = content or ""
    for start in range(0, len(text), piece):
        chunks.append(chunk({"content": text[start : start + piece]}))
    if tool_calls and legacy_functions:
        call = tool_calls[0]
        chunks.append(chunk({"function_call": {"name": call.name, "arguments": ""}}))
        chunks.append(chunk({"function_call": {"arguments": call.arguments}}))
    else:
        for index, call in enumerate(tool_calls):
            chunks.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call.id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": ""},
                            }
                        ]
                    }
                )
            )
            chunks.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": call.arguments}}]})
            )
    chunks.append(chunk({}, finish_reason))
    if include_usage:
        usage_chunk = chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = render_usage(
            prompt_token_count, completion_tokens(content, tool_calls)
        )
        chunks.append(usage_chunk)
    return chunks


def render_model(model: str) -> dict[str, Any]:
    """Return one ``model`` object."""
    return {"id": model, "object": "model", "created": MODEL_CREATED, "owned_by": OWNED_BY}


def render_model_list(models: tuple[str, ...]) -> dict[str, Any]:
    """Return the ``list`` of models ``GET /v1/models`` answers."""
    return {"object": "list", "data": [render_model(m) for m in models]}


def parse_legacy_completion(body: Any, *, client: str, models: frozenset[str]) -> ChatRequest:
    """Validate a legacy ``/v1/completions`` body and return it as a one-message chat request."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.", code="invalid_type")
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    _require(
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
    _require(best_of in (None, 1), "best_of must be 1", "best_of", "unsupported_value")
    chat_body = {k: v for k, v in body.items() if k not in {"prompt", "echo", "best_of", "suffix"}}
    chat_body["messages"] = [{"role": "user", "content": prompt}]
    parsed = parse_chat_request(chat_body, client=client, models=models)
    # A distinct key space: the same text sent to both endpoints are two requests.
    return replace(parsed, key=request_key(client, {"/v1/completions": body}))


def render_legacy_completion(
    *,
    completion_id: str,
    created: int,
    model: str,
    text: str,
    finish_reason: str,
    prompt_token_count: int,
) -> dict[str, Any]:
    """Return a legacy ``text_completion`` object."""
    return {
        "id": completion_id,
        "object": "text_completion",
        "created": created,
        "model": model,
        "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish_reason}],
        "usage": render_usage(prompt_token_count, count_tokens(text)),
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }


def render_legacy_chunks(
    *,
    completion_id: str,
    created: int,
    model: str,
    text: str,
    finish_reason: str,
    prompt_token_count: int,
    include_usage: bool = False,
    piece: int = 256,
) -> list[dict[str, Any]]:
    """Return the streamed events of a legacy completion, in order."""

    def chunk(fragment: str, finish: str | None) -> dict[str, Any]:
        return {
            "id": completion_id,
            "object": "text_completion",
            "created": created,
            "model": model,
            "choices": [{"text": fragment, "index": 0, "logprobs": None, "finish_reason": finish}],
        }

    chunks = [chunk(text[i : i + piece], None) for i in range(0, len(text), piece)]
    chunks.append(chunk("", finish_reason))
    if include_usage:
        usage = chunk("", None)
        usage["choices"] = []
        usage["usage"] = render_usage(prompt_token_count, count_tokens(text))
        chunks.append(usage)
    return chunks
