"""Answer templates: what a valid answer to a request looks like, for the editor to copy.

Pure: no I/O, no clock. A template is derived from what the request asks for:

- ``response_format`` ``json_schema``: a JSON skeleton of the schema; ``json_object``: ``{}``;
- an AutoGPT-style system prompt (``interface AssistantResponse {...}`` and ``## Commands``,
  read by :mod:`ticketing.render.autogpt_interface` and
  :mod:`ticketing.render.autogpt_prompt`): a JSON skeleton of the interface, its comments as
  placeholders, when all of the interface could be read;
- ``tools`` (unless ``tool_choice`` is ``none``): a ``tool_call`` block for the first tool,
  or for the function ``tool_choice`` names, and a table of every tool.

Everything here comes from the agent and is untrusted. The template is raw text that the
renderer fences; the tool table is markdown whose every agent value goes through the same
escaping as the rest of the ticket (:func:`ticketing.render.markdown.escape_inline`), one line per
tool. Notes are fixed sentences that hold no agent text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from ticketing.render.autogpt_interface import (
    ArrayType,
    LiteralType,
    Member,
    NamedType,
    ObjectType,
    TypeShape,
    UnionType,
    parse_response_interface,
)
from ticketing.render.autogpt_prompt import AutoGPTCommand, AutoGPTParam, parse_commands
from ticketing.render.fences import backtick_fence
from ticketing.render.markdown import escape_inline
from ticketing.request import ChatRequest, ToolSpec

__all__ = [
    "PLACEHOLDER",
    "answer_notes",
    "answer_template",
    "schema_skeleton",
    "tool_table",
]

PLACEHOLDER = "…"

# Bounds, so a hostile or merely huge schema cannot make rendering slow: a recursive `$ref`
# fans out exponentially without them. The prompt's reader has its own
# (ticketing.render.autogpt_interface).
_MAX_DEPTH = 16  # nesting levels of a skeleton
_MAX_REF_REPEAT = 2  # times one `$ref` is expanded along one path (recursive schemas)
_MAX_NODES = 400  # schema nodes expanded for one skeleton
_MAX_REPEAT = 5  # items shown for an array with minItems, characters for a string's minLength
_MAX_COMMANDS = 64  # command names listed in a placeholder
_DESCRIPTION_LIMIT = 300
_PARAMETERS_LIMIT = 400
_LABEL_LIMIT = 80

# Keys whose `name` member is the command to run, in AutoGPT's current and older replies.
_COMMAND_KEYS = frozenset({"use_tool", "command"})


def answer_template(request: ChatRequest) -> str | None:
    """Return the template text an editor copies and edits, or None for plain chat."""
    parts = [part for part in (_content_template(request), _tool_call_template(request)) if part]
    return "\n\n".join(parts) if parts else None


def answer_notes(request: ChatRequest) -> tuple[str, ...]:
    """Return the markdown sentences that explain the template; they hold no agent text."""
    notes: list[str] = []
    fmt = request.response_format
    if fmt is not None and fmt.type == "json_schema" and fmt.schema is not None:
        notes.append(
            "The agent asked for JSON matching its schema. The template holds every property,"
            f" with `{PLACEHOLDER}` for text, `0` for numbers, `false` for yes/no and the first"
            " allowed value for a choice: replace them and keep each value's type; delete"
            " optional properties you do not need."
        )
    elif fmt is not None and fmt.type in {"json_object", "json_schema"}:
        notes.append(
            "The agent asked for a JSON object, so the whole answer must be one: `{}` is the"
            " smallest, put your keys in it."
        )
    elif _interface_skeleton(request) is not None:
        notes.append(
            "The agent reads its content as this JSON object: replace each placeholder with your"
            " own words and keep every key."
        )
        if _command_choice(request):
            notes.append(
                "The command name must be one of the commands in the table below, and its"
                " arguments are that command's parameters."
            )
    if _offers_tools(request):
        notes.extend(_tool_notes(request))
    return tuple(notes)


def tool_table(request: ChatRequest) -> str | None:
    """Return a markdown table of the tools (name, description, parameters), one line per tool."""
    if _offers_tools(request):
        heading = "| Tool | Description | Parameters |"
        rows = [
            (tool.name, tool.description, _parameters_label(tool.parameters))
            for tool in request.tools
        ]
    elif commands := _command_choice(request):
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


def schema_skeleton(schema: Mapping[str, Any]) -> Any:
    """Return a JSON value shaped like ``schema``, with typed placeholders for an editor to fill."""
    return _SchemaWalker(schema).value(schema, depth=0, refs=())


# --- content: response_format and AutoGPT's interface -------------------------------------


def _content_template(request: ChatRequest) -> str | None:
    """Return the JSON content skeleton the request asks for, pretty-printed, or None."""
    fmt = request.response_format
    if fmt is not None and fmt.type == "json_schema" and fmt.schema is not None:
        return _pretty(schema_skeleton(fmt.schema))
    if fmt is not None and fmt.type in {"json_object", "json_schema"}:
        return "{}"
    skeleton = _interface_skeleton(request)
    return None if skeleton is None else _pretty(skeleton)


def _pretty(value: Any) -> str:
    """Return a JSON value indented for editing, non-ASCII kept readable."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except RecursionError:  # a `const` or `enum` value nested deeper than json can write
        return json.dumps(PLACEHOLDER, ensure_ascii=False)


