"""The table of what the agent offers: its tools, or the commands of AutoGPT's prompt.

Pure: no I/O, no clock. Every value in the table comes from the agent and is untrusted: each
goes through the same escaping as the rest of the ticket
(:func:`ticketing.render.markdown.escape_inline`), clipped, one line per tool or command.
Parameter types are summarised from the tool's JSON Schema, or shown as the prompt wrote them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ticketing.render.autogpt_prompt import AutoGPTParam
from ticketing.render.autogpt_skeleton import command_choice
from ticketing.render.markdown import escape_inline
from ticketing.render.schema_skeleton import schema_type
from ticketing.render.templates import offers_tools
from ticketing.request import ChatRequest

__all__ = ["tool_table"]

_DESCRIPTION_LIMIT = 300
_PARAMETERS_LIMIT = 400
_LABEL_LIMIT = 80


def tool_table(request: ChatRequest) -> str | None:
    """Return a markdown table of the tools (name, description, parameters), one line per tool."""
    if offers_tools(request):
        heading = "| Tool | Description | Parameters |"
        rows = [
            (tool.name, tool.description, _parameters_label(tool.parameters))
            for tool in request.tools
        ]
    elif commands := command_choice(request):
        heading = "| Command | Description | Parameters |"
        rows = [(c.name, c.description, _params_label(c.params)) for c in commands]
    else:
        return None
    lines = [heading, "|---|---|---|"]
    for name, description, parameters in rows:
        lines.append(
            f"| {_cell(name, 100)} | {_cell(description, _DESCRIPTION_LIMIT)}"
            f" | {_cell(parameters, _PARAMETERS_LIMIT)} |"
        )
    return "\n".join(lines)


def _params_label(params: Sequence[AutoGPTParam]) -> str:
    """Describe parameters as ``a: string (required); b: Array<string>``."""
    labels = []
    for param in params:
        label = f"{param.name}: {param.type}" if param.type else param.name
        labels.append(label + (" (required)" if param.required else ""))
    return "; ".join(labels)


def _parameters_label(parameters: Mapping[str, Any]) -> str:
    """Describe a tool's parameters as ``name: type (required); ...``."""
    properties = parameters.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return "none"
    required = parameters.get("required")
    needed = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    labels = []
    for name, schema in properties.items():
        label = f"{name}: {_type_label(schema, depth=0)}"
        labels.append(label + (" (required)" if name in needed else ""))
    return "; ".join(labels)


def _type_label(schema: Any, *, depth: int) -> str:
    """Return a short type name for a schema: ``string``, ``array of integer``, ``"a" or "b"``."""
    if not isinstance(schema, Mapping) or depth > 3:
        return "any"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _clip(ref.rsplit("/", 1)[-1] or "any")
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return _clip(" or ".join(json.dumps(v, ensure_ascii=False) for v in enum[:8]))
    if "const" in schema:
        return _clip(json.dumps(schema["const"], ensure_ascii=False))
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            return " or ".join(_type_label(b, depth=depth + 1) for b in branches[:4])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(_type_label({**schema, "type": k}, depth=depth + 1) for k in kind[:4])
    kind = kind if isinstance(kind, str) else schema_type(schema)
    if kind == "array":
        return f"array of {_type_label(schema.get('items'), depth=depth + 1)}"
    return _clip(kind) if isinstance(kind, str) else "any"


def _clip(text: str) -> str:
    """Cut a label to a readable length."""
    return text if len(text) <= _LABEL_LIMIT else text[: _LABEL_LIMIT - 1] + "…"


def _cell(text: str, limit: int) -> str:
    """Return agent text as one escaped table cell: no pipe, newline, mention or markup."""
    return escape_inline(text, limit=limit) or "—"
