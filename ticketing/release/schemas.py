"""Validate a value against a JSON Schema the agent sent: one problem per error.

Pure: no I/O. The schema (a tool's parameters, or ``response_format``'s) is agent input:
an invalid schema, or one that cannot be applied, is reported as the agent's to fix, and a
``$ref`` to a URL is reported, never fetched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]
from referencing import Registry
from referencing.exceptions import Unresolvable

from ticketing.release.quoting import quote

__all__ = ["schema_error", "schema_problems"]


def schema_problems(
    instance: Any, schema: Mapping[str, Any], *, subject: str, owner: str
) -> list[str]:
    """Validate with JSON Schema 2020-12, one problem per error, each naming its JSON path."""
    schema = dict(schema)
    invalid = schema_error(schema, owner=owner)
    if invalid is not None:
        return [f"{invalid}, so {subject} cannot be checked; the agent must fix it."]
    # An empty registry: a `$ref` to a URL is reported, never fetched (this module does no I/O).
    validator = Draft202012Validator(schema, registry=Registry())
    try:
        errors = sorted(validator.iter_errors(instance), key=lambda e: (e.json_path, e.message))
    except (Unresolvable, re.error, RecursionError) as error:
        return [
            f"{owner} cannot be applied ({quote(type(error).__name__)}:"
            f" {quote(str(error))}), so {subject} cannot be checked; the agent must fix it."
        ]
    return [f"{subject} at {quote(e.json_path)}: {quote(e.message)}." for e in errors]


def schema_error(schema: Mapping[str, Any], *, owner: str) -> str | None:
    """Return why ``schema`` is not a valid JSON Schema 2020-12, or None when it is."""
    try:
        Draft202012Validator.check_schema(dict(schema))
    except SchemaError as error:
        return (
            f"{owner} is not a valid JSON Schema ({quote(error.json_path)}: {quote(error.message)})"
        )
    return None
