"""Check JSON payloads against GitHub's OpenAPI description (the subset copied here)."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from openapi_schema_validator import OAS30Validator, oas30_format_checker

SPEC_PATH = Path(__file__).with_name("issues-subset.json")
# Operations copied from the same @octokit/openapi release into subsets of this repository's
# own (see README.md): workflow and repository dispatches, and the sub-issue operations. The
# shared subset does not hold them, so they are loaded beside it and merged in.
EXTRA_SPEC_PATHS = (
    Path(__file__).with_name("actions-subset.json"),
    Path(__file__).with_name("sub-issues-subset.json"),
)


def _allow_null_in_nullable_enums(node: Any) -> None:
    # OpenAPI 3.0 quirk: `nullable: true` beside `enum` still rejects null in validators,
    # yet GitHub sends null (issue.state_reason on an open issue). Teach the validator.
    if isinstance(node, dict):
        enum = node.get("enum")
        if node.get("nullable") is True and isinstance(enum, list) and None not in enum:
            enum.append(None)
        for value in node.values():
            _allow_null_in_nullable_enums(value)
    elif isinstance(node, list):
        for value in node:
            _allow_null_in_nullable_enums(value)


@cache
def spec() -> dict[str, Any]:
    """Return the OpenAPI document (with the extra subsets), the nullable-enum quirk fixed."""
    document = json.loads(SPEC_PATH.read_text(encoding="utf-8"))
    for extra_path in EXTRA_SPEC_PATHS:
        extra = json.loads(extra_path.read_text(encoding="utf-8"))
        document["paths"].update(extra["paths"])
        for kind, entries in extra.get("components", {}).items():
            for name, entry in entries.items():
                document["components"].setdefault(kind, {}).setdefault(name, entry)
    _allow_null_in_nullable_enums(document)
    return document  # type: ignore[no-any-return]


def _validate(schema: dict[str, Any], payload: Any, what: str) -> None:
    root = {**schema, "components": spec()["components"]}
    validator = OAS30Validator(root, format_checker=oas30_format_checker)
    errors = sorted(validator.iter_errors(payload), key=lambda error: list(error.path))
    if errors:
        lines = [f"{what}: {len(errors)} schema error(s)"]
        for error in errors[:10]:
            location = "/".join(str(part) for part in error.absolute_path) or "(root)"
            lines.append(f"  at {location}: {error.message[:300]}")
        raise AssertionError("\n".join(lines))


def assert_matches_schema(payload: Any, schema_name: str) -> None:
    """Fail unless the payload matches ``#/components/schemas/<schema_name>``."""
    if schema_name not in spec()["components"]["schemas"]:
        raise KeyError(f"no schema {schema_name!r} in {SPEC_PATH.name}")
    _validate({"$ref": f"#/components/schemas/{schema_name}"}, payload, schema_name)


def assert_matches_response(payload: Any, method: str, path: str, status: int) -> None:
    """Fail unless the payload matches what the spec says an operation answers with a status."""
    operation = spec()["paths"][path][method.lower()]
    response = operation["responses"][str(status)]
    if "$ref" in response:
        name = response["$ref"].rsplit("/", 1)[-1]
        response = spec()["components"]["responses"][name]
    schema = copy.deepcopy(response["content"]["application/json"]["schema"])
    _validate(schema, payload, f"{method.upper()} {path} -> {status}")


__all__ = ["assert_matches_response", "assert_matches_schema", "spec"]
