"""A task's step as the conversation its ticket shows: pure, from the stored records.

Step 1 opens the task's issue: the task's input, its additional input and the files the
client uploaded (name, size, sha256 and a link served by ticketproxy). Each later step is a
step comment on that issue: the earlier outputs as the assistant's turns, then the client's
new input and any files uploaded since. Every step's request is named by the task (the run's
thread name) and keyed by its step id, so a retry re-attaches to its ticket.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from ticketing.request import ChatRequest, Message
from ticketing.store.task_records import StoredArtifact, StoredStep, StoredTask

__all__ = ["TASK_MODEL", "TASK_SYSTEM_PROMPT", "ArtifactLink", "step_request"]

TASK_MODEL = "agent-task"
TASK_SYSTEM_PROMPT = (
    "You are the agent of a task a client sent over the Agent Protocol or A2A. Each step is one"
    " exchange: read the task and the client's latest input, then answer. Your signed answer"
    " ends the task (its last step) unless you sign it with `ticketproxy answer --ask`, which"
    " makes it a question back: the client answers in its next step. To create a file, put"
    " a fenced block labelled `artifact path=RELATIVE/PATH` in the answer; its lines are the"
    " file's contents."
)
_NO_INPUT = "(The client sent this step without input: go on with the task.)"


@dataclass(frozen=True)
class ArtifactLink:
    """An uploaded file as a ticket lists it, with the link editors download it from."""

    artifact: StoredArtifact
    url: str

    def line(self) -> str:
        """Return the file's one line: path, size, digest and link."""
        item = self.artifact
        path = f"{item.relative_path.rstrip('/')}/{item.file_name}" if item.relative_path else ""
        shown = path or item.file_name
        return f"- {shown}: {item.size} bytes, sha256 {item.sha256}, {self.url}"


def step_request(
    task: StoredTask,
    steps: Sequence[StoredStep],
    uploads: Sequence[ArtifactLink],
) -> ChatRequest:
    """Return the request of the last of ``steps``, with the ones before it as history."""
    messages = [Message(role="system", content=TASK_SYSTEM_PROMPT)]
    for index, step in enumerate(steps):
        since = steps[index - 1].created_at if index else None
        # Each upload is shown once, with the first step created after it.
        new_files = [
            link
            for link in uploads
            if (since is None or link.artifact.created_at > since)
            and link.artifact.created_at <= step.created_at
        ]
        parts = _task_parts(task) if index == 0 else []
        parts += _input_parts(step, first=index == 0)
        if new_files:
            parts.append("Files uploaded:\n" + "\n".join(link.line() for link in new_files))
        messages.append(Message(role="user", content="\n\n".join(parts) or _NO_INPUT))
        if index < len(steps) - 1:
            messages.append(Message(role="assistant", content=step.output or ""))
    last = steps[-1]
    return ChatRequest(
        model=TASK_MODEL,
        messages=tuple(messages),
        client=task.client,
        key=_step_key(task, last),
        answer_artifacts=True,
    )


def _task_parts(task: StoredTask) -> list[str]:
    parts = [task.input] if task.input else []
    extra = json.loads(task.additional_input)
    if extra not in (None, {}):
        parts.append("Additional input:\n" + json.dumps(extra, indent=2, ensure_ascii=False))
    return parts


def _input_parts(step: StoredStep, *, first: bool) -> list[str]:
    parts = [step.input] if step.input else []
    extra = json.loads(step.additional_input)
    if extra not in (None, {}):
        parts.append(
            "Additional input of this step:\n" + json.dumps(extra, indent=2, ensure_ascii=False)
        )
    if not parts and not first:
        parts.append(_NO_INPUT)
    return parts


def _step_key(task: StoredTask, step: StoredStep) -> str:
    """Key a step's request by its task, client and id: its retry finds its ticket."""
    text = json.dumps(["task-step", task.client, task.task_id, step.step_id])
    return hashlib.sha256(text.encode()).hexdigest()
