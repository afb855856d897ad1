"""PostgreSQL coordination under a burst: many keys, announcements and writes, few connections.

Each test runs against a fresh database of the session's real PostgreSQL server
(``tests/helpers/postgres.py``).
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from ticketing.errors import GitHubUnavailable, StoreUnavailable
from ticketing.github.throttle import WriteThrottle
from ticketing.postgres_batches import (
    RELEASE_MANY,
    RENEW_MANY,
    TAKE_MANY,
    BatchedKeyLocks,
    Run,
)
from ticketing.postgres_coordination import PostgresCoordinator
from ticketing.postgres_write_budget import PostgresSendLedger

BURST = 1000


async def test_a_burst_of_distinct_keys_is_not_refused_for_want_of_pool_slots(
    postgres_url: str,
) -> None:
    """A thousand requests locking distinct keys at once all get them through one connection."""
    coordinator = PostgresCoordinator(postgres_url, timeout=0.2, max_connections=1)
    # Connected before the burst, as a replica is by its poll lease at start-up.
    assert await coordinator.hold_poll_lease("replica", timedelta(seconds=30))
    held = 0

    async def hold(index: int) -> None:
        nonlocal held
        async with coordinator.hold_key(f"key-{index}"):
            held += 1
            await asyncio.sleep(0.05)

    try:
        results = await asyncio.gather(*(hold(i) for i in range(BURST)), return_exceptions=True)
    finally:
        await coordinator.close()
    refused = [r for r in results if isinstance(r, BaseException)]
    assert not refused, f"{len(refused)} refused, the first: {refused[0]!r}"
    assert held == BURST


async def test_a_burst_of_announcements_is_not_refused_for_want_of_pool_slots(
    postgres_url: str,
) -> None:
    """A thousand tickets announced at once all go out through one connection, and are heard."""
    coordinator = PostgresCoordinator(postgres_url, timeout=0.2, max_connections=1)
    assert await coordinator.hold_poll_lease("replica", timedelta(seconds=30))
    subscription = await coordinator.subscribe()
    heard: set[int] = set()

    async def hear() -> None:
        async for ticket_id in subscription:
            heard.add(ticket_id)
            if len(heard) == BURST:
                return

    listener = asyncio.create_task(hear())
    try:
        results = await asyncio.gather(
            *(coordinator.publish(i) for i in range(BURST)), return_exceptions=True
        )
        refused = [r for r in results if isinstance(r, BaseException)]
        assert not refused, f"{len(refused)} refused, the first: {refused[0]!r}"
        await asyncio.wait_for(listener, timeout=10)
    finally:
        listener.cancel()
        await subscription.close()
        await coordinator.close()
    assert heard == set(range(BURST))


async def test_a_key_released_here_is_taken_by_its_next_request_without_polling(
    postgres_url: str,
) -> None:
    """The release, sent later, still goes before the next take of its key in this process."""
    coordinator = PostgresCoordinator(postgres_url, key_lock_retry=30.0)
    order: list[int] = []

    async def hold(index: int) -> None:
        async with coordinator.hold_key("same-key"):
            order.append(index)

    started = time.monotonic()
    try:
        await asyncio.wait_for(asyncio.gather(*(hold(i) for i in range(5))), timeout=10)
    finally:
        await coordinator.close()
    assert sorted(order) == list(range(5))
    assert time.monotonic() - started < 5  # no take failed and waited its 30 s retry


async def test_a_lock_held_past_its_ttl_is_renewed_not_lost(postgres_url: str) -> None:
    """A replica opening an issue for longer than the lock's TTL keeps the key from another."""
    one = PostgresCoordinator(postgres_url, key_lock_ttl=timedelta(seconds=0.3))
    other = PostgresCoordinator(postgres_url, key_lock_retry=0.02)
    order: list[str] = []

    async def second() -> None:
        async with other.hold_key("slow-key"):
            order.append("other")

    try:
        async with one.hold_key("slow-key"):
            waiter = asyncio.create_task(second())
            await asyncio.sleep(1.0)  # more than three TTLs
            order.append("one")
        await asyncio.wait_for(waiter, timeout=5)
    finally:
        await one.close()
        await other.close()
    assert order == ["one", "other"]