def _interface_skeleton(request: ChatRequest) -> dict[str, Any] | None:
    """Return the skeleton of the prompt's ``interface AssistantResponse``, if all of it reads."""
    prompt = request.system_prompt
    shape = parse_response_interface(prompt)
    if shape is None or not shape.complete:
        return None  # no template rather than a wrong one
    names = [c.name for c in parse_commands(prompt)]
    return _members_skeleton(shape.members, parent=None, commands=names)


def _command_choice(request: ChatRequest) -> tuple[AutoGPTCommand, ...]:
    """Return the prompt's commands when the answer names one (AutoGPT without tools)."""
    if request.tools:
        return ()  # the agent calls tools instead: its prompt's list only mirrors them
    skeleton = _interface_skeleton(request)
    if skeleton is None or not _COMMAND_KEYS & skeleton.keys():
        return ()
    return parse_commands(request.system_prompt)


def _params_label(params: Sequence[AutoGPTParam]) -> str:
    """Describe parameters as ``a: string (required); b: Array<string>``."""
    labels = []
    for param in params:
        label = f"{param.name}: {param.type}" if param.type else param.name
        labels.append(label + (" (required)" if param.required else ""))
    return "; ".join(labels)


def _members_skeleton(
    members: Sequence[Member], *, parent: str | None, commands: Sequence[str]
) -> dict[str, Any]:
    """Return a JSON object with one placeholder value per member, its comments as the hint."""
    skeleton: dict[str, Any] = {}
    for member in members:
        hint = " ".join(member.comments) or None
        if member.name == "name" and parent in _COMMAND_KEYS and commands:
            shown = list(commands[:_MAX_COMMANDS])
            more = ", …" if len(commands) > _MAX_COMMANDS else ""
            hint = "one of: " + ", ".join(shown) + more
        skeleton[member.name] = _type_skeleton(
            member.type, name=member.name, hint=hint, commands=commands
        )
    return skeleton


