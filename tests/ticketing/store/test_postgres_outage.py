"""A PostgreSQL outage costs the replica one wait, not one per store call.

The store's calls run on the event loop: each that waited the pool's full timeout for a
connection to a database that is down stalled every request, heartbeat and probe of the
replica. ``Outage`` (pure, tested with a manual clock) makes the calls after the first fail
at once, and the real database shows it: a stopped server, many calls, one wait.
"""

from __future__ import annotations

import time

import pytest

from tests.helpers.postgres import PostgresServer
from ticketing.errors import StoreUnavailable
from ticketing.store.postgres import PostgresTicketStore
from ticketing.store.postgres_outage import Outage

WAIT = 2.0


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def no_idle() -> int:
    """The pool has no idle connection (the database is down)."""
    return 0


def test_calls_wait_the_full_time_while_the_database_answers() -> None:
    """Before any outage a call may wait the pool's full timeout for a connection."""
    assert Outage(wait=WAIT).wait(idle=no_idle) == WAIT


def test_after_a_failed_wait_calls_fail_at_once_but_one_probe_a_second() -> None:
    """During an outage calls fail at once, except one short probe per second."""
    clock = Clock()
    outage = Outage(wait=WAIT, probe_wait=0.1, probe_every=1.0, clock=clock)
    outage.began()
    assert [outage.wait(idle=no_idle) for _ in range(3)] == [None, None, None]
    clock.now += 1.0
    assert outage.wait(idle=no_idle) == 0.1
    assert outage.wait(idle=no_idle) is None
    clock.now += 2.5
    assert outage.lasted() == 3.5


def test_an_idle_connection_or_a_success_ends_the_fast_failures() -> None:
    """Once the pool has a connection again, calls wait normally; a success ends the outage."""
    outage = Outage(wait=WAIT, clock=Clock())
    outage.began()
    assert outage.wait(idle=lambda: 1) == WAIT
    outage.over()
    assert outage.wait(idle=no_idle) == WAIT
    assert outage.lasted() == 0.0


def test_a_burst_of_calls_to_a_database_that_is_down_costs_one_wait_not_one_each(
    postgres_url: str, restarts_server: PostgresServer
) -> None:
    """Twenty calls to a stopped server take about one pool timeout, not twenty."""
    store = PostgresTicketStore(postgres_url, wait_for_connection=1.0)
    try:
        store.count_pending()
        restarts_server.stop()
        started = time.monotonic()
        for _ in range(20):
            with pytest.raises(StoreUnavailable) as caught:
                store.count_pending()
            assert caught.value.retry_after > 0
        took = time.monotonic() - started
        # One wait of 1 s, probes of 0.1 s: about 1.1 s; a wait each would be 20 s.
        assert took < 5.0, f"20 calls took {took:.1f} s"
        assert "has not answered for" in str(caught.value)
        restarts_server.start()
        deadline = time.monotonic() + 20
        while True:
            try:
                store.count_pending()
                break
            except StoreUnavailable:
                assert time.monotonic() < deadline, "the store never came back"
                time.sleep(0.2)
    finally:
        store.close()
