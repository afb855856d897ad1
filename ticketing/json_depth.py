"""How deeply a JSON value nests, measured without recursion, before anything walks it.

Pure: no I/O. Python's ``json`` encoder (with ``indent`` it is pure Python, two frames a
level), JSON Schema validation and the renderers all recurse once per level or more, so a
value nested a few hundred deep ends in a ``RecursionError`` wherever it is walked first.
Request bodies, webhook payloads and the JSON inside them (tool-call arguments, an editor's
answer) are measured here as soon as they are parsed, and refused past ``MAX_JSON_DEPTH``.
Parsing itself recurses too: ``json.loads`` raises ``RecursionError`` on text nested about
a thousand deep, which callers catch and refuse the same way. Real requests stay far below
the limit: the deepest recorded AutoGPT request (``tests/samples/autogpt``) nests 8 levels.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_JSON_DEPTH", "json_depth", "too_deep"]

# Levels of arrays and objects, the outermost included: `{"a": [1]}` nests 2 levels.
MAX_JSON_DEPTH = 64


def json_depth(value: Any, *, stop_past: int | None = None) -> int:
    """Return how many levels of lists and dicts ``value`` nests, counted without recursion.

    Counting stops once the depth passes ``stop_past``, so a hostile value costs no more
    than the levels it takes to refuse it.
    """
    depth = 0
    level = [value]
    # Level by level: each level's containers are gathered by C loops, not Python ones.
    while level:
        containers = [item for item in level if isinstance(item, dict | list | tuple)]
        if not containers:
            break
        depth += 1
        if stop_past is not None and depth > stop_past:
            break
        level = []
        for item in containers:
            level.extend(item.values() if isinstance(item, dict) else item)
    return depth


def too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Say whether ``value`` nests more than ``limit`` levels of lists and dicts."""
    return json_depth(value, stop_past=limit) > limit
