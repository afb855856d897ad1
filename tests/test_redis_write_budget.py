"""One GitHub write budget for replicas on SQLite + Redis, kept in a real ``redis-server``.

GitHub's limits are per token and replicas write with one token: two replicas must not each
spend the whole budget. Each test starts its own ``redis-server``
(``tests/helpers/redis_server.py``).
"""

from __future__ import annotations

import asyncio

import pytest
from redis import asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from proxy.desk_factories import shared_write_budget
from proxy.settings import Settings
from tests.helpers.stack import free_port
from tests.helpers.write_budget import take_turns
from ticketing.coordination import CoordinationUnavailable
from ticketing.errors import GitHubUnavailable
from ticketing.github.throttle import WriteThrottle
from ticketing.postgres_write_budget import PostgresSendLedger
from ticketing.redis_write_budget import RedisSendLedger

KEY = "ticketproxy:write-budget"


async def test_two_replicas_writing_through_one_redis_share_one_budget_not_one_each(
    redis_url: str,
) -> None:
    """Two replicas' throttles (their clocks far apart) let the limit through once, not twice."""
    ledgers = [RedisSendLedger.from_url(redis_url), RedisSendLedger.from_url(redis_url)]
    clocks = (lambda: 0.0, lambda: 1e9)
    throttles = [
        WriteThrottle(per_minute=3, per_hour=100, max_wait=0.5, ledger=ledger, clock=clock)
        for ledger, clock in zip(ledgers, clocks, strict=True)
    ]
    turns = await take_turns(throttles)
    # Reactions take only the spare half, and there is none left.
    assert not turns.reaction_left
    assert turns.sent == 3
    assert len(turns.refused) == 3
    assert all(wait is not None and wait > 50 for wait in turns.refused)


async def test_replicas_racing_for_the_last_slots_never_send_more_than_the_budget(
    redis_url: str,
) -> None:
    """Many writers on two replicas at once: WATCH/MULTI lets exactly the budget through."""
    ledgers = [RedisSendLedger.from_url(redis_url), RedisSendLedger.from_url(redis_url)]
    throttles = [
        WriteThrottle(per_minute=5, per_hour=100, max_wait=0.5, ledger=ledger) for ledger in ledgers
    ]

    async def write(throttle: WriteThrottle) -> bool:
        try:
            await throttle.acquire()
        except GitHubUnavailable:
            return False
        return True

    try:
        results = await asyncio.gather(*(write(t) for t in throttles for _ in range(12)))
        async with aioredis.Redis.from_url(redis_url) as admin:
            recorded = await admin.zcard(KEY)
    finally:
        for throttle in throttles:
            await throttle.close()
    assert sum(results) == 5
    assert recorded == 5


async def test_send_times_past_the_hour_are_trimmed_and_no_longer_counted(redis_url: str) -> None:
    """A send older than an hour is neither handed to the decision nor kept once one is added."""
    async with aioredis.Redis.from_url(redis_url) as admin:
        seconds, _ = await admin.time()
        await admin.zadd(KEY, {"old": seconds - 3700, "recent": seconds - 100})
        ledger = RedisSendLedger.from_url(redis_url)
        seen: list[list[float]] = []

        def decide(now: float, sent: list[float]) -> float:
            seen.append(sent)
            return now

        try:
            now, moment = await ledger.reserve(decide, recent=10)
        finally:
            await ledger.close()
        assert seen == [[seconds - 100]]
        assert moment == now
        assert abs(now - seconds) < 5  # Redis's clock
        assert await admin.zscore(KEY, "old") is None
        assert await admin.zcard(KEY) == 2
        assert 0 < await admin.ttl(KEY) <= 3600 + 600


async def test_a_reservation_declined_by_the_decision_records_nothing(redis_url: str) -> None:
    """When the decision is not to send, the shared times are left as they were."""
    ledger = RedisSendLedger.from_url(redis_url)
    try:
        _, moment = await ledger.reserve(lambda now, sent: None, recent=10)
        async with aioredis.Redis.from_url(redis_url) as admin:
            assert await admin.exists(KEY) == 0
    finally:
        await ledger.close()
    assert moment is None


async def test_an_unreachable_redis_makes_the_write_budget_back_pressure_not_a_crash() -> None:
    """Redis down: the write is told to retry later (a 429 family error), not lost or failed."""
    client = aioredis.Redis(host="127.0.0.1", port=free_port(), retry=Retry(NoBackoff(), 0))
    throttle = WriteThrottle(ledger=RedisSendLedger(client))
    try:
        with pytest.raises(CoordinationUnavailable, match="Redis is unreachable") as raised:
            await throttle.acquire()
    finally:
        await throttle.close()
    assert isinstance(raised.value, GitHubUnavailable)
    assert raised.value.retry_after > 0


async def test_redis_without_a_database_keeps_the_write_budget_in_redis() -> None:
    """SQLite + Redis shares the budget in Redis; a database, where set, keeps it instead."""
    redis_url = "redis://127.0.0.1:1/0"
    database_url = "postgresql://postgres@127.0.0.1:1/none"
    in_redis = shared_write_budget(Settings(redis_url=redis_url))
    in_database = shared_write_budget(Settings(redis_url=redis_url, database_url=database_url))
    try:
        assert isinstance(in_redis, RedisSendLedger)
        assert isinstance(in_database, PostgresSendLedger)
        assert shared_write_budget(Settings()) is None
    finally:
        for ledger in (in_redis, in_database):
            if ledger is not None:
                await ledger.close()
