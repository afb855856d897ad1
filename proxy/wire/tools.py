"""Tools in: the functions an agent offers (``tools`` or legacy ``functions``), its tool
choice, and the ``response_format`` it asks for.

Reference: https://platform.openai.com/docs/api-reference/chat/create (``tools``,
``tool_choice``, ``response_format``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from proxy.errors import InvalidRequest
from proxy.wire.invalid import require
from ticketing.request import ResponseFormat, ToolSpec

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _tool_spec(value: Any, param: str, *, legacy: bool) -> ToolSpec:
    require(isinstance(value, dict), "each tool must be an object", param, "invalid_type")
    if legacy:
        function = value
    else:
        require(value.get("type") == "function", "tool type must be 'function'", f"{param}.type")
        function = value.get("function")
        param = f"{param}.function"
        require(isinstance(function, dict), "a tool needs a 'function' object", param)
    name = function.get("name")
    require(
        isinstance(name, str) and bool(TOOL_NAME.match(name)),
        "function name must be 1-64 letters, digits, underscores or dashes",
        f"{param}.name",
    )
    description = function.get("description", "")
    require(isinstance(description, str), "description must be a string", f"{param}.description")
    parameters = function.get("parameters", {})
    require(
        isinstance(parameters, dict),
        "parameters must be a JSON Schema object",
        f"{param}.parameters",
    )
    strict = function.get("strict", False)
    require(isinstance(strict, bool), "strict must be a boolean", f"{param}.strict")
    return ToolSpec(name=name, description=description, parameters=parameters, strict=bool(strict))


def parse_tools(body: Mapping[str, Any]) -> tuple[tuple[ToolSpec, ...], str, bool]:
    """Return the offered tools, the tool choice, and whether the legacy `functions` were used."""
    if body.get("tools") is not None and body.get("functions") is not None:
        raise InvalidRequest("send either tools or functions, not both", param="functions")
    legacy = body.get("functions") is not None
    # A legacy function_call names a function of `functions`; without them it is a mistake,
    # not something to ignore (OpenAI refuses it too).
    require(
        legacy or body.get("function_call") is None,
        "function_call needs functions",
        "function_call",
    )
    name = "functions" if legacy else "tools"
    raw = body.get(name) or []
    require(isinstance(raw, list), f"{name} must be an array", name, "invalid_type")
    require(len(raw) <= 128, f"{name} may hold at most 128 functions", name)
    tools = tuple(_tool_spec(t, f"{name}[{i}]", legacy=legacy) for i, t in enumerate(raw))
    names = [t.name for t in tools]
    require(len(set(names)) == len(names), "function names must be unique", name)
    choice_param = "function_call" if legacy else "tool_choice"
    choice = body.get(choice_param)
    if choice is None:
        return tools, "auto" if tools else "none", legacy
    if isinstance(choice, str):
        require(
            choice in {"auto", "none", "required"} and not (legacy and choice == "required"),
            f"{choice_param} must be auto, none{'' if legacy else ', required'} or a function",
            choice_param,
        )
        require(bool(tools) or choice == "none", f"{choice_param} needs {name}", choice_param)
        return tools, choice, legacy
    require(isinstance(choice, dict), f"{choice_param} must be a string or an object", choice_param)
    named = choice.get("name") if legacy else (choice.get("function") or {}).get("name")
    require(
        isinstance(named, str) and named in names,
        f"{choice_param} names a function that is not in {name}",
        choice_param,
    )
    return tools, f"function:{named}", legacy


def parse_response_format(body: Mapping[str, Any]) -> ResponseFormat | None:
    """Return the ``response_format`` the body asks for, or None for plain text."""
    value = body.get("response_format")
    if value is None:
        return None
    require(isinstance(value, dict), "response_format must be an object", "response_format")
    kind = value.get("type")
    if kind in {"text", "json_object"}:
        return ResponseFormat(type=kind)
    require(
        kind == "json_schema",
        "response_format.type must be text, json_object or json_schema",
        "response_format.type",
    )
    spec = value.get("json_schema")
    require(isinstance(spec, dict), "json_schema must be an object", "response_format.json_schema")
    name = spec.get("name")
    require(
        isinstance(name, str) and bool(TOOL_NAME.match(name)),
        "json_schema.name must be 1-64 letters, digits, underscores or dashes",
        "response_format.json_schema.name",
    )
    schema = spec.get("schema", {})
    require(
        isinstance(schema, dict),
        "json_schema.schema must be a JSON Schema object",
        "response_format.json_schema.schema",
    )
    return ResponseFormat(
        type="json_schema", name=name, schema=schema, strict=spec.get("strict") is True
    )
