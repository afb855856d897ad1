"""The Agent Protocol v1's wire format: request bodies in, tasks, steps and artifacts out.

Pure: no I/O. Follows the spec's ``schemas/openapi.yml`` (AI Engineer Foundation), which the
generated ``agent-protocol-client`` reads with strict models: ``is_last`` a bool, ``output``
a string or null, pagination four ints, lists wrapped in ``{"tasks"|"steps"|"artifacts",
"pagination"}`` (not bare lists, whatever the 1.0.2 SDK's own test expects). Errors are
``{"message": ...}``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ticketing.store.task_records import Page, StoredArtifact, StoredStep, StoredTask

from ..errors import APIError

__all__ = [
    "MAX_PAGE_SIZE",
    "UnprocessableEntity",
    "artifact_json",
    "envelope",
    "page_from_query",
    "paginated",
    "read_input_body",
    "step_json",
    "task_json",
]

MAX_PAGE_SIZE = 100


class UnprocessableEntity(APIError):
    """A body or query the Agent Protocol cannot process (its 422)."""

    status = 422
    type = "invalid_request_error"


def envelope(error: APIError) -> dict[str, Any]:
    """Return the Agent Protocol's error body: ``{"message": ...}``."""
    return {"message": error.message}


def read_input_body(raw: bytes) -> tuple[str | None, dict[str, Any] | None]:
    """Read a task's or step's body (optional) into its ``input`` and ``additional_input``."""
    if not raw.strip():
        return None, None
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise UnprocessableEntity("The body is not valid JSON.", code="invalid_json") from None
    if body is None:
        return None, None
    if not isinstance(body, dict):
        raise UnprocessableEntity(
            "The body must be a JSON object with `input` and `additional_input`.",
            code="invalid_body",
        )
    text = body.get("input")
    if text is not None and not isinstance(text, str):
        raise UnprocessableEntity("`input` must be a string or null.", param="input")
    extra = body.get("additional_input")
    if extra is not None and not isinstance(extra, dict):
        raise UnprocessableEntity(
            "`additional_input` must be a JSON object or null.", param="additional_input"
        )
    return text, extra


def page_from_query(query: Mapping[str, str]) -> Page:
    """Read ``current_page`` and ``page_size`` (both at least 1; defaults 1 and 10)."""
    values = []
    for name, default in (("current_page", 1), ("page_size", 10)):
        raw = query.get(name)
        if raw is None or raw == "":
            values.append(default)
            continue
        if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
            raise UnprocessableEntity(f"`{name}` must be an integer of at least 1.", param=name)
        values.append(int(raw))
    number, size = values
    return Page(number=number, size=min(size, MAX_PAGE_SIZE))


def paginated(name: str, items: Sequence[dict[str, Any]], total: int, page: Page) -> dict[str, Any]:
    """Return a list response: the items under ``name`` and the spec's pagination object."""
    return {
        name: list(items),
        "pagination": {
            "total_items": total,
            "total_pages": math.ceil(total / page.size),
            "current_page": page.number,
            "page_size": page.size,
        },
    }


def artifact_json(artifact: StoredArtifact) -> dict[str, Any]:
    """Return an Artifact: id, who made it, file name and relative path."""
    return {
        "artifact_id": artifact.artifact_id,
        "agent_created": artifact.agent_created,
        "file_name": artifact.file_name,
        "relative_path": artifact.relative_path,
    }


def task_json(task: StoredTask, artifacts: Sequence[StoredArtifact]) -> dict[str, Any]:
    """Return a Task: its id, input, additional input and artifacts."""
    return {
        "task_id": task.task_id,
        "input": task.input,
        "additional_input": json.loads(task.additional_input),
        "artifacts": [artifact_json(item) for item in artifacts],
    }


def step_json(step: StoredStep, artifacts: Sequence[StoredArtifact]) -> dict[str, Any]:
    """Return a Step: ``output`` is null until it completes, ``is_last`` always a bool."""
    return {
        "step_id": step.step_id,
        "task_id": step.task_id,
        "name": f"Step {step.seq}",
        "status": step.status.value,
        "input": step.input,
        "additional_input": json.loads(step.additional_input),
        "output": step.output,
        "additional_output": None,
        "artifacts": [artifact_json(item) for item in artifacts],
        "is_last": step.is_last,
    }
