"""Several replicas sharing one Redis, and one store: SQLite on one host, or PostgreSQL.

Each test starts a real ``redis-server`` on a free loopback port, without persistence
(``tests/helpers/redis_server.py``, which skips where it is not installed).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import jwt
import pytest

from auth.comment import split_signed_comment
from embedded_github import RunningSandbox, SandboxConfig
from proxy.errors import ConfigError
from proxy.settings import Settings
from tests.helpers.replicas import PROMPT, SECRET, Host, open_ticket, start_replicas, until
from tests.helpers.stack import Stack, stop_stack
from ticketing.redis_coordination import RedisCoordinator
from ticketing.store.model import TicketState


@pytest.fixture(params=["sqlite", "postgres"])
def hosts(request: pytest.FixtureRequest, tmp_path: Path) -> list[Host]:
    """Return where each of two replicas runs: its directory and its store's settings.

    On SQLite both share one directory (one host, one volume); on PostgreSQL each has a
    directory of its own, as on two hosts, and the store is one database.
    """
    if request.param == "sqlite":
        return [(tmp_path, {}), (tmp_path, {})]
    url: str = request.getfixturevalue("postgres_url")
    directories = [tmp_path / "host-a", tmp_path / "host-b"]
    for directory in directories:
        directory.mkdir()
    return [(directory, {"database_url": url}) for directory in directories]


@pytest.fixture
async def replicas(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    hosts: list[Host],
    redis_url: str,
) -> AsyncIterator[list[Stack]]:
    """Yield two replicas on two ports sharing one Redis and one store, polling often."""
    running = await start_replicas(github_sandbox, sandbox_config, hosts, redis_url=redis_url)
    try:
        yield running
    finally:
        for stack in running:
            await stop_stack(stack)


def jti_of(body: str) -> str:
    """Return the jti claim of a signed comment body (read, not verified)."""
    _, token = split_signed_comment(body)
    assert token is not None
    return str(jwt.decode(token, options={"verify_signature": False})["jti"])


async def test_a_request_sent_to_two_replicas_at_once_opens_one_issue(
    replicas: list[Stack],
) -> None:
    """The same request sent to both replicas at once opens one issue, and both get its answer."""
    first, second = replicas
    asks = [
        asyncio.create_task(stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT))
        for stack in replicas
    ]
    await first.wait_for_issue(1)
    await first.answer(1, "main.py and README.md")
    answers = await asyncio.wait_for(asyncio.gather(*asks), timeout=15)
    assert [a.choices[0].message.content for a in answers] == ["main.py and README.md"] * 2
    assert [issue.number for issue in await first.issues()] == [1]
    assert second.desk.store is not first.desk.store


async def test_a_webhook_on_one_replica_releases_the_client_waiting_on_another(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, hosts: list[Host], redis_url: str
) -> None:
    """A webhook delivered to replica A releases the client waiting on replica B at once."""
    # Both poll once an hour: after the first poll only the webhook and pub/sub can act.
    # Both take webhooks: only the first gets the sandbox's deliveries.
    hooked, waiting = await start_replicas(
        github_sandbox,
        sandbox_config,
        hosts,
        redis_url=redis_url,
        webhook_secret=SECRET,
        poll_interval=3600.0,
    )
    if waiting.webhook is not None:
        github_sandbox.sandbox.remove_webhook(waiting.webhook)
        waiting.webhook = None
    try:
        client = waiting.openai()
        ask = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
        await waiting.wait_for_issue(1)
        await until(lambda: hooked.desk.polls + waiting.desk.polls >= 1)
        await asyncio.sleep(0.2)  # let the first poll finish before the answer exists
        polls = hooked.desk.polls + waiting.desk.polls
        await hooked.answer(1, "main.py and README.md")
        answer = await asyncio.wait_for(ask, timeout=10)
        assert answer.choices[0].message.content == "main.py and README.md"
        assert (hooked.desk.answers_accepted, waiting.desk.answers_accepted) == (1, 0)
        assert hooked.desk.polls + waiting.desk.polls == polls
    finally:
        await stop_stack(waiting)
        await stop_stack(hooked)


async def test_only_the_lease_holder_polls_and_another_takes_over_when_it_stops(
    replicas: list[Stack],
) -> None:
    """One replica polls while it holds the lease; when it stops, the other starts polling."""
    first, _ = replicas
    await open_ticket(first)
    await until(lambda: sum(stack.desk.polls for stack in replicas) >= 5)
    polling = [stack for stack in replicas if stack.desk.polls > 0]
    assert len(polling) == 1
    holder = polling[0]
    other = next(stack for stack in replicas if stack is not holder)
    await stop_stack(holder)
    replicas.remove(holder)
    await until(lambda: other.desk.polls >= 3, within=5.0)
    ticket = other.desk.store.ticket_for_issue(1)
    assert ticket is not None
    assert ticket.state is TicketState.OPEN


async def test_a_jti_used_through_one_replica_is_refused_through_the_other(
    replicas: list[Stack],
) -> None:
    """A signature whose jti another replica claimed is refused, though the store never saw it."""
    first, second = replicas
    await open_ticket(second)
    body = first.signed("main.py and README.md", number=1)
    # As a replica on another host does when it accepts a comment: only Redis records it.
    claimed = await first.desk.coordinator.claim_jti(
        jti_of(body), holder="comment:999999", ttl=timedelta(hours=1)
    )
    assert claimed
    await first.comment(1, body)
    await until(lambda: sum(s.desk.answers_rejected["replayed"] for s in replicas) == 1)
    ticket = second.desk.store.ticket_for_issue(1)
    assert ticket is not None
    assert ticket.state is TicketState.OPEN
    assert sum(s.desk.answers_accepted for s in replicas) == 0


async def test_a_jti_claimed_for_one_comment_is_refused_for_another_on_every_replica(
    redis_url: str,
) -> None:
    """A jti claimed through one coordinator is refused to another comment through a second one."""
    one = RedisCoordinator.from_url(redis_url)
    two = RedisCoordinator.from_url(redis_url)
    try:
        ttl = timedelta(hours=24, minutes=2)
        assert await one.claim_jti("jti-1", holder="comment:1", ttl=ttl)
        assert not await two.claim_jti("jti-1", holder="comment:2", ttl=ttl)
        # The same comment seen again (by webhook and by poll) is no replay.
        assert await two.claim_jti("jti-1", holder="comment:1", ttl=ttl)
    finally:
        await one.close()
        await two.close()


async def test_the_poll_lease_passes_on_only_once_its_holder_releases_it(redis_url: str) -> None:
    """A second replica cannot take the poll lease until the holder releases it."""
    one = RedisCoordinator.from_url(redis_url)
    two = RedisCoordinator.from_url(redis_url)
    try:
        ttl = timedelta(seconds=30)
        assert await one.hold_poll_lease("a", ttl)
        assert not await two.hold_poll_lease("b", ttl)
        assert await one.hold_poll_lease("a", ttl)  # renewal by the holder
        await two.release_poll_lease("b")  # not the holder: changes nothing
        assert not await two.hold_poll_lease("b", ttl)
        await one.release_poll_lease("a")
        assert await two.hold_poll_lease("b", ttl)
    finally:
        await one.close()
        await two.close()


async def test_the_poll_lease_of_a_replica_that_died_lapses(redis_url: str) -> None:
    """A lease its holder stops renewing lapses after its TTL, and another replica takes it."""
    one = RedisCoordinator.from_url(redis_url)
    two = RedisCoordinator.from_url(redis_url)
    try:
        assert await one.hold_poll_lease("a", timedelta(milliseconds=100))
        assert not await two.hold_poll_lease("b", timedelta(seconds=30))
        await asyncio.sleep(0.2)
        assert await two.hold_poll_lease("b", timedelta(seconds=30))
    finally:
        await one.close()
        await two.close()


async def test_a_request_key_is_held_by_one_replica_at_a_time(redis_url: str) -> None:
    """While one replica holds a request key, another waits for it."""
    one = RedisCoordinator.from_url(redis_url)
    two = RedisCoordinator.from_url(redis_url)
    order: list[str] = []

    async def second() -> None:
        async with two.hold_key("key-1"):
            order.append("two")

    try:
        async with one.hold_key("key-1"):
            waiter = asyncio.create_task(second())
            await asyncio.sleep(0.2)
            order.append("one")
        await asyncio.wait_for(waiter, timeout=5)
        assert order == ["one", "two"]
    finally:
        await one.close()
        await two.close()


async def test_an_announcement_reaches_a_subscriber_on_another_connection(redis_url: str) -> None:
    """A ticket id published through one coordinator is received through another."""
    one = RedisCoordinator.from_url(redis_url)
    two = RedisCoordinator.from_url(redis_url)
    subscription = await two.subscribe()
    try:
        await one.publish(42)
        received = await asyncio.wait_for(anext(aiter(subscription)), timeout=5)
        assert received == 42
    finally:
        await subscription.close()
        await one.close()
        await two.close()


def test_the_redis_url_is_read_from_the_environment() -> None:
    """TICKETPROXY_REDIS_URL sets the Redis URL; unset, the proxy runs alone."""
    url = "redis://:pw@redis:6379/0"
    assert Settings.from_env({"TICKETPROXY_REDIS_URL": url}).redis_url == url
    assert Settings.from_env({}).redis_url is None
    assert "pw" not in repr(Settings.from_env({"TICKETPROXY_REDIS_URL": url}))


def test_a_redis_url_of_another_scheme_is_refused_without_echoing_it() -> None:
    """A URL that is not redis:// is refused, naming the variable but not its secret."""
    with pytest.raises(ConfigError, match="TICKETPROXY_REDIS_URL") as raised:
        Settings.from_env({"TICKETPROXY_REDIS_URL": "http://user:hunter2@host"})
    assert "hunter2" not in str(raised.value)