def _type_skeleton(
    shape: TypeShape | None, *, name: str, hint: str | None, commands: Sequence[str]
) -> Any:
    """Return the placeholder for a member's type: the first useful option of a union."""
    if isinstance(shape, UnionType):
        values = (_type_skeleton(o, name=name, hint=hint, commands=commands) for o in shape.options)
        return next((v for v in values if v is not None), None)
    if isinstance(shape, ArrayType):
        return [_type_skeleton(shape.element, name=name, hint=hint, commands=commands)]
    if isinstance(shape, ObjectType):
        # Nested members take their own comments; `name` makes `use_tool.name` a choice.
        return _members_skeleton(shape.members, parent=name, commands=commands)
    if isinstance(shape, LiteralType):
        return shape.value
    if isinstance(shape, NamedType):
        arguments = [
            _type_skeleton(a, name=name, hint=hint, commands=commands) for a in shape.arguments
        ]
        return _named_type(shape.name, arguments, hint)
    return hint or PLACEHOLDER  # unreadable: only in an incomplete shape, never templated


def _named_type(name: str, arguments: Sequence[Any], hint: str | None) -> Any:
    """Return the skeleton of a named TypeScript type such as ``string`` or ``Array<T>``."""
    simple: dict[str, Any] = {"number": 0, "boolean": False, "true": True, "false": False}
    if name in simple:
        return simple[name]
    if name in {"null", "undefined", "void", "never"}:
        return None
    if name in {"Array", "ReadonlyArray"}:
        return [arguments[0] if arguments else hint or PLACEHOLDER]
    if name in {"Record", "Map", "object", "Object"}:
        return {}
    return hint or PLACEHOLDER  # string, any, unknown, and types defined elsewhere


# --- JSON Schema skeletons ----------------------------------------------------------------


