"""The durable GitHub write queue: labels, replies, closing, locking, reactions, dispatches.

Every write is a row in the store's ``write_queue`` table *before* anything is sent, so a
crash (even ``kill -9``) loses none of them: the next start resumes whatever is left. One
background worker sends due writes oldest first through the GitHub adapter, which paces
content creation with its WriteThrottle and retries briefly on its own; the queue needs only
its :class:`~ticketing.github.interface.GitHubWrites` calls. What each kind of write does,
and how it is stored, is in :mod:`ticketing.github.write_kinds`.

A write goes through these steps:

1. **claim**: ``attempts`` is raised and ``not_before`` moved to the back-off for the next
   attempt, in one transaction, before the request goes out. A process that dies while
   sending therefore leaves a row that says "this may have been sent", due again later.
2. **send**: a comment whose row says it may have been sent is first looked for among the
   issue's newest comments (same body), so a crash between "sent" and "marked done" never
   posts it twice. Labels, closing, locking and reactions are idempotent on GitHub.
3. **settle**: done; or, on GitHubUnavailable (rate limit, 5xx, unreachable), the whole
   queue pauses for ``max(retry_after, back-off)``: GitHub's limits and outages are per
   token, not per write, and pausing everything keeps each issue's writes in order. After
   ``max_attempts`` tries, or at once on a permanent GitHubError (a 404, a 403 that is no
   rate limit), the write is abandoned: the reason is recorded in its row and logged. A
   dispatch of an editor's agent is refused a few times before it is abandoned, and its
   ticket is then told that no draft will come (``write_kinds.abandon_notice``).

A write that follows a change of ticket state (labelled answered, closed once delivered,
the expiry notice) is queued *before* that change is committed, with a
:class:`~ticketing.github.write_kinds.Guard`: it is sent only if the ticket is then in the
expected state. A crash between the two commits therefore neither loses the write nor sends
it for a change that never happened, and the caller cancels it at once when the change does
not take place.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from ticketing.clock import Clock, utc_now
from ticketing.errors import GitHubError, GitHubUnavailable, StoreUnavailable, TicketingError
from ticketing.github.interface import GitHubWrites
from ticketing.github.write_kinds import (
    Guard,
    Unsendable,
    WriteKind,
    abandon_notice,
    describe_write,
    encode_write,
    guard_failure,
    perform_write,
    refused_attempts,
)
from ticketing.store.interface import TicketStore
from ticketing.store.model import QueuedWrite, ReplyClaim

log = logging.getLogger(__name__)

# With writes waiting but none due, look again at least this often (seconds of real time):
# the clock is injected, and a test may move it past a back-off while the worker sleeps.
_RECHECK = 1.0


def _labelled(labels: Sequence[str] | None) -> dict[str, Any]:
    """Return a close's or reopen's payload: the labels it also sets, if any.

    GitHub's ``PATCH /issues/{n}`` changes the state and the labels at once: one write
    instead of two against the content-creation limit.
    """
    return {} if labels is None else {"labels": list(labels)}


class WriteQueue:
    """Persist GitHub bookkeeping writes, then send them in the background, exactly once."""

    def __init__(
        self,
        *,
        store: TicketStore,
        github: GitHubWrites,
        clock: Clock = utc_now,
        max_attempts: int = 12,
        first_backoff: float = 2.0,
        max_backoff: float = 900.0,
        stop_grace: float = 3.0,
    ) -> None:
        self._store = store
        self._github = github
        self._clock = clock
        self._max_attempts = max_attempts
        self._first_backoff = first_backoff
        self._max_backoff = max_backoff
        self._stop_grace = stop_grace
        self._resume_at: datetime | None = None
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the background worker; writes left by an earlier run are sent first."""
        left = self._store.pending_writes()
        if left:
            log.info("resuming %d queued GitHub write(s) from an earlier run", left)
        self._stopping = False
        self._task = asyncio.create_task(self._work(), name="ticketproxy-write-queue")

    async def stop(self) -> None:
        """Send what is due now (briefly), then stop; the rest waits for the next start."""
        if self._task is None:
            return
        self._stopping = True
        self._wake.set()
        try:
            # On timeout wait_for cancels the worker; a write it was sending is claimed,
            # so the next start re-checks before repeating it.
            await asyncio.wait_for(self._task, timeout=self._stop_grace)
        except TimeoutError:
            log.warning("stopped with GitHub writes still in flight; they resume at next start")
        finally:
            self._task = None
            self._idle.set()

    async def drain(self) -> None:
        """Wait until every queued write is sent or abandoned (the worker must be running)."""
        while self._store.pending_writes() > 0:
            if self._task is None or self._task.done():
                raise RuntimeError("the GitHub write queue is not running: start() it first")
            self.wake()
            await self._idle.wait()

    def wake(self) -> None:
        """Send now what the store queued directly, in a transaction of its own."""
        self._idle.clear()
        self._wake.set()

    @property
    def depth(self) -> int:
        """Return how many writes are not yet sent or abandoned."""
        return self._store.pending_writes()

    # --- the writes the desk asks for ------------------------------------------------------

    def comment(
        self,
        number: int,
        body: str,
        *,
        request_id: str | None = None,
        only_if: Guard | None = None,
    ) -> int:
        """Queue a comment on issue ``number``; return the write's id."""
        return self.enqueue(WriteKind.COMMENT, number, {"body": body}, request_id, only_if)

    def set_labels(
        self,
        number: int,
        labels: Sequence[str],
        *,
        request_id: str | None = None,
        only_if: Guard | None = None,
        delay: timedelta | None = None,
    ) -> int:
        """Queue replacing the labels of issue ``number``, due after ``delay``; return its id."""
        payload = {"labels": list(labels)}
        return self.enqueue(WriteKind.SET_LABELS, number, payload, request_id, only_if, delay=delay)

    def close(
        self,
        number: int,
        *,
        labels: Sequence[str] | None = None,
        request_id: str | None = None,
        only_if: Guard | None = None,
    ) -> int:
        """Queue closing issue ``number`` as completed (and relabelling it); return its id."""
        return self.enqueue(WriteKind.CLOSE, number, _labelled(labels), request_id, only_if)

    def lock(self, number: int, *, request_id: str | None = None) -> int:
        """Queue locking issue ``number`` to collaborators; return the write's id."""
        return self.enqueue(WriteKind.LOCK, number, {}, request_id, None)

    def reopen(
        self,
        number: int,
        *,
        labels: Sequence[str] | None = None,
        request_id: str | None = None,
        only_if: Guard | None = None,
    ) -> int:
        """Queue reopening issue ``number`` (and relabelling it) for a run's next step."""
        return self.enqueue(WriteKind.REOPEN, number, _labelled(labels), request_id, only_if)

    def react(
        self,
        number: int,
        comment_id: int,
        content: str,
        *,
        request_id: str | None = None,
        only_if: Guard | None = None,
    ) -> int:
        """Queue a reaction (``eyes``, ``+1`` …) on a comment of issue ``number``."""
        payload = {"comment_id": comment_id, "content": content}
        return self.enqueue(WriteKind.REACT, number, payload, request_id, only_if)

    def reply_once(
        self,
        number: int,
        body: str,
        *,
        claim: ReplyClaim,
        reaction: str | None = None,
        request_id: str | None = None,
    ) -> bool:
        """Queue the one reply (and reaction) a comment may get; False if it had its reply.

        The claim and the writes are one transaction: a crash neither loses the reply nor
        lets a restart send it again.
        """
        writes: list[tuple[str, int, str]] = []
        if reaction is not None:
            react = {"comment_id": claim.comment_id, "content": reaction}
            writes.append((WriteKind.REACT, number, encode_write(react, request_id, None)))
        writes.append((WriteKind.COMMENT, number, encode_write({"body": body}, request_id, None)))
        if self._store.enqueue_writes(writes, now=self._clock(), claim=claim) is None:
            return False
        self.wake()
        return True

    def drop_unsent(self, kind: WriteKind, number: int, failure: str) -> int:
        """Drop the unsent writes of ``kind`` on issue ``number``: a later one replaces them."""
        return self._store.drop_unsent_writes(
            kind, issue_number=number, now=self._clock(), failure=failure
        )

    def cancel(self, write_id: int, reason: str) -> None:
        """Drop a write queued in this same step (before any await), recording why."""
        # Only safe before the worker can have picked the write up, hence "this same step".
        self._store.finish_write(write_id, now=self._clock(), failure=f"cancelled: {reason}")

    def enqueue(
        self,
        kind: WriteKind,
        number: int,
        payload: dict[str, Any],
        request_id: str | None,
        only_if: Guard | None,
        *,
        delay: timedelta | None = None,
    ) -> int:
        """Queue a write of any kind (``write_kinds``) on issue ``number``; return its id."""
        now = self._clock()
        write_id = self._store.enqueue_write(
            kind,
            issue_number=number,
            payload=encode_write(payload, request_id, only_if),
            now=now,
            not_before=None if delay is None else now + delay,
        )
        self.wake()
        return write_id

    # --- sending ---------------------------------------------------------------------------

    def _backoff(self, attempt: int) -> float:
        return float(min(self._first_backoff * 2 ** (attempt - 1), self._max_backoff))

    async def send_due(self) -> int:
        """Send every write that is due now, oldest first; return how many were tried."""
        tried = 0
        while True:
            now = self._clock()
            if self._resume_at is not None and now < self._resume_at:
                return tried
            batch = self._store.due_writes(now=now)
            if not batch:
                return tried
            for write in batch:
                await self._send(write)
                tried += 1
                if self._resume_at is not None and self._clock() < self._resume_at:
                    return tried

    async def _send(self, write: QueuedWrite) -> None:
        what = describe_write(write)
        try:
            data = json.loads(write.payload)
            skip = guard_failure(self._store, data.get("only_if"))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            self._abandon(write, what, f"malformed queued write: {type(exc).__name__}: {exc}")
            return
        if skip is not None:
            self._store.finish_write(write.id, now=self._clock(), failure=f"skipped: {skip}")
            log.info("%s skipped: %s", what, skip)
            return
        if write.attempts >= self._max_attempts:
            self._abandon(write, what, f"gave up after {write.attempts} attempts")
            return
        attempt = write.attempts + 1
        backoff = self._backoff(attempt)
        now = self._clock()
        # Claim before sending: should the process die mid-request, the row says the write
        # may have gone out, and is due again after the back-off.
        if not self._store.defer_write(
            write.id, until=now + timedelta(seconds=backoff), attempts=write.attempts
        ):
            return  # another replica claimed this write first
        try:
            await perform_write(self._github, write, data, might_have_sent=write.attempts > 0)
        except GitHubUnavailable as exc:
            if attempt >= self._max_attempts:
                self._abandon(write, what, f"gave up after {attempt} attempts: {exc}")
                return
            wait = max(exc.retry_after, backoff)
            self._resume_at = self._clock() + timedelta(seconds=wait)
            log.warning("%s deferred %.0fs (attempt %d): %s", what, wait, attempt, exc)
        except GitHubError as exc:
            if attempt < refused_attempts(write.kind):
                log.warning("%s refused, tried again later (attempt %d): %s", what, attempt, exc)
                return
            self._abandon(write, what, str(exc))
        except Unsendable as exc:
            self._abandon(write, what, str(exc))
        else:
            self._store.finish_write(write.id, now=self._clock())
            log.debug("%s sent", what)

    def _abandon(self, write: QueuedWrite, what: str, reason: str) -> None:
        self._store.finish_write(write.id, now=self._clock(), failure=reason)
        log.error("%s abandoned: %s", what, reason)
        if (notice := abandon_notice(write, reason)) is not None:
            self.enqueue(WriteKind.COMMENT, write.issue_number, *notice)

    # --- the worker --------------------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            try:
                await self.send_due()
            except StoreUnavailable as exc:
                # Back-pressure, not a failure: the writes are kept in the store.
                log.warning("the GitHub write queue waits for its store: %s", exc)
                wait = max(exc.retry_after, self._first_backoff)
                self._resume_at = self._clock() + timedelta(seconds=wait)
            except Exception:
                # A full disk or a bug must not end the worker: nothing else sends the writes.
                log.exception("the GitHub write queue failed unexpectedly")
                self._resume_at = self._clock() + timedelta(seconds=self._first_backoff)
            if self._stopping:
                return
            try:
                if self._store.pending_writes() == 0:
                    self._idle.set()
                timeout = self._next_check()
            except TicketingError as exc:
                # The store is down (its database restarting, say): the writes are kept
                # there, so look again after a backoff rather than end the worker.
                log.warning("the GitHub write queue cannot read its store: %s", exc)
                retry_after = exc.retry_after if isinstance(exc, StoreUnavailable) else 0.0
                timeout = max(retry_after, self._first_backoff)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=timeout)

    def _next_check(self) -> float | None:
        due = self._store.next_write_due()
        if due is None:
            return None
        if self._resume_at is not None:
            due = max(due, self._resume_at)
        return min(max((due - self._clock()).total_seconds(), 0.0), _RECHECK)
