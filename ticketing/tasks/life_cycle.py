"""The life cycle of agent tasks over the desk: a task is an issue, a step is its ticket.

Protocol-neutral: the Agent Protocol front (``proxy/agent_protocol``) is a thin adapter over
:class:`TaskDesk`, and an A2A front can be one too. The life cycle:

- :meth:`TaskDesk.create_task` stores a task; its issue opens with its first step;
- :meth:`TaskDesk.post_step` stores the task's next step (or returns the one still running:
  a repeated POST opens nothing), submits its conversation to the desk under the task's
  name, and waits a bounded time for the outcome;
- an outcome completes the step once, durably: the answer's text (artifact blocks taken out)
  is the output, its blocks are the agent's files, and the signed ``ask`` claim says it is a
  question back (not last); an expiry completes it last, saying nobody answered;
- :meth:`TaskDesk.refresh` brings a running step up to date without waiting (GET);
- :meth:`TaskDesk.cancel` ends a task its client gave up on: the running step's ticket
  expires (its issue closes) and the task is recorded canceled, so no step follows.

A completed step records how it ended (an answer, an expiry, a cancel): A2A tells a failed
task from a completed one by it.

Every record is in the store, so a restart in the middle of a step loses nothing: the step
still names its ticket, which the desk resumes, and the next call completes it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Callable

from ticketing.clock import Clock
from ticketing.desk import Desk, Outcome
from ticketing.errors import TicketingError
from ticketing.release.artifacts import path_problem, read_artifacts
from ticketing.render.replies import render_expired_completion
from ticketing.store.model import Ticket
from ticketing.store.task_records import (
    Page,
    StepEnding,
    StepStatus,
    StoredArtifact,
    StoredStep,
    StoredTask,
    TaskStore,
)
from ticketing.tasks.conversation import ArtifactLink, step_request

__all__ = ["ArtifactRefused", "TaskDesk", "TaskFinished", "TaskNotCancelable", "TaskNotFound"]


class TaskNotFound(TicketingError):
    """No such task, step or file for this client (another client's task is not found)."""


class TaskFinished(TicketingError):
    """A step was posted to a task whose last step was already given."""


class TaskNotCancelable(TicketingError):
    """A cancel came for a task that already ended (its last step was given)."""


class ArtifactRefused(TicketingError):
    """An uploaded file is too large or its path would leave the task's folder."""


# (task id, artifact id) → the link an editor downloads an uploaded file from.
LinkFor = Callable[[str, str], str]
# Every step of a task: no task has nearly as many.
_ALL_STEPS = Page(1, 1_000_000)
CANCELED_OUTPUT = "The client canceled the task before anyone answered this step."


class TaskDesk:
    """Tasks, steps and files over one desk and one task store."""

    def __init__(
        self,
        *,
        desk: Desk,
        store: TaskStore,
        clock: Clock,
        max_artifact_bytes: int,
        link_for: LinkFor,
    ) -> None:
        self._desk = desk
        self._store = store
        self._clock = clock
        self.max_artifact_bytes = max_artifact_bytes
        self._link_for = link_for

    # --- tasks -----------------------------------------------------------------------------

    def create_task(self, client: str, text: str | None, additional: object) -> StoredTask:
        """Store a new task for this client."""
        task = StoredTask(
            task_id=str(uuid.uuid4()),
            client=client,
            input=text,
            additional_input=json.dumps(additional, ensure_ascii=False),
            created_at=self._clock(),
        )
        self._store.create_task(task)
        return task

    def task(self, client: str, task_id: str) -> StoredTask:
        """Return this client's task, or raise TaskNotFound."""
        task = self._store.get_task(client, task_id)
        if task is None:
            raise TaskNotFound(f"Unable to find a task with the id {task_id!r}.")
        return task

    def tasks(self, client: str, page: Page) -> tuple[list[StoredTask], int]:
        """Return one page of this client's tasks and how many it has."""
        return self._store.list_tasks(client, page)

    # --- steps -----------------------------------------------------------------------------

    async def post_step(
        self,
        client: str,
        task_id: str,
        text: str | None,
        additional: object,
        *,
        request_id: str,
        wait: float,
    ) -> StoredStep:
        """Start the task's next step (or return its running one) and wait up to ``wait`` s."""
        task = self.task(client, task_id)
        fresh = StoredStep(
            step_id=str(uuid.uuid4()),
            task_id=task_id,
            seq=0,
            input=text,
            additional_input=json.dumps(additional, ensure_ascii=False),
            status=StepStatus.CREATED,
            ticket_id=None,
            output=None,
            is_last=False,
            created_at=self._clock(),
        )
        step = self._store.open_step(fresh)
        if step is None:
            raise TaskFinished(
                f"Task {task_id!r} is finished: its last step was already given; create a "
                "new task to go on."
            )
        if step.status is StepStatus.CREATED:
            steps, _ = self._store.list_steps(task_id, Page(1, step.seq))
            uploads, _ = self._store.list_artifacts(task_id)
            links = [
                ArtifactLink(item, self._link_for(task_id, item.artifact_id))
                for item in uploads
                if not item.agent_created
            ]
            request = step_request(task, steps, links)
            ticket = await self._desk.submit(request, request_id=request_id, thread_name=task_id)
            step = self._store.start_step(step.step_id, ticket_id=ticket.id)
        return await self.wait(step, wait)

    def step(self, client: str, task_id: str, step_id: str) -> StoredStep:
        """Return the task's step, or raise TaskNotFound."""
        self.task(client, task_id)
        step = self._store.get_step(task_id, step_id)
        if step is None:
            raise TaskNotFound(f"Unable to find a step with the id {step_id!r} in this task.")
        return step

    def steps(self, client: str, task_id: str, page: Page) -> tuple[list[StoredStep], int]:
        """Return one page of the task's steps, each brought up to date, and their count."""
        self.task(client, task_id)
        steps, total = self._store.list_steps(task_id, page)
        return [self.refresh(step) for step in steps], total

    def refresh(self, step: StoredStep) -> StoredStep:
        """Return the step completed if its ticket has an outcome (or is overdue), else as is."""
        ticket = self._ticket_of(step)
        if ticket is None:
            return step
        outcome = self._desk.settled(ticket)
        if outcome is None and ticket.state.pending and self._clock() >= ticket.deadline:
            self._desk.expire(ticket)
            outcome = self._desk.settled(ticket)
        return step if outcome is None else self._complete(step, outcome)

    def history(self, client: str, task_id: str) -> list[StoredStep]:
        """Return every step of this client's task in order, the newest brought up to date."""
        self.task(client, task_id)
        steps, _ = self._store.list_steps(task_id, _ALL_STEPS)
        if steps:
            steps[-1] = self.refresh(steps[-1])
        return steps

    def cancel(self, client: str, task_id: str) -> StoredTask:
        """Cancel the task: expire its running step's ticket, and record it canceled.

        Raises TaskNotCancelable once a last step was given (an answer or an expiry); a
        repeated cancel returns the canceled task. An answer that lands first wins: if it
        was final, the task is not cancelable; if it asked a question, the cancel goes on.
        """
        task = self.task(client, task_id)
        steps = self.history(client, task_id)
        step = steps[-1] if steps else None
        if step is not None and step.status is not StepStatus.COMPLETED:
            ticket = None if step.ticket_id is None else self._desk.store.get_ticket(step.ticket_id)
            if ticket is not None and ticket.state.pending:
                self._desk.expire(ticket)
            outcome = None if ticket is None else self._desk.settled(ticket)
            if outcome is not None and outcome.answer is not None:
                step = self._complete(step, outcome)
            else:
                self._store.complete_step(
                    step.step_id,
                    output=CANCELED_OUTPUT,
                    is_last=True,
                    ending=StepEnding.CANCEL,
                    ended_at=self._clock(),
                )
                step = self._store.get_step(task_id, step.step_id)
        ended = step is not None and step.is_last and step.ending is not StepEnding.CANCEL
        if task.canceled_at is None and ended:
            raise TaskNotCancelable(f"Task {task_id!r} has already ended: its last step was given.")
        self._store.cancel_task(task_id, now=self._clock())
        return self.task(client, task_id)

    async def wait(self, step: StoredStep, wait: float) -> StoredStep:
        """Return the step once its ticket has an outcome, or as it is after ``wait`` s."""
        ticket = self._ticket_of(step)
        if ticket is None:
            return step
        outcome = self._desk.settled(ticket)
        if outcome is None and wait > 0:
            try:
                outcome = await asyncio.wait_for(self._desk.watch(ticket), wait)
            except TimeoutError:
                return self.refresh(step)
        return step if outcome is None else self._complete(step, outcome)

    def _ticket_of(self, step: StoredStep) -> Ticket | None:
        if step.status is not StepStatus.RUNNING or step.ticket_id is None:
            return None
        return self._desk.store.get_ticket(step.ticket_id)

    def _complete(self, step: StoredStep, outcome: Outcome) -> StoredStep:
        """Record how the step ended, once, and tell the desk its answer was delivered."""
        release = outcome.release
        files: list[tuple[StoredArtifact, bytes]] = []
        ending = StepEnding.EXPIRY if release is None else StepEnding.ANSWER
        if release is None:
            ticket = outcome.ticket
            output = render_expired_completion(
                deadline=ticket.deadline, ticket_url=ticket.issue_url or ""
            )
            is_last = True
        else:
            read = read_artifacts(release.content or "")
            output, is_last = read.text, not release.ask
            now = self._clock()
            for made in read.artifacts:
                artifact = StoredArtifact(
                    artifact_id=str(uuid.uuid4()),
                    task_id=step.task_id,
                    step_id=step.step_id,
                    agent_created=True,
                    file_name=made.file_name,
                    relative_path=made.relative_path,
                    size=len(made.content),
                    sha256=hashlib.sha256(made.content).hexdigest(),
                    created_at=now,
                )
                files.append((artifact, made.content))
        self._store.complete_step(
            step.step_id,
            output=output,
            is_last=is_last,
            ending=ending,
            ended_at=self._clock(),
            files=files,
        )
        if outcome.answer is not None:
            self._desk.delivered(outcome)
        done = self._store.get_step(step.task_id, step.step_id)
        assert done is not None
        return done

    # --- files -----------------------------------------------------------------------------

    def upload(
        self, client: str, task_id: str, *, file_name: str, relative_path: str | None, data: bytes
    ) -> StoredArtifact:
        """Store a file the client uploaded to its task, after checking its size and path."""
        self.task(client, task_id)
        self.check_upload(file_name=file_name, relative_path=relative_path, size=len(data))
        artifact = StoredArtifact(
            artifact_id=str(uuid.uuid4()),
            task_id=task_id,
            step_id=None,
            agent_created=False,
            file_name=file_name,
            relative_path=relative_path,
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            created_at=self._clock(),
        )
        self._store.add_artifact(artifact, data)
        return artifact

    def check_upload(self, *, file_name: str, relative_path: str | None, size: int) -> None:
        """Raise ArtifactRefused for a file too large, or a path that would leave its folder."""
        if size > self.max_artifact_bytes:
            raise ArtifactRefused(
                f"The file is {size} bytes, over this ticketproxy's limit of "
                f"{self.max_artifact_bytes} bytes (TICKETPROXY_MAX_ARTIFACT_BYTES)."
            )
        for what, value in (("file name", file_name), ("relative_path", relative_path)):
            if value is None or (what == "relative_path" and value == ""):
                continue
            problem = path_problem(value.rstrip("/") if what == "relative_path" else value)
            if problem is not None or (what == "file name" and "/" in value):
                raise ArtifactRefused(f"The {what} is refused: {problem or 'it holds a /.'}")

    def artifacts(
        self, client: str, task_id: str, page: Page | None = None, *, step_id: str | None = None
    ) -> tuple[list[StoredArtifact], int]:
        """Return a page of the task's files (or one step's) and their count."""
        self.task(client, task_id)
        return self._store.list_artifacts(task_id, page, step_id=step_id)

    def download(self, client: str, task_id: str, artifact_id: str) -> tuple[StoredArtifact, bytes]:
        """Return one of the task's files and its bytes, or raise TaskNotFound."""
        self.task(client, task_id)
        return self.file(task_id, artifact_id)

    def file(self, task_id: str, artifact_id: str) -> tuple[StoredArtifact, bytes]:
        """Return a task's file and its bytes for an editor's link, or raise TaskNotFound."""
        artifact = self._store.get_artifact(task_id, artifact_id)
        content = self._store.artifact_content(task_id, artifact_id)
        if artifact is None or content is None:
            raise TaskNotFound(f"Unable to find an artifact with the id {artifact_id!r}.")
        return artifact, content