class _SchemaWalker:
    """Expand a JSON Schema into a skeleton, within depth, `$ref` and size bounds."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self._root = root
        self._nodes = 0

    def value(self, schema: Any, *, depth: int, refs: tuple[str, ...]) -> Any:
        """Return the skeleton of ``schema``: typed placeholders, every property, one item."""
        if not isinstance(schema, Mapping):
            return PLACEHOLDER  # `true`, `false` or garbage: anything (or nothing) is valid
        self._nodes += 1
        if depth > _MAX_DEPTH or self._nodes > _MAX_NODES:
            return _minimal(schema)
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self._resolve(ref)
            if target is None:
                return _minimal(rest)
            # Sibling keywords apply beside `$ref` (2020-12); here they refine the target.
            merged = _merge_all_of(target, [rest])
            if refs.count(ref) >= _MAX_REF_REPEAT:
                return _minimal(merged)
            return self.value(merged, depth=depth + 1, refs=(*refs, ref))
        if "const" in schema:
            return schema["const"]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return enum[0]
        for keyword in ("anyOf", "oneOf"):
            branches = schema.get(keyword)
            if isinstance(branches, list) and branches:
                siblings = {k: v for k, v in rest.items() if k != keyword}
                branch = _first_useful_branch(branches)
                merged = {**siblings, **branch} if isinstance(branch, Mapping) else siblings
                return self.value(merged, depth=depth + 1, refs=refs)
        parts = schema.get("allOf")
        if isinstance(parts, list) and parts:
            siblings = {k: v for k, v in rest.items() if k != "allOf"}
            inlined = [self._inline_ref(part) for part in parts]
            return self.value(_merge_all_of(siblings, inlined), depth=depth + 1, refs=refs)
        return self._typed(schema, _schema_type(schema), depth=depth, refs=refs)

    def _typed(
        self, schema: Mapping[str, Any], kind: str | None, *, depth: int, refs: tuple[str, ...]
    ) -> Any:
        """Return the skeleton of a schema whose type is known (or guessed)."""
        if kind == "object":
            result: dict[str, Any] = {}
            properties = schema.get("properties")
            if isinstance(properties, Mapping):
                for name, sub in properties.items():
                    result[str(name)] = self.value(sub, depth=depth + 1, refs=refs)
            required = schema.get("required")
            if isinstance(required, list):
                for name in required:
                    if isinstance(name, str) and name not in result:
                        result[name] = PLACEHOLDER
            return result
        if kind == "array":
            return self._array(schema, depth=depth, refs=refs)
        if kind in {"integer", "number"}:
            return _number(schema, integer=kind == "integer")
        if kind == "boolean":
            return False
        if kind == "null":
            return None
        if kind == "string":
            # One "…" is one character: repeat it to reach a small minLength.
            low = _int_keyword(schema, "minLength", 1)
            high = _int_keyword(schema, "maxLength", _MAX_REPEAT)
            return PLACEHOLDER * max(min(max(low, 1), _MAX_REPEAT, high), 0)
        return PLACEHOLDER

    def _array(self, schema: Mapping[str, Any], *, depth: int, refs: tuple[str, ...]) -> list[Any]:
        """Return a list with one skeleton item (or the tuple's items, or minItems of them)."""
        if _int_keyword(schema, "maxItems", 1) < 1:
            return []
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and prefix:
            return [self.value(sub, depth=depth + 1, refs=refs) for sub in prefix]
        items = schema.get("items")
        if items is False:
            return []
        item = self.value(items if items is not None else {}, depth=depth + 1, refs=refs)
        count = min(max(_int_keyword(schema, "minItems", 1), 1), _MAX_REPEAT)
        return [item] * count

    def _inline_ref(self, schema: Any) -> Any:
        """Return an ``allOf`` branch with its own ``$ref`` resolved, so branches merge."""
        ref = schema.get("$ref") if isinstance(schema, Mapping) else None
        target = self._resolve(ref) if isinstance(ref, str) else None
        if target is None:
            return schema
        return _merge_all_of(target, [{k: v for k, v in schema.items() if k != "$ref"}])

    def _resolve(self, ref: str) -> Mapping[str, Any] | None:
        """Return the schema a local ``#/...`` reference points to, or None."""
        if not ref.startswith("#"):
            return None  # remote references are never fetched
        node: Any = self._root
        pointer = unquote(ref[1:])
        if pointer:
            if not pointer.startswith("/"):
                return None
            for raw in pointer[1:].split("/"):
                key = raw.replace("~1", "/").replace("~0", "~")
                if isinstance(node, Mapping) and key in node:
                    node = node[key]
                elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                    node = node[int(key)]
                else:
                    return None
        return node if isinstance(node, Mapping) else None


def _schema_type(schema: Mapping[str, Any]) -> str | None:
    """Return the schema's type, the first non-null one of a list, or a guess from keywords."""
    kind = schema.get("type")
    if isinstance(kind, list):
        named = [k for k in kind if isinstance(k, str)]
        kind = next((k for k in named if k != "null"), named[0] if named else None)
    if isinstance(kind, str):
        return kind
    if any(k in schema for k in ("properties", "required", "additionalProperties")):
        return "object"
    if any(k in schema for k in ("items", "prefixItems")):
        return "array"
    return None


def _first_useful_branch(branches: Sequence[Any]) -> Any:
    """Return the first branch that is not just ``null``, else the first branch."""
    for branch in branches:
        if not (isinstance(branch, Mapping) and branch.get("type") == "null"):
            return branch
    return branches[0]


def _merge_all_of(base: Mapping[str, Any], parts: Sequence[Any]) -> dict[str, Any]:
    """Merge ``allOf`` branches shallowly, uniting their properties and required lists."""
    merged: dict[str, Any] = dict(base)
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        for key, value in part.items():
            old = merged.get(key)
            if key == "properties" and isinstance(old, Mapping) and isinstance(value, Mapping):
                merged[key] = {**old, **value}
            elif key == "required" and isinstance(old, list) and isinstance(value, list):
                merged[key] = old + [v for v in value if v not in old]
            else:
                merged[key] = value
    return merged


def _minimal(schema: Mapping[str, Any]) -> Any:
    """Return the smallest placeholder for a schema not expanded (too deep, too big)."""
    kind = _schema_type(schema)
    if kind == "object":
        return {}
    if kind == "array":
        return []
    return {"integer": 0, "number": 0, "boolean": False, "null": None}.get(kind or "", PLACEHOLDER)


def _int_keyword(schema: Mapping[str, Any], keyword: str, default: int) -> int:
    """Return an integer keyword such as ``minItems``, or the default when absent or odd."""
    value = schema.get(keyword)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return default


def _number(schema: Mapping[str, Any], *, integer: bool) -> int | float:
    """Return 0, moved inside the schema's minimum and maximum when they exclude it."""

    def bound(keyword: str) -> float | None:
        value = schema.get(keyword)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value) if math.isfinite(value) else None

    value = 0.0
    low, low_open = bound("minimum"), bound("exclusiveMinimum")
    high, high_open = bound("maximum"), bound("exclusiveMaximum")
    if low is not None and value < low:
        value = math.ceil(low) if integer else low
    if low_open is not None and value <= low_open:
        value = math.floor(low_open) + 1 if integer else low_open + 1
    if high is not None and value > high:
        value = math.floor(high) if integer else high
    if high_open is not None and value >= high_open:
        value = math.ceil(high_open) - 1 if integer else high_open - 1
    return int(value) if integer or value.is_integer() else value


