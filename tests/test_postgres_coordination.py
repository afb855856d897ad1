"""Replicas coordinated through PostgreSQL alone: leases, key locks, NOTIFY, one write budget.

Each test runs against a fresh database of the session's real PostgreSQL server
(``tests/helpers/postgres.py``), with no Redis anywhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

from embedded_github import RunningSandbox, SandboxConfig
from proxy.desk_factories import build_coordinator
from proxy.settings import Settings
from tests.helpers.replicas import PROMPT, SECRET, open_ticket, start_replicas, until
from tests.helpers.stack import Stack, stop_stack
from tests.helpers.write_budget import take_turns
from ticketing.errors import StoreUnavailable
from ticketing.github.throttle import WriteThrottle
from ticketing.postgres_coordination import PostgresCoordinator
from ticketing.postgres_write_budget import PostgresSendLedger


@pytest.fixture
async def two(postgres_url: str) -> AsyncIterator[tuple[PostgresCoordinator, PostgresCoordinator]]:
    """Yield two coordinators on one database, as two replicas have."""
    one, other = PostgresCoordinator(postgres_url), PostgresCoordinator(postgres_url)
    try:
        yield one, other
    finally:
        await one.close()
        await other.close()


async def test_the_poll_lease_passes_on_only_once_its_holder_releases_it(
    two: tuple[PostgresCoordinator, PostgresCoordinator],
) -> None:
    """A second replica cannot take the poll lease until the holder releases it."""
    one, other = two
    ttl = timedelta(seconds=30)
    assert await one.hold_poll_lease("a", ttl)
    assert not await other.hold_poll_lease("b", ttl)
    assert await one.hold_poll_lease("a", ttl)  # renewal by the holder
    await other.release_poll_lease("b")  # not the holder: changes nothing
    assert not await other.hold_poll_lease("b", ttl)
    await one.release_poll_lease("a")
    assert await other.hold_poll_lease("b", ttl)


async def test_the_poll_lease_of_a_replica_that_died_lapses(
    two: tuple[PostgresCoordinator, PostgresCoordinator],
) -> None:
    """A lease its holder stops renewing lapses after its TTL, and another replica takes it."""
    one, other = two
    assert await one.hold_poll_lease("a", timedelta(milliseconds=200))
    assert not await other.hold_poll_lease("b", timedelta(seconds=30))
    await asyncio.sleep(0.3)
    assert await other.hold_poll_lease("b", timedelta(seconds=30))


async def test_a_request_key_is_held_by_one_replica_at_a_time(
    two: tuple[PostgresCoordinator, PostgresCoordinator],
) -> None:
    """While one replica holds a request key, another waits for it."""
    one, other = two
    order: list[str] = []

    async def second() -> None:
        async with other.hold_key("key-1"):
            order.append("two")

    async with one.hold_key("key-1"):
        waiter = asyncio.create_task(second())
        await asyncio.sleep(0.2)
        order.append("one")
    await asyncio.wait_for(waiter, timeout=5)
    assert order == ["one", "two"]


async def test_a_key_lock_of_a_replica_that_died_lapses(postgres_url: str) -> None:
    """A key lock its holder stopped renewing (kill -9) is taken after its TTL."""
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(
            "INSERT INTO coordination_leases VALUES ('key:key-1', 'dead', "
            "extract(epoch FROM clock_timestamp()) + 0.3)"
        )
    survivor = PostgresCoordinator(postgres_url)
    try:
        async with asyncio.timeout(5):
            async with survivor.hold_key("key-1"):
                pass
    finally:
        await survivor.close()


async def test_an_announcement_reaches_a_subscriber_on_another_connection(
    two: tuple[PostgresCoordinator, PostgresCoordinator],
) -> None:
    """A ticket id published through one coordinator is received through another (NOTIFY)."""
    one, other = two
    subscription = await other.subscribe()
    try:
        await one.publish(42)
        assert await asyncio.wait_for(anext(aiter(subscription)), timeout=5) == 42
    finally:
        await subscription.close()


async def test_a_dropped_listen_connection_reconnects_and_hears_again(
    two: tuple[PostgresCoordinator, PostgresCoordinator], postgres_url: str
) -> None:
    """The listening connection cut by the server is opened again, and hears what follows."""
    one, other = two
    subscription = await other.subscribe()
    heard: asyncio.Queue[int] = asyncio.Queue()

    async def listen() -> None:
        async for ticket_id in subscription:
            if isinstance(ticket_id, int):  # not the RecheckAll that follows the reconnect
                heard.put_nowait(ticket_id)

    listener = asyncio.create_task(listen())
    try:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE query LIKE 'LISTEN%%' AND datname = current_database()"
            )

        async def publish_until_heard() -> int:
            while True:
                await one.publish(7)
                try:
                    return await asyncio.wait_for(heard.get(), timeout=0.5)
                except TimeoutError:
                    continue

        assert await asyncio.wait_for(publish_until_heard(), timeout=10) == 7
    finally:
        listener.cancel()
        await subscription.close()


async def test_an_unreachable_database_is_back_pressure_not_a_server_error() -> None:
    """A database that does not answer is StoreUnavailable (a 429 naming it), not a crash."""
    nowhere = PostgresCoordinator("postgresql://postgres@127.0.0.1:1/none", timeout=1.0)
    try:
        with pytest.raises(StoreUnavailable, match="PostgreSQL is unreachable"):
            await nowhere.hold_poll_lease("a", timedelta(seconds=1))
        with pytest.raises(StoreUnavailable):
            await nowhere.subscribe()
    finally:
        await nowhere.close()


async def test_a_read_only_standby_after_failover_is_back_pressure_not_a_server_error(
    postgres_url: str,
) -> None:
    """The poll lease refused as read-only (a standby after a failover) is StoreUnavailable."""
    dbname = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{dbname}" SET default_transaction_read_only = on')
    standby = PostgresCoordinator(postgres_url, timeout=1.0)
    try:
        with pytest.raises(StoreUnavailable, match="PostgreSQL"):
            await standby.hold_poll_lease("a", timedelta(seconds=1))
    finally:
        await standby.close()
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SET default_transaction_read_only = off")  # read-only by default now
            admin.execute(f'ALTER DATABASE "{dbname}" RESET default_transaction_read_only')


async def test_two_replicas_writing_share_one_budget_not_one_each(postgres_url: str) -> None:
    """Two replicas' throttles on one database let through the limit once, not twice."""
    ledgers = [PostgresSendLedger(postgres_url), PostgresSendLedger(postgres_url)]
    throttles = [
        WriteThrottle(per_minute=3, per_hour=100, max_wait=0.5, ledger=ledger) for ledger in ledgers
    ]
    turns = await take_turns(throttles)
    # Reactions take only the spare half, and there is none left.
    assert not turns.reaction_left
    assert turns.sent == 3
    assert len(turns.refused) == 3
    assert all(wait is not None and wait > 50 for wait in turns.refused)


