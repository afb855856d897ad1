"""A task desk's records as A2A 1.0 objects: Task, TaskStatus, Message, Artifact, events.

Pure: no I/O. A task is one ticketproxy task (one issue); its steps are its turns. The
state is read from the task and its newest step:

- the client canceled it → ``TASK_STATE_CANCELED``;
- no step yet, or one whose ticket is not open yet → ``TASK_STATE_SUBMITTED``;
- a step people are thinking about → ``TASK_STATE_WORKING``;
- a step answered with a question (signed ``--ask``) → ``TASK_STATE_INPUT_REQUIRED``,
  the question in the status message;
- a last step answered → ``TASK_STATE_COMPLETED``, the answer an artifact;
- a last step nobody answered in time → ``TASK_STATE_FAILED``, the status message says so.

Files the answers created are artifacts too, their bytes inline (``raw``, base64).
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ticketing.store.task_records import (
    StepEnding,
    StepStatus,
    StoredArtifact,
    StoredStep,
    StoredTask,
)

__all__ = [
    "TERMINAL_STATES",
    "TaskView",
    "artifact_events",
    "state_of",
    "status_event",
    "task_json",
]

SUBMITTED = "TASK_STATE_SUBMITTED"
WORKING = "TASK_STATE_WORKING"
COMPLETED = "TASK_STATE_COMPLETED"
FAILED = "TASK_STATE_FAILED"
CANCELED = "TASK_STATE_CANCELED"
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
TERMINAL_STATES = frozenset({COMPLETED, FAILED, CANCELED, "TASK_STATE_REJECTED"})
# States a stream or a blocking SendMessage stops at: terminal, or waiting on the client.
SETTLED_STATES = TERMINAL_STATES | {INPUT_REQUIRED}


@dataclass(frozen=True)
class TaskView:
    """One task as A2A shows it: its record, its steps in order, and its agent's files."""

    task: StoredTask
    steps: Sequence[StoredStep]
    files: Sequence[tuple[StoredArtifact, bytes]] = ()

    @property
    def newest(self) -> StoredStep | None:
        """Return the task's newest step, if it has one."""
        return self.steps[-1] if self.steps else None


def state_of(view: TaskView) -> str:
    """Return the task's ``TaskState`` name."""
    step = view.newest
    if view.task.canceled_at is not None or (step and step.ending is StepEnding.CANCEL):
        return CANCELED
    if step is None or step.status is StepStatus.CREATED:
        return SUBMITTED
    if step.status is StepStatus.RUNNING:
        return WORKING
    if not step.is_last:
        return INPUT_REQUIRED
    return FAILED if step.ending is StepEnding.EXPIRY else COMPLETED


def _timestamp(when: datetime) -> str:
    """Return a time as the spec writes it: ISO 8601 in UTC, milliseconds, ``Z``."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def status_time(view: TaskView) -> datetime:
    """Return when the task's status last changed."""
    step = view.newest
    times = [view.task.created_at, view.task.canceled_at]
    if step is not None:
        times += [step.created_at, step.ended_at]
    return max(when for when in times if when is not None)


def _message(view: TaskView, role: str, message_id: str, text: str) -> dict[str, Any]:
    task_id = view.task.task_id
    return {
        "messageId": message_id,
        "contextId": task_id,
        "taskId": task_id,
        "role": role,
        "parts": [{"text": text}],
    }


def _status(view: TaskView) -> dict[str, Any]:
    state = state_of(view)
    status: dict[str, Any] = {"state": state, "timestamp": _timestamp(status_time(view))}
    step = view.newest
    if step is not None and state in {INPUT_REQUIRED, FAILED, CANCELED} and step.output:
        status["message"] = _message(view, "ROLE_AGENT", f"{step.step_id}:output", step.output)
    return status


def _history(view: TaskView, length: int | None) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for index, step in enumerate(view.steps):
        text = view.task.input if index == 0 else step.input
        messages.append(_message(view, "ROLE_USER", f"{step.step_id}:input", text or ""))
        if step.status is StepStatus.COMPLETED and step.output is not None:
            output = _message(view, "ROLE_AGENT", f"{step.step_id}:output", step.output)
            messages.append(output)
    if length is None:
        return messages
    return messages[-length:] if length else []


def _answer_artifact(step: StoredStep) -> dict[str, Any]:
    return {
        "artifactId": f"{step.step_id}:answer",
        "name": "answer",
        "description": "The team's signed answer.",
        "parts": [{"text": step.output or "", "mediaType": "text/plain"}],
    }


def _file_artifact(artifact: StoredArtifact, content: bytes) -> dict[str, Any]:
    # An answer's file keeps its whole path (``out/haiku.txt``) in ``relative_path``.
    path = artifact.relative_path or artifact.file_name
    media_type = mimetypes.guess_type(artifact.file_name)[0] or "application/octet-stream"
    part = {
        "raw": base64.b64encode(content).decode("ascii"),
        "filename": artifact.file_name,
        "mediaType": media_type,
    }
    return {
        "artifactId": artifact.artifact_id,
        "name": path,
        "description": f"A file the team's signed answer created (sha256 {artifact.sha256}).",
        "parts": [part],
    }


def _artifacts(view: TaskView) -> list[dict[str, Any]]:
    items = [_file_artifact(artifact, content) for artifact, content in view.files]
    step = view.newest
    if step is not None and state_of(view) == COMPLETED:
        items.append(_answer_artifact(step))
    return items


def task_json(
    view: TaskView, *, history_length: int | None = None, include_artifacts: bool = True
) -> dict[str, Any]:
    """Return the A2A Task: id, context, status, artifacts and history."""
    task: dict[str, Any] = {
        "id": view.task.task_id,
        "contextId": view.task.task_id,
        "status": _status(view),
    }
    if include_artifacts:
        task["artifacts"] = _artifacts(view)
    history = _history(view, history_length)
    if history:
        task["history"] = history
    return task


def status_event(view: TaskView) -> dict[str, Any]:
    """Return a stream's ``statusUpdate`` event: the task's status now."""
    task_id = view.task.task_id
    return {"statusUpdate": {"taskId": task_id, "contextId": task_id, "status": _status(view)}}


def artifact_events(view: TaskView, seen: set[str]) -> list[dict[str, Any]]:
    """Return a stream's ``artifactUpdate`` events for artifacts not in ``seen`` (added)."""
    task_id = view.task.task_id
    events = []
    for artifact in _artifacts(view):
        if artifact["artifactId"] in seen:
            continue
        seen.add(artifact["artifactId"])
        update = {"taskId": task_id, "contextId": task_id, "artifact": artifact}
        events.append({"artifactUpdate": update | {"lastChunk": True}})
    return events
