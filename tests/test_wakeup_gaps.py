"""No wake-up is lost while a replica's subscription reconnects.

An announcement made while a replica's LISTEN connection (PostgreSQL) or pub/sub connection
(Redis) is down never reaches it. Once the subscription listens again it yields
``RecheckAll``, and the replica re-reads every ticket it waits on: a waiter the missed
announcement would have released is released then, not at its deadline. Real servers
throughout: the session's PostgreSQL (``tests/helpers/postgres.py``) and a ``redis-server``
per test (``tests/helpers/redis_server.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from redis import asyncio as aioredis

from embedded_github import RunningSandbox, SandboxConfig
from proxy.settings import Settings
from tests.helpers.cuttable_link import CuttableLink
from tests.helpers.postgres import PostgresServer
from tests.helpers.redis_server import RedisServer
from tests.helpers.replicas import PROMPT, SECRET, start_replicas, until
from tests.helpers.stack import Stack, start_stack, stop_stack
from ticketing.coordination import Announcement, Coordinator, RecheckAll, Subscription
from ticketing.errors import TicketingError
from ticketing.postgres_coordination import PostgresCoordinator
from ticketing.redis_coordination import RedisCoordinator

# How long a cut LISTEN connection waits before it reconnects, in the tests that announce
# during that gap: long enough for the announcement to land in it on a busy machine.
GAP = 4.0


def terminate_listeners(url: str) -> int:
    """Cut every LISTEN connection to the database of ``url``, waiting until each has gone."""
    with psycopg.connect(url, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
            " WHERE query LIKE 'LISTEN%%' AND datname = current_database()"
        ).fetchall()
    assert rows
    assert all(terminated for (terminated,) in rows)
    return len(rows)


class Heard:
    """What a subscription yields, collected in the background."""

    def __init__(self, subscription: Subscription) -> None:
        self.queue: asyncio.Queue[Announcement] = asyncio.Queue()
        self._subscription = subscription
        self._task = asyncio.create_task(self._collect())

    async def _collect(self) -> None:
        async for announced in self._subscription:
            self.queue.put_nowait(announced)

    async def next(self, within: float) -> Announcement:
        """Return the next announcement, failing after ``within`` seconds."""
        return await asyncio.wait_for(self.queue.get(), timeout=within)

    async def close(self) -> None:
        """Stop collecting and close the subscription."""
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await self._subscription.close()


async def publish_until_heard(publisher: Coordinator, heard: Heard, ticket_id: int) -> None:
    """Publish ``ticket_id`` until it is heard (the server may be coming back)."""
    async with asyncio.timeout(15):
        while True:
            try:
                await publisher.publish(ticket_id)
                if await heard.next(within=0.5) == ticket_id:
                    return
            except (TimeoutError, TicketingError):  # not back yet, or not heard: again
                await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def listening(announcer: Coordinator, listener: Coordinator) -> AsyncIterator[Heard]:
    """Yield what ``listener`` hears; close it, the announcer and the listener after."""
    heard = Heard(await listener.subscribe())
    try:
        yield heard
    finally:
        await heard.close()
        await announcer.close()
        await listener.close()


async def test_an_announcement_made_while_the_listen_backend_was_terminated_ends_in_a_recheck(
    postgres_url: str,
) -> None:
    """A NOTIFY sent while the LISTEN backend was cut is missed, and RecheckAll says so."""
    announcer = PostgresCoordinator(postgres_url)
    listener = PostgresCoordinator(postgres_url, reconnect=1.0)
    async with listening(announcer, listener) as heard:
        terminate_listeners(postgres_url)
        await announcer.publish(7)  # within the second the listener waits to reconnect
        assert await heard.next(within=10) == RecheckAll(
            "the LISTEN connection to PostgreSQL was reconnected"
        )
        await announcer.publish(8)
        assert await heard.next(within=5) == 8


async def test_a_postgres_restart_under_the_listen_connection_ends_in_a_recheck(
    restarts_server: PostgresServer, postgres_url: str
) -> None:
    """PostgreSQL restarted (every connection cut): the subscription listens again, rechecks."""
    announcer = PostgresCoordinator(postgres_url, timeout=1.0)
    listener = PostgresCoordinator(postgres_url, reconnect=0.2)
    async with listening(announcer, listener) as heard:
        restarts_server.stop()
        restarts_server.start()
        assert isinstance(await heard.next(within=15), RecheckAll)
        await publish_until_heard(announcer, heard, 9)


async def test_a_pubsub_connection_killed_by_redis_ends_in_a_recheck(redis_url: str) -> None:
    """CLIENT KILL TYPE pubsub: redis-py subscribes again by itself, and RecheckAll follows."""
    announcer = RedisCoordinator.from_url(redis_url)
    listener = RedisCoordinator.from_url(redis_url)
    async with listening(announcer, listener) as heard:
        await announcer.publish(1)
        assert await heard.next(within=5) == 1
        async with aioredis.Redis.from_url(redis_url) as admin:
            assert await admin.client_kill_filter(_type="pubsub") == 1
        assert await heard.next(within=10) == RecheckAll(
            "the pub/sub connection to Redis was reconnected"
        )
        await announcer.publish(2)
        assert await heard.next(within=5) == 2


async def test_a_redis_crash_and_restart_under_the_subscription_ends_in_a_recheck(
    redis_server: RedisServer,
) -> None:
    """redis-server killed and started again: the subscription comes back and rechecks."""
    announcer = RedisCoordinator.from_url(redis_server.url)
    listener = RedisCoordinator.from_url(redis_server.url, reconnect=0.2)
    async with listening(announcer, listener) as heard:
        redis_server.stop()
        await asyncio.sleep(0.3)
        assert redis_server.start()
        assert isinstance(await heard.next(within=20), RecheckAll)
        await publish_until_heard(announcer, heard, 3)


async def test_a_redis_subscription_confirmed_once_yields_no_recheck(redis_url: str) -> None:
    """A subscription that never dropped yields the announcements only, no RecheckAll."""
    announcer = RedisCoordinator.from_url(redis_url)
    listener = RedisCoordinator.from_url(redis_url)
    async with listening(announcer, listener) as heard:
        for ticket_id in (4, 5):
            await announcer.publish(ticket_id)
        assert [await heard.next(within=5) for _ in range(2)] == [4, 5]
        assert heard.queue.empty()


def slow_to_reconnect(settings: Settings) -> Coordinator:
    """Coordinate through the database, waiting GAP seconds before listening again."""
    assert settings.database_url is not None
    return PostgresCoordinator(settings.database_url, reconnect=GAP)


async def answered_in_a_gap(
    github_sandbox: RunningSandbox, hooked: Stack, waiting: Stack, cut: Callable[[], None]
) -> tuple[asyncio.Task[Any], float]:
    """A (deaf to webhooks) asks; once the first poll is done, ``cut`` A off from the others
    and B accepts a signed answer. Return A's waiting request and when the cut began."""
    if waiting.webhook is not None:
        github_sandbox.sandbox.remove_webhook(waiting.webhook)
        waiting.webhook = None
    ask = asyncio.create_task(
        waiting.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    await waiting.wait_for_issue(1)
    await until(lambda: hooked.desk.polls + waiting.desk.polls >= 1)
    await asyncio.sleep(0.2)  # the first poll done: only the webhook finds the answer
    began = time.monotonic()
    cut()
    await hooked.answer(1, "main.py and README.md")
    await until(lambda: hooked.desk.answers_accepted == 1)
    return ask, began


@contextlib.asynccontextmanager
async def cut_off_from_redis(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    redis_url: str,
    hosts: tuple[Path, Path],
    **settings: Any,
) -> AsyncIterator[tuple[Stack, Stack, CuttableLink]]:
    """Yield B (on Redis, webhooks to it) and A (reaching Redis through a link a test cuts)."""
    link = CuttableLink(int(redis_url.rsplit(":", 1)[1].split("/")[0]))
    await link.start()
    hooked = await start_stack(
        github_sandbox, sandbox_config, hosts[0], redis_url=redis_url, **settings
    )
    waiting = await start_stack(
        github_sandbox,
        sandbox_config,
        hosts[1],
        keys=hooked.keys,
        keyring_path=hooked.settings.keyring_path,
        redis_url=f"redis://127.0.0.1:{link.port}/0",
        **settings,
    )
    try:
        yield hooked, waiting, link
    finally:
        await stop_stack(waiting)
        await stop_stack(hooked)
        await link.close()


async def test_an_answer_announced_while_the_listen_connection_was_cut_releases_the_waiter(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, postgres_url: str, tmp_path: Path
) -> None:
    """Replica B accepts an answer while A's LISTEN is cut; A's waiter is freed on reconnect."""
    hosts: list[tuple[Path, dict[str, Any]]] = []
    for name in ("b", "a"):
        (tmp_path / name).mkdir()
        hosts.append((tmp_path / name, {"database_url": postgres_url}))
    hooked, waiting = await start_replicas(
        github_sandbox,
        sandbox_config,
        hosts,
        webhook_secret=SECRET,
        poll_interval=3600.0,
        poll_lease=1.0,
        coordinator_factory=slow_to_reconnect,
    )
    try:
        ask, cut = await answered_in_a_gap(
            github_sandbox, hooked, waiting, lambda: terminate_listeners(postgres_url)
        )
        assert time.monotonic() - cut < GAP, "the answer came after the gap: nothing shown"
        assert not ask.done()  # B's NOTIFY fell in the gap: A did not hear it
        answer = await asyncio.wait_for(ask, timeout=GAP + 5)
        assert answer.choices[0].message.content == "main.py and README.md"
        assert time.monotonic() - cut < GAP + 5  # its deadline is a minute away
        assert (hooked.desk.answers_accepted, waiting.desk.answers_accepted) == (1, 0)
    finally:
        await stop_stack(waiting)
        await stop_stack(hooked)


async def test_an_answer_announced_while_a_replica_was_cut_off_from_redis_releases_its_waiter(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, redis_url: str, tmp_path: Path
) -> None:
    """SQLite + Redis: B's announcement falls while A is cut off from Redis; A rechecks."""
    settings: dict[str, Any] = {"poll_interval": 3600.0, "webhook_secret": SECRET}
    async with cut_off_from_redis(
        github_sandbox, sandbox_config, redis_url, (tmp_path, tmp_path), **settings
    ) as (hooked, waiting, link):
        ask, cut = await answered_in_a_gap(
            github_sandbox, hooked, waiting, lambda: link.cut(hold=GAP)
        )
        assert time.monotonic() - cut < GAP, "the answer came after the gap: nothing shown"
        assert not ask.done()  # B's PUBLISH fell in the gap: A did not hear it
        answer = await asyncio.wait_for(ask, timeout=GAP + 20)
        assert answer.choices[0].message.content == "main.py and README.md"
        assert (hooked.desk.answers_accepted, waiting.desk.answers_accepted) == (1, 0)


async def test_a_recheck_while_the_store_is_still_down_keeps_the_waiter_and_reads_again(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    redis_url: str,
    postgres_url: str,
    restarts_server: PostgresServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A's subscription is back before its store: the recheck waits for the store, fails no one."""
    settings: dict[str, Any] = {
        "poll_interval": 3600.0,
        "webhook_secret": SECRET,
        "database_url": postgres_url,
    }
    (tmp_path / "b").mkdir()
    (tmp_path / "a").mkdir()
    async with cut_off_from_redis(
        github_sandbox, sandbox_config, redis_url, (tmp_path / "b", tmp_path / "a"), **settings
    ) as (hooked, waiting, link):
        ask, cut = await answered_in_a_gap(
            github_sandbox, hooked, waiting, lambda: link.cut(hold=GAP)
        )
        await asyncio.to_thread(restarts_server.stop)  # before A is back on Redis
        assert time.monotonic() - cut < GAP, "the answer came after the gap: nothing shown"
        rechecked = "cannot re-read the tickets"
        await until(lambda: ask.done() or rechecked in caplog.text, within=GAP + 20)
        assert not ask.done(), "the waiter was failed over the store's passing outage"
        await asyncio.to_thread(restarts_server.start)
        answer = await asyncio.wait_for(ask, timeout=20)
        assert answer.choices[0].message.content == "main.py and README.md"
