"""Tests for ticketing.github.write_queue: a durable GitHub write queue that survives restarts.

Also here, until they move next to their modules: the rate-limit-aware ``poll_delay``
(ticketing.github.client) and the write-budget settings (proxy.settings).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from embedded_github import RunningSandbox
from embedded_github.state import author_of
from proxy.errors import ConfigError
from proxy.settings import Settings
from tests.helpers.embedded_github_fixtures import ManualClock
from tests.helpers.sandbox_issues import comments_on, issue, labels_on, no_sleep
from ticketing.errors import StoreUnavailable
from ticketing.github.client import GitHubClient
from ticketing.github.poll_budget import poll_delay
from ticketing.github.write_kinds import Guard
from ticketing.github.write_queue import WriteQueue
from ticketing.store.interface import TicketStore
from ticketing.store.model import TicketState
from ticketing.store.sqlite import SQLiteTicketStore

REPO = "acme/agents"
COMMENTS_OF_1 = "/repos/acme/agents/issues/1/comments"


class ProcessDied(BaseException):
    """Stands for the process being killed: nothing after it runs."""


class DiesBeforeMarkingDone(SQLiteTicketStore):
    """A store whose process dies right after a write was sent, before it is marked done."""

    def finish_write(self, write_id: int, *, now: datetime, failure: str | None = None) -> None:
        """Die instead of recording the write as done."""
        raise ProcessDied


class DownForAMoment(SQLiteTicketStore):
    """A store whose database is down the first time the worker asks when a write is due."""

    outages = 1

    def next_write_due(self) -> datetime | None:
        """Raise StoreUnavailable once (the database restarting), then answer."""
        if self.outages:
            self.outages -= 1
            raise StoreUnavailable("the ticket store is restarting", retry_after=1.0)
        return super().next_write_due()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """Return where the ticket store lives for this test."""
    return tmp_path / "tickets.sqlite3"


@pytest.fixture
def open_stores(store_path: Path) -> Iterator[Callable[..., TicketStore]]:
    """Return a factory of stores on the same file (one per 'process'), all closed after."""
    opened: list[TicketStore] = []

    def open_store(kind: type[SQLiteTicketStore] = SQLiteTicketStore) -> TicketStore:
        store = kind(store_path)
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


def statuses(sandbox: RunningSandbox, method: str, path: str) -> list[int]:
    """Return the statuses of the sandbox's answers to ``method path``, in order."""
    return [r.status for r in sandbox.sandbox.requests if r.method == method and r.path == path]


def queued_rows(path: Path) -> list[dict[str, Any]]:
    """Read the write_queue table as another process would."""
    with sqlite3.connect(path) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM write_queue ORDER BY id")]


# --- durability ------------------------------------------------------------------------------


async def test_writes_queued_before_a_restart_are_sent_by_the_next_process(
    github_sandbox: RunningSandbox,
    client: GitHubClient,
    open_stores: Callable[..., TicketStore],
) -> None:
    """Rows queued by a process that never sent them are sent by a new queue on the same file."""
    issue(github_sandbox, 1)
    clock = ManualClock()
    before = WriteQueue(store=open_stores(), github=client, clock=clock)
    before.comment(1, "This ticket expired.", request_id="req-1")
    before.set_labels(1, ["ticketproxy", "expired"])
    before.close(1)
    assert before.depth == 3

    after = WriteQueue(store=open_stores(), github=client, clock=clock)
    assert after.depth == 3
    assert await after.send_due() == 3
    assert after.depth == 0
    assert [c.body for c in comments_on(github_sandbox)] == ["This ticket expired."]
    assert labels_on(github_sandbox) == {"ticketproxy", "expired"}
    assert issue(github_sandbox).state == "closed"


async def test_comment_is_not_posted_twice_when_the_process_died_after_sending(
    github_sandbox: RunningSandbox,
    client: GitHubClient,
    open_stores: Callable[..., TicketStore],
    store_path: Path,
) -> None:
    """Sent, then killed before 'done' was stored: the next process finds it and posts nothing."""
    issue(github_sandbox, 1)
    clock = ManualClock()
    dying = WriteQueue(store=open_stores(DiesBeforeMarkingDone), github=client, clock=clock)
    dying.comment(1, "Answer accepted.")
    with pytest.raises(ProcessDied):
        await dying.send_due()
    assert len(comments_on(github_sandbox)) == 1
    [row] = queued_rows(store_path)
    assert row["attempts"] == 1
    assert row["done_at"] is None

    restarted = WriteQueue(store=open_stores(), github=client, clock=clock)
    assert await restarted.send_due() == 0  # claimed rows wait out their back-off
    clock.advance(5)
    assert await restarted.send_due() == 1
    assert [c.body for c in comments_on(github_sandbox)] == ["Answer accepted."]
    assert statuses(github_sandbox, "POST", COMMENTS_OF_1) == [201]
    assert statuses(github_sandbox, "GET", COMMENTS_OF_1)  # it looked before posting
    assert restarted.depth == 0


