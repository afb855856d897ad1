"""GitHub's write budget as one budget for every replica, kept in Redis.

GitHub's secondary limits (about 80 content-creating requests a minute, 500 an hour) are
per token, and every replica writes with the same token: a budget per replica would let two
replicas send twice the limit. Replicas on SQLite (one host) coordinate through Redis, so
:class:`RedisSendLedger` keeps the send times of the last hour there, as the scores of one
sorted set (``ticketproxy:write-budget``). A replica reserves its slot optimistically:
it ``WATCH``\\ es the set, reads Redis's clock (``TIME``, so replicas whose clocks differ
still share one window) and the latest send times, decides, and adds its moment (trimming
times past the hour) in a ``MULTI``/``EXEC`` that Redis refuses if another replica wrote
meanwhile; it then reads and decides again. Two replicas therefore never take the same room.

The set expires a little over an hour after the last write, so a stopped deployment leaves
nothing behind; losing it (Redis restarted without persistence) forgets at most one hour's
sends. A Redis that cannot be reached is
:class:`~ticketing.coordination.CoordinationUnavailable`, as for the rest of the Redis
coordinator: back-pressure with ``retry-after``, never a lost write.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from redis import asyncio as aioredis
from redis.exceptions import RedisError, WatchError

from ticketing.coordination import CoordinationUnavailable

WINDOW = 3600.0
KEY = "write-budget"
# A reservation lost to another replica's is read again; this many losses in a row mean far
# more replicas than one token's budget can feed.
ATTEMPTS = 50
# A moment may be reserved up to the throttle's max_wait ahead: keep it past the hour.
_EXPIRY = int(WINDOW) + 600


class RedisSendLedger:
    """The send times of every replica's writes in the last hour, in one Redis."""

    def __init__(self, client: aioredis.Redis, *, prefix: str = "ticketproxy") -> None:
        self._redis = client
        self._key = f"{prefix}:{KEY}"

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> RedisSendLedger:
        """Connect lazily to the Redis at ``url`` (``redis://host:port/db``)."""
        return cls(aioredis.Redis.from_url(url), **kwargs)

    async def reserve(
        self, decide: Callable[[float, list[float]], float | None], *, recent: int
    ) -> tuple[float, float | None]:
        """Record the moment ``decide`` picks from the shared times; return (now, moment).

        ``decide`` gets Redis's clock and the ``recent`` latest send times of the last hour,
        oldest first, and returns when to send (None: not at all). No other replica's
        reservation lands in between: if one does, this one is decided again.
        """
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                for _ in range(ATTEMPTS):
                    try:
                        return await self._attempt(pipe, decide, recent)
                    except WatchError:
                        continue  # another replica reserved meanwhile: read again
        except RedisError as exc:
            raise CoordinationUnavailable(
                f"Redis is unreachable, so the shared GitHub write budget cannot be read: {exc}",
                retry_after=5.0,
            ) from exc
        raise CoordinationUnavailable(
            f"the shared GitHub write budget changed under {ATTEMPTS} reservations in a row",
            retry_after=1.0,
        )

    async def _attempt(
        self, pipe: Any, decide: Callable[[float, list[float]], float | None], recent: int
    ) -> tuple[float, float | None]:
        await pipe.watch(self._key)
        seconds, microseconds = await pipe.time()
        now = seconds + microseconds / 1_000_000
        latest = await pipe.zrange(
            self._key,
            "+inf",
            f"({now - WINDOW!r}",
            desc=True,
            byscore=True,
            offset=0,
            num=recent,
            withscores=True,
        )
        moment = decide(now, sorted(float(score) for _, score in latest))
        if moment is None:
            await pipe.unwatch()
            return now, None
        pipe.multi()
        pipe.zremrangebyscore(self._key, "-inf", now - WINDOW)
        # Members are unique: two replicas may reserve the same moment.
        pipe.zadd(self._key, {f"{moment!r}:{secrets.token_hex(8)}": moment})
        pipe.expire(self._key, _EXPIRY)
        await pipe.execute()
        return now, moment

    async def close(self) -> None:
        """Close the connection pool."""
        await self._redis.aclose()