async def test_a_request_gone_while_its_lock_was_taken_leaves_the_key_free(
    postgres_url: str,
) -> None:
    """A client that disconnects while its key's lock is being taken leaves no lock behind."""
    coordinator = PostgresCoordinator(postgres_url)
    try:
        for turns in range(8):
            entered = asyncio.Event()

            async def hold(key: str, entered: asyncio.Event = entered) -> None:
                async with coordinator.hold_key(key):
                    entered.set()
                    await asyncio.sleep(30)

            task = asyncio.create_task(hold(f"gone-{turns}"))
            for _ in range(turns):
                await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    finally:
        await coordinator.close()  # sends the releases still queued
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        left = connection.execute(
            "SELECT name FROM coordination_leases WHERE name LIKE 'key:gone-%'"
        ).fetchall()
    assert left == []


async def test_two_replicas_taking_the_same_keys_at_once_do_not_deadlock(
    postgres_url: str,
) -> None:
    """Replicas taking and releasing overlapping keys in batches all get each key in turn."""
    replicas = [
        PostgresCoordinator(postgres_url, key_lock_retry=0.01),
        PostgresCoordinator(postgres_url, key_lock_retry=0.01),
    ]
    inside: set[str] = set()

    async def hold(coordinator: PostgresCoordinator, key: str) -> None:
        async with coordinator.hold_key(key):
            assert key not in inside, f"{key} held by both replicas at once"
            inside.add(key)
            await asyncio.sleep(0.01)
            inside.discard(key)

    keys = [f"shared-{i}" for i in range(200)]
    try:
        await asyncio.wait_for(
            asyncio.gather(
                *(hold(replicas[0], key) for key in keys),
                *(hold(replicas[1], key) for key in reversed(keys)),
            ),
            timeout=30,
        )
    finally:
        for coordinator in replicas:
            await coordinator.close()


async def test_an_unreachable_database_refuses_every_key_of_a_batch_with_back_pressure() -> None:
    """Requests whose key locks went in one batch to a database that is down all get a 429."""
    nowhere = PostgresCoordinator("postgresql://postgres@127.0.0.1:1/none", timeout=0.5)

    async def hold(index: int) -> None:
        async with nowhere.hold_key(f"key-{index}"):
            pass

    try:
        results = await asyncio.wait_for(
            asyncio.gather(*(hold(i) for i in range(20)), return_exceptions=True), timeout=10
        )
    finally:
        await nowhere.close()
    assert all(isinstance(r, StoreUnavailable) for r in results), results
    with pytest.raises(StoreUnavailable):
        await nowhere.publish(1)


async def test_a_burst_of_writes_is_not_refused_for_want_of_budget_connections(
    postgres_url: str,
) -> None:
    """A thousand writes reserving their slot at once all get it from the budget's small pool."""
    throttle = WriteThrottle(
        per_minute=10**6, per_hour=10**6, ledger=PostgresSendLedger(postgres_url, timeout=0.2)
    )
    try:
        await throttle.acquire()  # connected before the burst, as by a replica's first write
        results = await asyncio.gather(
            *(throttle.acquire() for _ in range(BURST)), return_exceptions=True
        )
    finally:
        await throttle.close()
    refused = [r for r in results if isinstance(r, BaseException)]
    assert not refused, f"{len(refused)} refused, the first: {refused[0]!r}"


async def test_writes_reserved_together_still_spend_the_budget_once(postgres_url: str) -> None:
    """Reservations decided in one transaction see each other: 10 a minute let 10 through."""
    throttle = WriteThrottle(
        per_minute=10, per_hour=100, max_wait=0.5, ledger=PostgresSendLedger(postgres_url)
    )
    try:
        results = await asyncio.gather(
            *(throttle.acquire() for _ in range(40)), return_exceptions=True
        )
    finally:
        await throttle.close()
    assert results.count(None) == 10
    assert all(isinstance(r, GitHubUnavailable) for r in results if r is not None)