async def test_first_attempt_of_a_comment_posts_without_looking_first(
    github_sandbox: RunningSandbox,
    client: GitHubClient,
    open_stores: Callable[..., TicketStore],
) -> None:
    """A comment never tried before costs one request, not a lookup and a post."""
    issue(github_sandbox, 1)
    queue = WriteQueue(store=open_stores(), github=client, clock=ManualClock())
    queue.comment(1, "Thanks, answer received.")
    await queue.send_due()
    assert statuses(github_sandbox, "POST", COMMENTS_OF_1) == [201]
    assert statuses(github_sandbox, "GET", COMMENTS_OF_1) == []


# --- writes that follow a change of ticket state ---------------------------------------------


def open_ticket(store: TicketStore, clock: ManualClock) -> int:
    """Open a ticket on issue 1 in ``store`` and return its id."""
    ticket = store.open_ticket(
        "key", request_id="req-7", created=clock(), deadline=clock() + timedelta(hours=1)
    )
    store.set_issue(ticket.id, number=1, url="https://example.test/1", now=clock())
    return ticket.id


async def test_guarded_write_is_sent_once_its_ticket_reached_the_state(
    github_sandbox: RunningSandbox, client: GitHubClient, open_stores: Callable[..., TicketStore]
) -> None:
    """An expiry notice queued before the expiry is committed goes out once it is."""
    issue(github_sandbox, 1)
    clock = ManualClock()
    store = open_stores()
    ticket_id = open_ticket(store, clock)
    queue = WriteQueue(store=store, github=client, clock=clock)
    queue.comment(1, "expired", only_if=Guard.ticket_in(ticket_id, {TicketState.EXPIRED}))
    assert store.expire(ticket_id, now=clock())
    assert await queue.send_due() == 1
    assert [c.body for c in comments_on(github_sandbox)] == ["expired"]


async def test_guarded_write_is_skipped_when_the_process_died_before_the_state_change(
    github_sandbox: RunningSandbox,
    client: GitHubClient,
    open_stores: Callable[..., TicketStore],
    store_path: Path,
) -> None:
    """Queued, then killed before the answer was committed: the next process sends nothing."""
    issue(github_sandbox, 1)
    clock = ManualClock()
    store = open_stores()
    ticket_id = open_ticket(store, clock)
    guard = Guard.ticket_in(ticket_id, {TicketState.ANSWERED, TicketState.DELIVERED})
    WriteQueue(store=store, github=client, clock=clock).set_labels(
        1, ["ticketproxy", "answered"], only_if=guard
    )

    restarted = WriteQueue(store=open_stores(), github=client, clock=clock)
    assert await restarted.send_due() == 1
    assert labels_on(github_sandbox) == set()
    [row] = queued_rows(store_path)
    assert row["failure"] == "skipped: ticket 1 is open, not answered/delivered"
    assert restarted.depth == 0


async def test_cancelled_write_is_never_sent(
    github_sandbox: RunningSandbox,
    client: GitHubClient,
    open_stores: Callable[..., TicketStore],
    store_path: Path,
) -> None:
    """A write cancelled in the step that queued it (the change did not happen) stays unsent."""
    issue(github_sandbox, 1)
    queue = WriteQueue(store=open_stores(), github=client, clock=ManualClock())
    queue.cancel(queue.close(1), "delivered before")
    assert await queue.send_due() == 0
    assert issue(github_sandbox).state == "open"
    assert queued_rows(store_path)[0]["failure"] == "cancelled: delivered before"


# --- back-off and abandoning -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (403, "You have exceeded a secondary rate limit."),
        (429, "Too Many Requests"),
    ],
)
async def test_rate_limit_with_retry_after_pauses_the_queue_until_then(
    github_sandbox: RunningSandbox,
    client: GitHubClient,
    open_stores: Callable[..., TicketStore],
    status: int,
    message: str,
) -> None:
    """A 403/429 with retry-after 120 holds every write 120 s, then sends them in order."""
    issue(github_sandbox, 1)
    github_sandbox.sandbox.inject_fault(
        method="POST",
        path=COMMENTS_OF_1,
        status=status,
        headers={"retry-after": "120"},
        body={"message": message},
    )
    clock = ManualClock()
    queue = WriteQueue(store=open_stores(), github=client, clock=clock)
    queue.comment(1, "Your answer was not accepted.")
    queue.set_labels(1, ["ticketproxy", "answered"])
    assert await queue.send_due() == 1
    assert labels_on(github_sandbox) == set()  # the later write waits behind the paused one
    clock.advance(119)
    assert await queue.send_due() == 0
    clock.advance(2)
    assert await queue.send_due() == 2
    assert statuses(github_sandbox, "POST", COMMENTS_OF_1) == [status, 201]
    assert [c.body for c in comments_on(github_sandbox)] == ["Your answer was not accepted."]
    assert labels_on(github_sandbox) == {"ticketproxy", "answered"}


