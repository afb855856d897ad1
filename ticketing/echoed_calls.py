"""Tool calls an agent re-sends as text: smolagents' ``Calling tools:`` messages.

Pure: no I/O, no clock. smolagents (1.26, ``ToolCallingAgent``; recorded in
``tests/helpers/smolagents_requests.json``) does not echo the reply it was given as an
assistant message with ``tool_calls``: it writes the reply's text, a line ``Calling tools:``
and the calls as a Python list literal (``[{'id': ..., 'type': 'function', 'function':
{'name': ..., 'arguments': {...}}}]``). :func:`echoed_reply` reads such a message back into
the content and calls it stands for, so that the run is recognised like any other
(:mod:`ticketing.threads`). The message is agent input: the literal is read by
:func:`ast.literal_eval` (values only, never code), bounded in size, and anything else it
holds makes it no echo at all.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from ticketing.request import ToolCall

__all__ = ["echoed_reply"]

_MARKER = "Calling tools:\n"
# An echo longer than this is not read: the literal parser's cost grows with its input.
_MAX_LITERAL = 100_000


def echoed_reply(text: str) -> tuple[str, tuple[ToolCall, ...]] | None:
    """Return the content and tool calls a ``Calling tools:`` message echoes, or None."""
    at = text.rfind(_MARKER)
    if at < 0 or (at > 0 and text[at - 1] != "\n"):
        return None
    literal = text[at + len(_MARKER) :]
    if len(literal) > _MAX_LITERAL:
        return None
    try:
        value = ast.literal_eval(literal.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, list) or not value:
        return None
    calls = [_call(item) for item in value]
    if any(call is None for call in calls):
        return None
    return text[: max(at - 1, 0)], tuple(call for call in calls if call is not None)


def _call(item: Any) -> ToolCall | None:
    """Return one echoed ``{'id', 'type', 'function': {'name', 'arguments'}}`` as a call."""
    function = item.get("function") if isinstance(item, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return None
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        try:
            arguments = json.dumps(arguments, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return None
    call_id = item.get("id")
    return ToolCall(
        id=call_id if isinstance(call_id, str) else "", name=function["name"], arguments=arguments
    )