# --- tools --------------------------------------------------------------------------------


def _offers_tools(request: ChatRequest) -> bool:
    """Return whether the editor may answer with a tool call."""
    return bool(request.tools) and request.tool_choice != "none"


def _chosen_tool(request: ChatRequest) -> ToolSpec | str:
    """Return the tool the template calls: the one ``tool_choice`` names, else the first."""
    if request.tool_choice.startswith("function:"):
        name = request.tool_choice.removeprefix("function:")
        return next((t for t in request.tools if t.name == name), name)
    return request.tools[0]


def _tool_call_template(request: ChatRequest) -> str | None:
    """Return a ``tool_call`` block calling the chosen tool with skeleton arguments."""
    if not _offers_tools(request):
        return None
    tool = _chosen_tool(request)
    if isinstance(tool, str):
        call: dict[str, Any] = {"name": tool, "arguments": {}}
    else:
        arguments = schema_skeleton(tool.parameters)
        call = {"name": tool.name, "arguments": arguments if isinstance(arguments, dict) else {}}
    text = _pretty(call)
    # The block must not be closed early by a backtick run in a name or enum value.
    fence = backtick_fence(text)
    return f"{fence}tool_call\n{text}\n{fence}"


def _tool_notes(request: ChatRequest) -> list[str]:
    """Return the notes on how to call tools under this request's tool_choice."""
    notes = []
    if request.tool_choice.startswith("function:"):
        notes.append(
            "The agent requires a call to the function in the `tool_call` block: keep its name"
            " and fill in its arguments."
        )
    else:
        notes.append(
            "The `tool_call` block calls the first tool offered: to call another, change the"
            " name and arguments to one from the table below."
        )
    if request.parallel_tool_calls and not request.legacy_functions:
        notes.append(
            "To make several calls, write one `tool_call` block per call, one after another."
            " Text outside the blocks goes to the agent beside the calls, as the message content."
        )
    else:
        notes.append(
            "The agent accepts at most one call: write a single `tool_call` block. Text outside"
            " it goes to the agent beside the call, as the message content."
        )
    if request.tool_choice == "required":
        notes.append(
            "A tool call is required: the answer must hold at least one `tool_call` block."
        )
    elif request.tool_choice == "auto":
        notes.append("A tool call is optional: delete the block to answer with text only.")
    return notes


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
    kind = kind if isinstance(kind, str) else _schema_type(schema)
    if kind == "array":
        return f"array of {_type_label(schema.get('items'), depth=depth + 1)}"
    return _clip(kind) if isinstance(kind, str) else "any"


def _clip(text: str) -> str:
    """Cut a label to a readable length."""
    return text if len(text) <= _LABEL_LIMIT else text[: _LABEL_LIMIT - 1] + "…"


def _cell(text: str, limit: int) -> str:
    """Return agent text as one escaped table cell: no pipe, newline, mention or markup."""
    return escape_inline(text, limit=limit) or "—"
