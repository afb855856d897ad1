"""Parse and write JSON strictly, as every client of the agent would read it.

Pure: no I/O. Python's decoder accepts what JSON does not (``NaN``, ``Infinity``, numbers
too large for a float, duplicate keys, which a reviewer and a client could read differently)
and its encoder writes unpaired surrogates that UTF-8 cannot carry: these are refused, each
with a message that says where or why.
"""

from __future__ import annotations

import json
from typing import Any

from ticketing.json_depth import MAX_JSON_DEPTH, too_deep

__all__ = ["dump_json", "encodable", "parse_json"]


class _JSONValueError(ValueError):
    """Raised from the decoder hooks for JSON that Python accepts but a client may not."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Build an object, refusing duplicate keys: a reviewer and a client could read different
    values."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _JSONValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _finite(text: str) -> float:
    """Parse a JSON number, refusing one too large for a float (it would become Infinity)."""
    number = float(text)
    if number in {float("inf"), float("-inf")}:
        raise _JSONValueError(f"number {text[:20]} is too large")
    return number


def _no_constant(name: str) -> Any:
    """Refuse NaN and Infinity, which Python's decoder accepts and JSON does not have."""
    raise _JSONValueError(f"{name} is not valid JSON")


def parse_json(text: str) -> tuple[Any, str | None]:
    """Parse strict JSON; return the value, or None and a message saying where it failed."""
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_float=_finite,
            parse_constant=_no_constant,
        )
    except json.JSONDecodeError as error:
        return None, f"{error.msg} at line {error.lineno}, column {error.colno}"
    except _JSONValueError as error:
        return None, str(error)
    except ValueError as error:  # e.g. an integer past Python's digit limit
        return None, str(error)
    except RecursionError:
        return None, f"nested more than {MAX_JSON_DEPTH} levels deep"
    if too_deep(value):
        # Walking it further (schemas, the review policy, re-serialising) would recurse.
        return None, f"nested more than {MAX_JSON_DEPTH} levels deep"
    return value, None


def dump_json(value: Any) -> tuple[str, str | None]:
    """Serialise arguments as the agent receives them, or say why that cannot be done."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (ValueError, RecursionError):
        return "", "are nested too deeply"
    if not encodable(text):
        return "", "hold an unpaired surrogate escape such as \\ud800; remove it"
    return text, None


def encodable(text: str) -> bool:
    """Return whether text is valid Unicode, so UTF-8 responses can carry it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
