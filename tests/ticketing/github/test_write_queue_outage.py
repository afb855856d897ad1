"""The write queue's worker on PostgreSQL while the database is down: it waits, it says so
plainly, and it sends what was queued once the database is back."""

from __future__ import annotations

import asyncio
import logging

import pytest

from embedded_github import RunningSandbox
from tests.helpers.postgres import PostgresServer
from tests.helpers.sandbox_issues import comments_on, issue
from ticketing.github.client import GitHubClient
from ticketing.github.write_queue import WriteQueue
from ticketing.store.postgres import PostgresTicketStore


async def test_database_down_under_the_write_queue_is_a_warning_not_an_error(
    client: GitHubClient,
    github_sandbox: RunningSandbox,
    restarts_server: PostgresServer,
    postgres_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An outage is back-pressure: no traceback logged as a failure, and nothing queued lost."""
    store = PostgresTicketStore(postgres_url)
    queue = WriteQueue(store=store, github=client, first_backoff=0.05)
    queue.comment(issue(github_sandbox).number, "after the outage")
    try:
        with caplog.at_level(logging.WARNING, logger="ticketing"):
            queue.start()
            # Stopped before the worker first runs (nothing awaited in between), so its
            # first look at the store finds the database down.
            restarts_server.stop()
            await asyncio.sleep(1.5)
            await asyncio.to_thread(restarts_server.start)
            # The worker finds the database back by itself and sends the queued comment.
            deadline = asyncio.get_running_loop().time() + 15
            while not comments_on(github_sandbox):
                assert asyncio.get_running_loop().time() < deadline, "the comment never went"
                await asyncio.sleep(0.1)
        failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert failures == [], [r.getMessage() for r in failures]
        assert any("waits for its store" in r.getMessage() for r in caplog.records)
        assert [c.body for c in comments_on(github_sandbox)] == ["after the outage"]
    finally:
        await queue.stop()
        store.close()
