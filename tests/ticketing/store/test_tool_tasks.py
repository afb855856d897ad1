"""MCP tasks in the store: kept, private to their client key, listed newest first, canceled once.

Run on SQLite and on PostgreSQL (the shared ``store`` fixture), since a task must survive a
restart on either.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ticketing.store.interface import TicketStore
from ticketing.store.tool_tasks import StoredToolTask

NOW = datetime(2026, 11, 27, 0, 0, tzinfo=UTC)


def _task(store: TicketStore, task_id: str, *, client: str = "key-a", minutes: int = 0) -> None:
    ticket = store.open_ticket(
        f"req-{task_id}",
        request_id=f"req_{task_id}",
        created=NOW,
        deadline=NOW + timedelta(hours=1),
    )
    store.keep_tool_task(
        StoredToolTask(
            task_id=task_id,
            client=client,
            tool="ask_team",
            arguments='{"question": "Which region?"}',
            ticket_id=ticket.id,
            ttl_ms=60_000,
            created_at=NOW + timedelta(minutes=minutes),
        )
    )


def test_a_kept_task_is_read_back_whole_by_its_client(store: TicketStore) -> None:
    """What was kept comes back field for field, times in UTC."""
    _task(store, "t1")
    task = store.tool_task("key-a", "t1")
    assert task is not None
    assert (task.tool, task.arguments, task.ttl_ms) == (
        "ask_team",
        '{"question": "Which region?"}',
        60_000,
    )
    assert task.created_at == NOW
    assert task.canceled_at is None


def test_another_clients_task_is_not_found(store: TicketStore) -> None:
    """A task id learnt by another client key reads as no task at all."""
    _task(store, "t1")
    assert store.tool_task("key-b", "t1") is None
    assert store.tool_tasks("key-b", 10) == []


def test_tasks_are_listed_newest_first_up_to_the_limit(store: TicketStore) -> None:
    """The list is the client's newest tasks first, cut at the limit."""
    for minute, task_id in enumerate(["t1", "t2", "t3"]):
        _task(store, task_id, minutes=minute)
    _task(store, "other", client="key-b", minutes=9)
    assert [task.task_id for task in store.tool_tasks("key-a", 2)] == ["t3", "t2"]


def test_a_task_is_canceled_once(store: TicketStore) -> None:
    """The first cancel records its time; a second one, or another client's, changes nothing."""
    _task(store, "t1")
    assert not store.cancel_tool_task("key-b", "t1", now=NOW)
    assert store.cancel_tool_task("key-a", "t1", now=NOW + timedelta(minutes=1))
    assert not store.cancel_tool_task("key-a", "t1", now=NOW + timedelta(minutes=2))
    task = store.tool_task("key-a", "t1")
    assert task is not None
    assert task.canceled_at == NOW + timedelta(minutes=1)
