"""Quote untrusted values in the problems a refusal lists, so each problem is inert markdown.

Pure: no I/O. Names, paths, JSON Schema messages and JSON values in a problem come from the
editor or the agent: each is shown as a one-line code span, its known secrets redacted as
on the ticket (:mod:`ticketing.render.redact`), clipped, its line breaks and controls as
spaces and its invisible or broken characters as U+FFFD.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from typing import Any

from ticketing.render.fences import longest_backtick_run
from ticketing.render.redact import redacted

__all__ = ["json_type", "quote", "quote_names", "show_json"]

_VALUE_LIMIT = 120  # characters of one quoted value; the ticket reply clips a problem at 500
_LIST_LIMIT = 300  # characters of a quoted list of names


def quote(value: str, limit: int = _VALUE_LIMIT) -> str:
    """Quote untrusted text as a one-line markdown code span, where nothing is rendered."""
    # Redacted before it is clipped: a secret cut in half no longer matches its pattern.
    text = " ".join("".join(_inert(c) for c in redacted(value)).split()) or "(empty)"
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    ticks = "`" * (longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _inert(char: str) -> str:
    """Turn line breaks and controls into spaces, and invisible or broken ones into U+FFFD."""
    category = unicodedata.category(char)
    if category in {"Cc", "Zl", "Zp"}:
        return " "
    # Format characters (bidi overrides, joiners) can disguise text; surrogates break UTF-8.
    if category in {"Cf", "Cs"}:
        return "\ufffd"
    return char


def quote_names(names: Sequence[str]) -> str:
    """Quote a list of names, shortened with a count when long."""
    if not names:
        return "(none)"
    shown: list[str] = []
    size = 0
    for name in dict.fromkeys(names):
        quoted = quote(name, limit=64)
        if shown and size + len(quoted) > _LIST_LIMIT:
            break
        shown.append(quoted)
        size += len(quoted) + 2
    rest = len(dict.fromkeys(names)) - len(shown)
    return ", ".join(shown) + (f" and {rest} more" if rest else "")


def json_type(value: Any) -> str:
    """Name a decoded JSON value's type the way JSON Schema does."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def show_json(value: Any) -> str:
    """Return a short JSON rendering of a decoded value, for quoting in a problem."""
    try:
        return json.dumps(value, ensure_ascii=False)[:_VALUE_LIMIT]
    except (ValueError, RecursionError):
        return "?"