async def test_404_abandons_the_write_records_why_and_the_queue_moves_on(
    github_sandbox: RunningSandbox,
    client: GitHubClient,
    open_stores: Callable[..., TicketStore],
    store_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A write to a missing issue is given up at once, logged and recorded; the next one goes."""
    issue(github_sandbox, 1)
    queue = WriteQueue(store=open_stores(), github=client, clock=ManualClock())
    queue.close(99, request_id="req-404")
    queue.comment(1, "still delivered")
    with caplog.at_level(logging.ERROR, logger="ticketing.github.write_queue"):
        assert await queue.send_due() == 2
    gone, sent = queued_rows(store_path)
    assert "404" in gone["failure"]
    assert gone["done_at"] is not None
    assert sent["failure"] is None
    assert [c.body for c in comments_on(github_sandbox)] == ["still delivered"]
    assert any(
        "request_id=req-404" in r.message and "abandoned" in r.message for r in caplog.records
    )
    assert queue.depth == 0


async def test_write_still_failing_after_max_attempts_is_abandoned(
    github_sandbox: RunningSandbox,
    client: GitHubClient,
    open_stores: Callable[..., TicketStore],
    store_path: Path,
) -> None:
    """GitHub 503s every try: after max_attempts the write is given up, with the reason."""
    issue(github_sandbox, 1)
    github_sandbox.sandbox.inject_fault(
        method="PATCH", path="/repos/acme/agents/issues/1", status=503, times=100
    )
    clock = ManualClock()
    queue = WriteQueue(store=open_stores(), github=client, clock=clock, max_attempts=2)
    queue.close(1)
    assert await queue.send_due() == 1
    assert queued_rows(store_path)[0]["done_at"] is None
    clock.advance(60)
    assert await queue.send_due() == 1
    [row] = queued_rows(store_path)
    assert row["failure"].startswith("gave up after 2 attempts")
    assert queue.depth == 0
    assert issue(github_sandbox).state == "open"


async def test_row_of_an_unknown_kind_is_abandoned_not_retried(
    open_stores: Callable[..., TicketStore], client: GitHubClient, store_path: Path
) -> None:
    """A row written by a newer ticketproxy is given up with a reason, never crashing the queue."""
    store = open_stores()
    store.enqueue_write("pin", issue_number=1, payload="{}", now=ManualClock()())
    queue = WriteQueue(store=store, github=client, clock=ManualClock())
    assert await queue.send_due() == 1
    assert "unknown write kind" in queued_rows(store_path)[0]["failure"]


# --- every kind of write -----------------------------------------------------------------------


async def test_lock_and_reaction_are_sent(
    github_sandbox: RunningSandbox, client: GitHubClient, open_stores: Callable[..., TicketStore]
) -> None:
    """Locking an issue and reacting to a comment go through the queue too."""
    row = issue(github_sandbox, 1)
    state = github_sandbox.sandbox.state
    alice = state.find_user("alice")
    assert alice is not None
    comment = state.store.create_comment(row, body="hi", author=author_of(alice), now=state.now())
    queue = WriteQueue(store=open_stores(), github=client, clock=ManualClock())
    queue.lock(1)
    queue.react(1, comment.id, "eyes")
    assert await queue.send_due() == 2
    assert issue(github_sandbox).locked
    reactions = f"/repos/acme/agents/issues/comments/{comment.id}/reactions"
    assert statuses(github_sandbox, "POST", reactions) == [201]


# --- the worker and drain ----------------------------------------------------------------------


async def test_drain_waits_until_a_deferred_write_is_sent(
    github_sandbox: RunningSandbox, bot_token: str, open_stores: Callable[..., TicketStore]
) -> None:
    """drain() returns only once a write held back by a 429 has gone out."""
    issue(github_sandbox, 1)
    github_sandbox.sandbox.inject_fault(
        method="POST", path=COMMENTS_OF_1, status=429, headers={"retry-after": "0"}
    )
    # One try per call, so the 429 reaches the queue instead of the client's own retry.
    client = GitHubClient(
        api_url=github_sandbox.api_url, token=bot_token, repo=REPO, attempts=1, sleep=no_sleep
    )
    queue = WriteQueue(store=open_stores(), github=client, first_backoff=0.2)
    queue.start()
    try:
        queue.comment(1, "drained")
        await asyncio.wait_for(queue.drain(), timeout=5)
        assert statuses(github_sandbox, "POST", COMMENTS_OF_1) == [429, 201]
        assert [c.body for c in comments_on(github_sandbox)] == ["drained"]
        assert queue.depth == 0
    finally:
        await queue.stop()
        await client.close()


async def test_worker_outlives_a_store_outage_and_sends_what_was_queued(
    client: GitHubClient, github_sandbox: RunningSandbox, open_stores: Callable[..., TicketStore]
) -> None:
    """The database down for a moment pauses the queue's worker; it does not end it."""
    issue(github_sandbox, 1)
    queue = WriteQueue(store=open_stores(DownForAMoment), github=client, first_backoff=0.05)
    queue.start()
    try:
        queue.comment(1, "after the outage")
        await asyncio.wait_for(queue.drain(), timeout=5)
        assert [c.body for c in comments_on(github_sandbox)] == ["after the outage"]
    finally:
        await queue.stop()


async def test_drain_without_a_running_worker_says_so(
    client: GitHubClient, open_stores: Callable[..., TicketStore]
) -> None:
    """Draining a queue nobody works on raises instead of waiting forever."""
    queue = WriteQueue(store=open_stores(), github=client, clock=ManualClock())
    queue.close(1)
    with pytest.raises(RuntimeError, match="not running"):
        await queue.drain()


# --- rate-limit-aware polling (ticketing.github.client.poll_delay) -----------------------------


def test_poll_keeps_its_interval_while_the_budget_is_ample() -> None:
    """Above 20 % of the primary limit the poll runs at its configured interval."""
    assert poll_delay(5.0, remaining=4000, limit=5000, reset_in=1800.0) == 5.0


def test_poll_stretches_to_four_times_below_twenty_percent() -> None:
    """Below 20 % of the limit the poll runs at most every 4x the interval."""
    assert poll_delay(5.0, remaining=999, limit=5000, reset_in=1800.0) == 20.0


def test_poll_waits_for_the_reset_below_five_percent() -> None:
    """Below 5 % of the limit the poll waits until GitHub resets the budget."""
    assert poll_delay(5.0, remaining=249, limit=5000, reset_in=1800.0) == 1800.0


def test_poll_below_five_percent_never_runs_faster_than_the_stretched_interval() -> None:
    """A reset that is moments away (or past) still waits 4x the interval."""
    assert poll_delay(5.0, remaining=10, limit=5000, reset_in=-3.0) == 20.0


def test_poll_keeps_its_interval_when_github_sent_no_budget() -> None:
    """Without x-ratelimit headers nothing is known, so nothing is stretched."""
    assert poll_delay(5.0, remaining=None, limit=None, reset_in=None) == 5.0
    assert poll_delay(5.0, remaining=3, limit=0, reset_in=None) == 5.0


async def test_client_reports_limit_remaining_and_reset_after_a_poll(
    github_sandbox: RunningSandbox, client: GitHubClient
) -> None:
    """One poll tells the client GitHub's limit, what is left, and when it resets."""
    await client.list_comments(since=None, etag=None)
    assert client.rate_limit == 5000
    assert client.rate_remaining is not None
    assert 0 < client.rate_remaining < 5000
    reset_in = client.reset_in(now=datetime.now(UTC))
    assert reset_in is not None
    assert 0 < reset_in <= 3600


# --- the write budget (proxy.settings) -------------------------------------------------------


def test_write_budget_is_read_from_the_environment() -> None:
    """TICKETPROXY_WRITES_PER_MINUTE/HOUR set the pace; the defaults keep 10% under GitHub's."""
    assert (Settings.from_env({}).writes_per_minute, Settings.from_env({}).writes_per_hour) == (
        72.0,
        450.0,
    )
    settings = Settings.from_env(
        {"TICKETPROXY_WRITES_PER_MINUTE": "20", "TICKETPROXY_WRITES_PER_HOUR": "200"}
    )
    assert (settings.writes_per_minute, settings.writes_per_hour) == (20.0, 200.0)


def test_write_budget_that_is_not_a_positive_number_names_the_variable() -> None:
    """A bad value fails at start-up with the variable's name."""
    with pytest.raises(ConfigError, match="TICKETPROXY_WRITES_PER_HOUR"):
        Settings.from_env({"TICKETPROXY_WRITES_PER_HOUR": "lots"})
    with pytest.raises(ConfigError, match="TICKETPROXY_WRITES_PER_MINUTE"):
        Settings.from_env({"TICKETPROXY_WRITES_PER_MINUTE": "0"})