async def test_a_request_cancelled_as_its_lock_is_granted_leaves_the_key_free(
    postgres_url: str,
) -> None:
    """A client gone in the very turn its key's lock is granted does not leave the lock held."""
    requests: list[asyncio.Task[None]] = []
    connection = await psycopg.AsyncConnection.connect(postgres_url, autocommit=True)

    async def run(what: str, query: str, *parameters: Any) -> list[tuple[Any, ...]]:
        cursor = await connection.execute(query, parameters)
        rows = await cursor.fetchall() if cursor.description is not None else []
        if query == TAKE_MANY and rows:
            # Granted: the client goes before its request resumes to hold the lock.
            asyncio.get_running_loop().call_soon(requests[0].cancel)
        return rows

    locks = BatchedKeyLocks(run, ttl=30.0, retry=0.05)

    async def hold() -> None:
        async with locks.hold("granted"):
            await asyncio.sleep(30)

    requests.append(asyncio.create_task(hold()))
    try:
        await asyncio.wait_for(asyncio.gather(*requests, return_exceptions=True), timeout=10)
    finally:
        await locks.close()  # sends the releases still queued
    left = await (await connection.execute("SELECT name FROM coordination_leases")).fetchall()
    await connection.close()
    assert left == [], "the lock stays held until its 30 s lapse, and its key's requests wait"


def refusing_once(
    connection: psycopg.AsyncConnection[Any], statement: str, refused: list[str]
) -> Run:
    """Run statements on ``connection``, the first ``statement`` read-only (as on a standby)."""

    async def run(what: str, query: str, *parameters: Any) -> list[tuple[Any, ...]]:
        read_only = query == statement and not refused
        if read_only:
            refused.append(what)
            await connection.execute("SET default_transaction_read_only = on")
        try:
            cursor = await connection.execute(query, parameters)  # ReadOnlySqlTransaction
        finally:
            if read_only:
                await connection.execute("SET default_transaction_read_only = off")
        return await cursor.fetchall() if cursor.description is not None else []

    return run


async def test_a_renewal_refused_by_a_read_only_database_does_not_end_the_renewals(
    postgres_url: str,
) -> None:
    """A renewal refused other than by an outage (a read-only standby) leaves later ones going."""
    connection = await psycopg.AsyncConnection.connect(postgres_url, autocommit=True)
    refused: list[str] = []
    one = BatchedKeyLocks(refusing_once(connection, RENEW_MANY, refused), ttl=1.0, retry=0.02)
    other = PostgresCoordinator(postgres_url, key_lock_retry=0.02)
    order: list[str] = []

    async def second() -> None:
        async with other.hold_key("renewed-key"):
            order.append("other")

    try:
        async with one.hold("renewed-key"):
            waiter = asyncio.create_task(second())
            await asyncio.sleep(2.5)  # more than two TTLs
            order.append("one")
        await asyncio.wait_for(waiter, timeout=5)
    finally:
        await one.close()
        await other.close()
        await connection.close()
    assert refused, "no renewal was refused: nothing shown"
    assert order == ["one", "other"], "the lock lapsed while held: two requests opened the key"


async def test_a_release_refused_by_a_read_only_database_does_not_strand_the_next_take(
    postgres_url: str,
) -> None:
    """A release refused other than by an outage still lets the key's next request through."""
    connection = await psycopg.AsyncConnection.connect(postgres_url, autocommit=True)
    refused: list[str] = []
    locks = BatchedKeyLocks(refusing_once(connection, RELEASE_MANY, refused), ttl=1.0, retry=0.02)
    order: list[int] = []

    async def hold(index: int) -> None:
        async with locks.hold("released-key"):
            order.append(index)

    try:
        await asyncio.wait_for(asyncio.gather(hold(1), hold(2)), timeout=10)
    finally:
        await locks.close()
        await connection.close()
    assert refused, "no release was refused: nothing shown"
    assert order == [1, 2]  # the second waited for the first's lock to lapse, not for ever