def test_a_database_url_without_redis_selects_the_postgres_coordinator(postgres_url: str) -> None:
    """With only TICKETPROXY_DATABASE_URL, replicas coordinate through the database."""
    settings = Settings(database_url=postgres_url)
    assert isinstance(build_coordinator(settings), PostgresCoordinator)
    assert Settings.from_env({"TICKETPROXY_POLL_LEASE": "2.5"}).poll_lease == 2.5


@pytest.fixture
async def replicas(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, postgres_url: str, tmp_path: Path
) -> AsyncIterator[list[Stack]]:
    """Yield two replicas on two hosts' directories, one database, no Redis."""
    hosts = [(tmp_path / name, {"database_url": postgres_url}) for name in ("a", "b")]
    for directory, _ in hosts:
        directory.mkdir()
    running = await start_replicas(
        github_sandbox,
        sandbox_config,
        hosts,
        webhook_secret=SECRET,
        poll_interval=3600.0,
        poll_lease=1.0,
    )
    try:
        yield running
    finally:
        for stack in running:
            await stop_stack(stack)


async def test_a_webhook_on_one_replica_releases_a_client_waiting_on_another_without_redis(
    replicas: list[Stack], github_sandbox: RunningSandbox
) -> None:
    """A webhook taken by replica A releases the client waiting on B, through NOTIFY."""
    hooked, waiting = replicas
    if waiting.webhook is not None:
        github_sandbox.sandbox.remove_webhook(waiting.webhook)
        waiting.webhook = None
    ask = asyncio.create_task(
        waiting.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    await waiting.wait_for_issue(1)
    await until(lambda: hooked.desk.polls + waiting.desk.polls >= 1)
    await asyncio.sleep(0.2)
    polls = hooked.desk.polls + waiting.desk.polls
    await hooked.answer(1, "main.py and README.md")
    answer = await asyncio.wait_for(ask, timeout=10)
    assert answer.choices[0].message.content == "main.py and README.md"
    assert (hooked.desk.answers_accepted, waiting.desk.answers_accepted) == (1, 0)
    assert hooked.desk.polls + waiting.desk.polls == polls


async def test_the_poll_lease_moves_to_the_other_replica_when_its_holder_stops(
    replicas: list[Stack],
) -> None:
    """One replica polls; once it stops, the other takes the lease and polls."""
    first, _ = replicas
    await open_ticket(first)
    await until(lambda: sum(stack.desk.polls for stack in replicas) >= 1)
    holder = next(stack for stack in replicas if stack.desk.polls > 0)
    other = next(stack for stack in replicas if stack is not holder)
    assert other.desk.polls == 0
    await stop_stack(holder)
    replicas.remove(holder)
    await until(lambda: other.desk.polls >= 1, within=5.0)
