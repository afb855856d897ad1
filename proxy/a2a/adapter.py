"""The A2A front's calls into the task desk: views of tasks, new messages, refusals.

Shared by the plain methods (:mod:`.routes`) and the streaming ones (:mod:`.streams`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from aiohttp import web

from ticketing.tasks.life_cycle import (
    ArtifactRefused,
    TaskDesk,
    TaskFinished,
    TaskNotCancelable,
    TaskNotFound,
)

from ..agent_protocol.routes import task_desk
from ..middleware import CLIENT, REQUEST_ID
from .tasks import INPUT_REQUIRED, TERMINAL_STATES, TaskView, state_of
from .wire import (
    Incoming,
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

__all__ = ["start_message", "task_errors", "view_of"]


@contextlib.contextmanager
def task_errors(task_id: str | None) -> Iterator[None]:
    """Turn the task desk's refusals into A2A's errors."""
    try:
        yield
    except TaskNotFound:
        raise TaskNotFoundError(
            f"Task {task_id!r} was not found (tasks are private to the client key that "
            "created them)."
        ) from None
    except TaskFinished as exc:
        raise UnsupportedOperationError(str(exc)) from None
    except TaskNotCancelable as exc:
        raise TaskNotCancelableError(str(exc)) from None
    except ArtifactRefused as exc:
        raise InvalidParamsError(str(exc)) from None


def view_of(tasks: TaskDesk, client: str, task_id: str, *, files: bool = True) -> TaskView:
    """Return the task as A2A shows it, its newest step up to date, with its agent's files."""
    with task_errors(task_id):
        steps = tasks.history(client, task_id)
        task = tasks.task(client, task_id)
        made = [item for item in tasks.artifacts(client, task_id)[0] if item.agent_created]
    contents = [tasks.file(task_id, item.artifact_id) for item in made] if files else []
    return TaskView(task=task, steps=steps, files=contents)


def _additional(incoming: Incoming) -> dict[str, Any] | None:
    return {"data": incoming.data} if incoming.data else None


async def start_message(request: web.Request, incoming: Incoming, *, wait: float) -> str:
    """Create a task for the message, or make it the next step of its task; return the id."""
    tasks, client = task_desk(request), request[CLIENT]
    with task_errors(incoming.task_id):
        # Checked before anything is stored: a refused file leaves no task behind.
        for part in incoming.files:
            tasks.check_upload(file_name=part.name, relative_path=None, size=len(part.data))
    if incoming.task_id is None:
        if incoming.context_id is not None:
            raise InvalidParamsError(
                "`message.contextId` names no task of yours: this agent starts a new context "
                "with each task (its id), so send a new task's first message without one."
            )
        task_id = tasks.create_task(client, incoming.text, _additional(incoming)).task_id
        text, extra = None, None
    else:
        task_id = incoming.task_id
        view = view_of(tasks, client, task_id, files=False)
        if incoming.context_id not in (None, task_id):
            raise InvalidParamsError(
                f"`message.contextId` must be the task's ({task_id!r}) or absent."
            )
        _check_accepts(view, incoming)
        # A repeat of the message in flight re-attaches: post_step returns the running step.
        text, extra = incoming.text, _additional(incoming)
    with task_errors(task_id):
        for part in incoming.files:
            tasks.upload(client, task_id, file_name=part.name, relative_path=None, data=part.data)
        await tasks.post_step(
            client, task_id, text, extra, request_id=request[REQUEST_ID], wait=wait
        )
    return task_id


def _check_accepts(view: TaskView, incoming: Incoming) -> None:
    """Refuse a message its task cannot take: ended, or still busy with another one."""
    state = state_of(view)
    task_id = view.task.task_id
    if state in TERMINAL_STATES:
        raise UnsupportedOperationError(
            f"Task {task_id!r} is {state.removeprefix('TASK_STATE_').lower()}: it takes no "
            "more messages. Send the message without a taskId to start a new task."
        )
    if state == INPUT_REQUIRED:
        return
    step = view.newest
    sent_before = view.task.input if len(view.steps) == 1 else (step.input if step else None)
    if incoming.text != sent_before or incoming.files or incoming.data:
        # A repeat of the message in flight is a retry and re-attaches; anything else would be
        # lost, since people answer the message they already have.
        raise UnsupportedOperationError(
            f"Task {task_id!r} is still working on your previous message: send the next one "
            "once it needs input (GetTask or SubscribeToTask tells you)."
        )
