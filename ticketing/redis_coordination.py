"""Several replicas coordinated through Redis (``TICKETPROXY_REDIS_URL``).

What lives where:

- **Redis** holds what replicas must agree on *at the same moment*: the per-request-key
  lock (``SET NX PX``, renewed while held) that lets one replica open the ticket and its
  issue while the others wait and re-attach; used ``jti``\\ s (``SET NX`` with a TTL of the
  longest a signature can be valid, plus leeway); the poll lease (``SET NX PX``, renewed by
  its holder); and the ``ticketproxy:answered`` pub/sub channel, re-subscribed when its
  connection drops, after which each replica re-reads the tickets it waits on (what was
  announced during the gap was not heard).
- **The ticket store** holds everything durable: tickets, answers, judgements, the write
  queue, the cursor, replies and webhook deliveries. On SQLite replicas share it as one
  file on one host (a shared volume); Redis runs without persistence and losing it loses
  no ticket, only in-flight coordination. On PostgreSQL replicas may be on several hosts
  and need no Redis at all (:mod:`ticketing.postgres_coordination`); with Redis set too,
  Redis keeps these four and the database the rest, GitHub's write budget included.
- **GitHub's write budget** is one for all replicas: on SQLite it is kept in Redis too
  (:mod:`ticketing.redis_write_budget`), on PostgreSQL in the database.

Every key is under a prefix (``ticketproxy`` by default), so one Redis can serve several
deployments.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from redis import asyncio as aioredis
from redis.exceptions import RedisError

from ticketing.coordination import (
    Announcement,
    CoordinationUnavailable,
    KeyLocks,
    RecheckAll,
    Subscription,
)

log = logging.getLogger(__name__)

CHANNEL = "answered"
# Compare-and-extend and compare-and-delete: only the holder of a lock or lease (the one
# whose random token is stored) may renew or release it.
_TAKE_OR_RENEW = """
local v = redis.call('GET', KEYS[1])
if v == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def _ms(ttl: timedelta) -> int:
    return max(1, int(ttl.total_seconds() * 1000))


class _Announcements:
    """A Redis pub/sub subscription to the channel of changed tickets, kept subscribed.

    redis-py reconnects a dropped pub/sub connection and subscribes again by itself (a few
    tries); past those (Redis down for longer), this opens a new subscription, with
    back-off, until Redis is back. Redis confirms every subscription with a ``subscribe``
    message: each one after the first means the connection was down, and what was announced
    meanwhile was not heard, so :class:`~ticketing.coordination.RecheckAll` follows it (after
    the confirmation: whatever is announced from then on is heard).
    """

    def __init__(self, client: aioredis.Redis, channel: str, *, reconnect: float) -> None:
        self._client, self._channel, self._reconnect = client, channel, reconnect
        self._pubsub: Any = None
        self._confirmations = 0
        self._closed = False

    async def open(self) -> None:
        """Subscribe; raise RedisError if Redis cannot be reached."""
        pubsub = self._client.pubsub()
        try:
            await pubsub.subscribe(self._channel)
        except RedisError:
            await self._discard(pubsub)
            raise
        self._pubsub = pubsub

    def __aiter__(self) -> AsyncIterator[Announcement]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[Announcement]:
        while not self._closed:
            try:
                async for message in self._pubsub.listen():
                    kind = message.get("type")
                    if kind == "subscribe":
                        self._confirmations += 1
                        if self._confirmations > 1:
                            yield RecheckAll("the pub/sub connection to Redis was reconnected")
                    elif kind == "message":
                        try:
                            yield int(message["data"])
                        except ValueError:
                            log.warning("ignored a malformed announcement: %r", message["data"])
            except RedisError as exc:
                log.warning("lost the connection that hears other replicas: %s", exc)
            await self._reopen()

    async def _reopen(self) -> None:
        delay = self._reconnect
        while not self._closed:
            await asyncio.sleep(delay)
            await self._discard(self._pubsub)
            try:
                await self.open()
            except RedisError as exc:
                log.warning("cannot listen to other replicas yet: %s", exc)
                delay = min(delay * 2, 5.0)
            else:
                log.info("listening to other replicas again")
                return

    @staticmethod
    async def _discard(pubsub: Any) -> None:
        with contextlib.suppress(RedisError, OSError):
            await pubsub.aclose()

    async def close(self) -> None:
        """Stop listening and release the connection."""
        self._closed = True
        await self._discard(self._pubsub)


