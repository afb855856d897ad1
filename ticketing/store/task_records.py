"""Agent tasks (Agent Protocol, A2A): their records (tasks, steps, files) and their store.

Kept apart from :mod:`ticketing.store.model` because they are a front's state, not the
ticket life cycle's: a step points at the ticket that carries it, and nothing in the desk
reads them. Ids are strings chosen by the caller (UUIDs), stable across restarts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol


class StepStatus(StrEnum):
    """Where a step is: stored, waiting on its ticket, or answered (or expired)."""

    CREATED = "created"  # stored; its ticket is not open yet (GitHub was busy)
    RUNNING = "running"  # its ticket waits for people
    COMPLETED = "completed"  # answered, or nobody answered in time


class StepEnding(StrEnum):
    """How a completed step ended: A2A tells a failed task from a completed one by it."""

    ANSWER = "answer"  # a signed answer (a question back too)
    EXPIRY = "expiry"  # nobody answered before the deadline
    CANCEL = "cancel"  # the client canceled the task while people thought


@dataclass(frozen=True)
class StoredTask:
    """A task a client created: its input and the client key it belongs to."""

    task_id: str
    client: str
    input: str | None
    # JSON text of the client's ``additional_input`` ("null" when none).
    additional_input: str
    created_at: datetime
    # When the client canceled the task (A2A's CancelTask); None while it is not.
    canceled_at: datetime | None = None


@dataclass(frozen=True)
class StoredStep:
    """One exchange of a task: the client's input and, once answered, the output."""

    step_id: str
    task_id: str
    seq: int
    input: str | None
    additional_input: str
    status: StepStatus
    ticket_id: int | None
    output: str | None
    is_last: bool
    created_at: datetime
    # How and when it completed; None while it runs (and for steps completed before
    # migration 10, which were answers or expiries that nobody told apart).
    ending: StepEnding | None = None
    ended_at: datetime | None = None


@dataclass(frozen=True)
class StoredArtifact:
    """A file of a task: uploaded by the client, or created by an answer (``step_id``)."""

    artifact_id: str
    task_id: str
    step_id: str | None
    agent_created: bool
    file_name: str
    relative_path: str | None
    size: int
    sha256: str
    created_at: datetime


@dataclass(frozen=True)
class Page:
    """Which slice of a list is asked for: 1-based page number and size."""

    number: int = 1
    size: int = 10

    @property
    def offset(self) -> int:
        """Return how many items come before this page."""
        return (self.number - 1) * self.size


class TaskStore(Protocol):
    """Agent tasks, their steps and files, each task private to its client key."""

    def create_task(self, task: StoredTask) -> None:
        """Store a new task."""
        ...

    def get_task(self, client: str, task_id: str) -> StoredTask | None:
        """Return this client's task with this id, or None (also for another client's)."""
        ...

    def list_tasks(self, client: str, page: Page) -> tuple[list[StoredTask], int]:
        """Return one page of this client's tasks, oldest first, and how many it has."""
        ...

    def open_step(self, step: StoredStep) -> StoredStep | None:
        """Store the task's next step; return its unfinished one instead, None if it ended."""
        ...

    def start_step(self, step_id: str, *, ticket_id: int) -> StoredStep:
        """Record the ticket that carries a step: it is running."""
        ...

    def complete_step(
        self,
        step_id: str,
        *,
        output: str,
        is_last: bool,
        ending: StepEnding,
        ended_at: datetime,
        files: Sequence[tuple[StoredArtifact, bytes]] = (),
    ) -> bool:
        """Record how a step ended, its output and its answer's files, once; False if done."""
        ...

    def cancel_task(self, task_id: str, *, now: datetime) -> bool:
        """Record that the task's client canceled it, once; False if it already was."""
        ...

    def get_step(self, task_id: str, step_id: str) -> StoredStep | None:
        """Return the task's step with this id, or None."""
        ...

    def list_steps(self, task_id: str, page: Page) -> tuple[list[StoredStep], int]:
        """Return one page of the task's steps, in order, and how many it has."""
        ...

    def add_artifact(self, artifact: StoredArtifact, content: bytes) -> None:
        """Store a file of a task with its bytes."""
        ...

    def list_artifacts(
        self, task_id: str, page: Page | None = None, *, step_id: str | None = None
    ) -> tuple[list[StoredArtifact], int]:
        """Return a page of the task's files (or a step's), oldest first, and their count."""
        ...

    def get_artifact(self, task_id: str, artifact_id: str) -> StoredArtifact | None:
        """Return the task's file with this id, without its bytes, or None."""
        ...

    def artifact_content(self, task_id: str, artifact_id: str) -> bytes | None:
        """Return the bytes of the task's file with this id, or None."""
        ...
