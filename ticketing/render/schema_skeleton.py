"""JSON Schema skeletons: a JSON value shaped like a schema, with typed placeholders to fill.

Pure: no I/O, no clock. The schema comes from the agent (``response_format`` or a tool's
parameters) and is untrusted: expansion is bounded in depth, in repeats of one ``$ref``
along a path and in nodes, a ``$ref`` is only ever resolved inside the schema itself, and
nothing here raises on a malformed schema. The answer template
(:mod:`ticketing.render.templates`) shows the skeleton for an editor to copy and fill.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

__all__ = [
    "PLACEHOLDER",
    "format_skeleton",
    "schema_skeleton",
    "schema_type",
]

PLACEHOLDER = "…"

# Bounds, so a hostile or merely huge schema cannot make rendering slow: a recursive `$ref`
# fans out exponentially without them. The prompt's reader has its own
# (ticketing.render.autogpt_interface).
_MAX_DEPTH = 16  # nesting levels of a skeleton
_MAX_REF_REPEAT = 2  # times one `$ref` is expanded along one path (recursive schemas)
_MAX_NODES = 400  # schema nodes expanded for one skeleton
_MAX_REPEAT = 5  # items shown for an array with minItems, characters for a string's minLength


def schema_skeleton(schema: Mapping[str, Any]) -> Any:
    """Return a JSON value shaped like ``schema``, with typed placeholders for an editor to fill."""
    return _SchemaWalker(schema).value(schema, depth=0, refs=())


def format_skeleton(value: Any) -> str:
    """Return a JSON value indented for editing, non-ASCII kept readable."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except RecursionError:  # a `const` or `enum` value nested deeper than json can write
        return json.dumps(PLACEHOLDER, ensure_ascii=False)


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
        return self._typed(schema, schema_type(schema), depth=depth, refs=refs)

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


def schema_type(schema: Mapping[str, Any]) -> str | None:
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
    kind = schema_type(schema)
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