class RedisCoordinator:
    """Coordinate replicas through one Redis server."""

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        prefix: str = "ticketproxy",
        key_lock_ttl: timedelta = timedelta(seconds=30),
        key_lock_retry: float = 0.05,
        reconnect: float = 0.5,
    ) -> None:
        self._redis = client
        self._reconnect = reconnect
        self._prefix = prefix
        self._key_lock_ttl = key_lock_ttl
        self._key_lock_retry = key_lock_retry
        # Contenders in this process queue here rather than spin on Redis.
        self._local = KeyLocks()

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> RedisCoordinator:
        """Connect lazily to the Redis at ``url`` (``redis://host:port/db``)."""
        return cls(aioredis.Redis.from_url(url), **kwargs)

    @property
    def channel(self) -> str:
        """Return the pub/sub channel of changed tickets."""
        return f"{self._prefix}:{CHANNEL}"

    def _key(self, *parts: str) -> str:
        return ":".join((self._prefix, *parts))

    @contextlib.asynccontextmanager
    async def hold_key(self, request_key: str) -> AsyncIterator[None]:
        """Hold the request key across replicas, renewing the lock while the block runs."""
        async with self._local.hold(request_key):
            key = self._key("key-lock", request_key)
            token = secrets.token_hex(16)
            ttl = _ms(self._key_lock_ttl)
            try:
                # Another replica holds the key (it is opening the ticket): wait for it.
                while True:
                    if await self._redis.set(key, token, nx=True, px=ttl):
                        break
                    await asyncio.sleep(self._key_lock_retry)
            except RedisError as exc:
                raise CoordinationUnavailable(
                    f"Redis is unreachable, so the request cannot be matched to its ticket: {exc}",
                    retry_after=5.0,
                ) from exc
            # Creating an issue can outlast the TTL (GitHub retries); the TTL only bounds
            # how long a crashed replica blocks the key.
            renewal = asyncio.create_task(self._renew(key, token, ttl))
            try:
                yield
            finally:
                renewal.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewal
                try:
                    await self._redis.eval(_RELEASE, 1, key, token)
                except RedisError as exc:
                    log.warning("could not release the lock on a request key: %s", exc)

    async def _renew(self, key: str, token: str, ttl: int) -> None:
        while True:
            await asyncio.sleep(ttl / 3000)
            try:
                await self._redis.eval(_RENEW, 1, key, token, ttl)
            except RedisError as exc:
                log.warning("could not renew the lock on a request key: %s", exc)

    async def claim_jti(self, jti: str, *, holder: str, ttl: timedelta) -> bool:
        """Claim ``jti`` for ``holder``; True also when ``holder`` already has it."""
        key = self._key("jti", jti)
        try:
            if await self._redis.set(key, holder, nx=True, px=_ms(ttl)):
                return True
            current = await self._redis.get(key)
        except RedisError as exc:
            raise CoordinationUnavailable(
                f"Redis is unreachable, so a signature's jti cannot be checked: {exc}",
                retry_after=5.0,
            ) from exc
        if isinstance(current, str):
            return current == holder
        return current is not None and current == holder.encode()

    async def hold_poll_lease(self, owner: str, ttl: timedelta) -> bool:
        """Take or renew the poll lease; False while another replica holds it."""
        try:
            taken = await self._redis.eval(
                _TAKE_OR_RENEW, 1, self._key("poll-lease"), owner, _ms(ttl)
            )
        except RedisError as exc:
            raise CoordinationUnavailable(
                f"Redis is unreachable, so no replica can take the poll lease: {exc}",
                retry_after=5.0,
            ) from exc
        return bool(taken)

    async def release_poll_lease(self, owner: str) -> None:
        """Give up the poll lease if ``owner`` holds it."""
        with contextlib.suppress(RedisError):
            await self._redis.eval(_RELEASE, 1, self._key("poll-lease"), owner)

    async def publish(self, ticket_id: int) -> None:
        """Announce on the channel that ticket ``ticket_id`` changed."""
        try:
            await self._redis.publish(self.channel, str(ticket_id))
        except RedisError as exc:
            raise CoordinationUnavailable(
                f"Redis is unreachable, so other replicas cannot be woken: {exc}",
                retry_after=5.0,
            ) from exc

    async def subscribe(self) -> Subscription:
        """Subscribe to the channel; return once Redis has taken the subscription."""
        announcements = _Announcements(self._redis, self.channel, reconnect=self._reconnect)
        try:
            await announcements.open()
        except RedisError as exc:
            raise CoordinationUnavailable(
                f"Redis is unreachable, so replicas cannot wake each other: {exc}",
                retry_after=5.0,
            ) from exc
        return announcements

    async def close(self) -> None:
        """Close the connection pool."""
        await self._redis.aclose()
