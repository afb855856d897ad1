"""Agent tasks in the ticket store (SQLite or PostgreSQL): tasks, steps, and files with their bytes.

A task is private to the client key that created it: every lookup by task id names the
client too, so another key's task is simply not found. A task has at most one unfinished
step, and none once a step ended it (``is_last``) or its client canceled it:
:meth:`SQLTasks.open_step` checks all three in the transaction that inserts.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ticketing.store.model import Row, record_from_row
from ticketing.store.sql_database import (
    Executor,
    SQLDatabase,
    from_optional_timestamp,
    from_timestamp,
    to_timestamp,
)
from ticketing.store.task_records import (
    Page,
    StepEnding,
    StepStatus,
    StoredArtifact,
    StoredStep,
    StoredTask,
)

_ARTIFACT_COLUMNS = (
    "artifact_id, task_id, step_id, agent_created, file_name, relative_path, size, sha256,"
    " created_at"
)


def _task(row: Row) -> StoredTask:
    return record_from_row(
        StoredTask, row, created_at=from_timestamp, canceled_at=from_optional_timestamp
    )


def _step(row: Row) -> StoredStep:
    return record_from_row(
        StoredStep,
        row,
        status=StepStatus,
        is_last=bool,
        created_at=from_timestamp,
        ending=lambda value: None if value is None else StepEnding(value),
        ended_at=from_optional_timestamp,
    )


def _artifact(row: Row) -> StoredArtifact:
    return record_from_row(StoredArtifact, row, agent_created=bool, created_at=from_timestamp)


class SQLTasks(SQLDatabase):
    """Tasks, steps and their files."""

    def create_task(self, task: StoredTask) -> None:
        """Store a new task."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO tasks (task_id, client, input, additional_input, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (
                    task.task_id,
                    task.client,
                    task.input,
                    task.additional_input,
                    to_timestamp(task.created_at),
                ),
            )

    def get_task(self, client: str, task_id: str) -> StoredTask | None:
        """Return this client's task with this id, or None (also for another client's)."""
        row = self._db.execute(
            "SELECT * FROM tasks WHERE task_id = ? AND client = ?", (task_id, client)
        ).fetchone()
        return None if row is None else _task(row)

    def list_tasks(self, client: str, page: Page) -> tuple[list[StoredTask], int]:
        """Return one page of this client's tasks, oldest first, and how many it has."""
        rows = self._db.execute(
            "SELECT * FROM tasks WHERE client = ? ORDER BY created_at, task_id LIMIT ? OFFSET ?",
            (client, page.size, page.offset),
        ).fetchall()
        total = int(self._scalar("SELECT COUNT(*) FROM tasks WHERE client = ?", (client,)))
        return [_task(row) for row in rows], total

    def open_step(self, step: StoredStep) -> StoredStep | None:
        """Store ``step`` as the task's next one, or return the step it already has.

        Return the task's unfinished step if it has one (a repeated POST), None if a step
        already ended the task or its client canceled it, else ``step`` stored with the next
        ``seq``.
        """
        with self._transaction() as db:
            canceled = db.execute(
                "SELECT canceled_at FROM tasks WHERE task_id = ?", (step.task_id,)
            ).fetchone()
            if canceled is not None and canceled[0] is not None:
                return None
            row = db.execute(
                "SELECT * FROM task_steps WHERE task_id = ? AND (status != ? OR is_last = 1)"
                " ORDER BY seq DESC LIMIT 1",
                (step.task_id, StepStatus.COMPLETED),
            ).fetchone()
            if row is not None:
                found = _step(row)
                return None if found.status is StepStatus.COMPLETED else found
            seq = int(
                db.execute(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM task_steps WHERE task_id = ?",
                    (step.task_id,),
                ).fetchone()[0]
            )
            db.execute(
                "INSERT INTO task_steps (step_id, task_id, seq, input, additional_input,"
                " status, ticket_id, output, is_last, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, 0, ?)",
                (
                    step.step_id,
                    step.task_id,
                    seq,
                    step.input,
                    step.additional_input,
                    StepStatus.CREATED,
                    to_timestamp(step.created_at),
                ),
            )
        stored = self.get_step(step.task_id, step.step_id)
        assert stored is not None
        return stored

    def start_step(self, step_id: str, *, ticket_id: int) -> StoredStep:
        """Record the ticket that carries a step: it is running."""
        with self._transaction() as db:
            db.execute(
                "UPDATE task_steps SET ticket_id = ?, status = ? WHERE step_id = ? AND status = ?",
                (ticket_id, StepStatus.RUNNING, step_id, StepStatus.CREATED),
            )
            row = db.execute("SELECT * FROM task_steps WHERE step_id = ?", (step_id,)).fetchone()
        return _step(row)

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
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE task_steps SET status = ?, output = ?, is_last = ?, ending = ?,"
                " ended_at = ? WHERE step_id = ? AND status != ?",
                (
                    StepStatus.COMPLETED,
                    output,
                    int(is_last),
                    ending,
                    to_timestamp(ended_at),
                    step_id,
                    StepStatus.COMPLETED,
                ),
            )
            if cursor.rowcount != 1:
                return False
            for artifact, content in files:
                self._insert_artifact(db, artifact, content)
        return True

    def cancel_task(self, task_id: str, *, now: datetime) -> bool:
        """Record that the task's client canceled it, once; False if it already was."""
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE tasks SET canceled_at = ? WHERE task_id = ? AND canceled_at IS NULL",
                (to_timestamp(now), task_id),
            )
        return cursor.rowcount == 1

    def get_step(self, task_id: str, step_id: str) -> StoredStep | None:
        """Return the task's step with this id, or None."""
        row = self._db.execute(
            "SELECT * FROM task_steps WHERE task_id = ? AND step_id = ?", (task_id, step_id)
        ).fetchone()
        return None if row is None else _step(row)

    def list_steps(self, task_id: str, page: Page) -> tuple[list[StoredStep], int]:
        """Return one page of the task's steps, in order, and how many it has."""
        rows = self._db.execute(
            "SELECT * FROM task_steps WHERE task_id = ? ORDER BY seq LIMIT ? OFFSET ?",
            (task_id, page.size, page.offset),
        ).fetchall()
        total = int(self._scalar("SELECT COUNT(*) FROM task_steps WHERE task_id = ?", (task_id,)))
        return [_step(row) for row in rows], total

    def add_artifact(self, artifact: StoredArtifact, content: bytes) -> None:
        """Store a file of a task with its bytes."""
        with self._transaction() as db:
            self._insert_artifact(db, artifact, content)

    def list_artifacts(
        self, task_id: str, page: Page | None = None, *, step_id: str | None = None
    ) -> tuple[list[StoredArtifact], int]:
        """Return a page of the task's files (or a step's), oldest first, and their count."""
        where, parameters = "task_id = ?", [task_id]
        if step_id is not None:
            where, parameters = "task_id = ? AND step_id = ?", [task_id, step_id]
        limit = "" if page is None else f" LIMIT {int(page.size)} OFFSET {int(page.offset)}"
        rows = self._db.execute(
            f"SELECT {_ARTIFACT_COLUMNS} FROM task_artifacts WHERE {where}"  # noqa: S608
            f" ORDER BY created_at, rowid{limit}",
            parameters,
        ).fetchall()
        total = int(
            self._scalar(
                f"SELECT COUNT(*) FROM task_artifacts WHERE {where}",  # noqa: S608
                tuple(parameters),
            )
        )
        return [_artifact(row) for row in rows], total

    def artifact_content(self, task_id: str, artifact_id: str) -> bytes | None:
        """Return the bytes of the task's file with this id, or None."""
        content = self._scalar(
            "SELECT content FROM task_artifacts WHERE task_id = ? AND artifact_id = ?",
            (task_id, artifact_id),
        )
        return None if content is None else bytes(content)

    def get_artifact(self, task_id: str, artifact_id: str) -> StoredArtifact | None:
        """Return the task's file with this id, without its bytes, or None."""
        row = self._db.execute(
            f"SELECT {_ARTIFACT_COLUMNS} FROM task_artifacts"  # noqa: S608
            " WHERE task_id = ? AND artifact_id = ?",
            (task_id, artifact_id),
        ).fetchone()
        return None if row is None else _artifact(row)

    @staticmethod
    def _insert_artifact(db: Executor, artifact: StoredArtifact, content: bytes) -> None:
        db.execute(
            f"INSERT INTO task_artifacts ({_ARTIFACT_COLUMNS}, content)"  # noqa: S608
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                artifact.artifact_id,
                artifact.task_id,
                artifact.step_id,
                int(artifact.agent_created),
                artifact.file_name,
                artifact.relative_path,
                artifact.size,
                artifact.sha256,
                to_timestamp(artifact.created_at),
                content,
            ),
        )
