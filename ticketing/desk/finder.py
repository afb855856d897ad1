"""Where answers are found: the repo-wide conditional poll, and webhook deliveries.

One ``GET /repos/{o}/{r}/issues/comments?since=…`` per interval, with ``If-None-Match``,
however many tickets wait (see :meth:`GitHubClient.list_comments`). The cursor is the
newest ``updated_at`` seen minus an overlap; versions of comments already considered are
skipped by ``(id, updated_at, body hash)``, whether they came by poll or by webhook. With
several replicas, only the holder of the poll lease polls. Every new version goes to
``consider`` (:meth:`ticketing.desk.comments.SignedComments.consider`). A comment that
cannot be judged while the keyring file is unreadable is kept, and considered again at
every poll until it can be: the cursor has moved past it, so nothing else would.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from auth.errors import KeyringUnavailable
from ticketing.clock import Clock
from ticketing.coordination import Coordinator
from ticketing.errors import (
    GitHubUnavailable,
    OidcKeysUnavailable,
    StoreUnavailable,
    TicketingError,
)
from ticketing.github.interface import Comment, GitHubIssues
from ticketing.github.poll_budget import poll_delay
from ticketing.github.times import format_github_time, parse_github_time
from ticketing.github.webhooks import CommentEvent
from ticketing.store.interface import TicketStore
from ticketing.store.model import PollCursor

from .settings import DeskSettings
from .wakeups import cancel_task

__all__ = ["WEBHOOKS_FRESH_FOR", "AnswerFinder"]

log = logging.getLogger(__name__)

# Webhooks count as arriving while the last one is at most this old.
WEBHOOKS_FRESH_FOR = timedelta(minutes=10)


def comment_version(comment: Comment) -> tuple[int, datetime, str]:
    """Name one version of a comment for dedupe.

    GitHub's timestamps have whole seconds, so an edit within the same second as the
    version already seen keeps its ``updated_at``: the body's hash tells them apart.
    """
    digest = hashlib.sha256(comment.body.encode("utf-8", "surrogatepass")).hexdigest()
    return (comment.id, comment.updated_at, digest)


class AnswerFinder:
    """Poll GitHub for new and edited comments (and take webhooks); consider each once."""

    def __init__(
        self,
        *,
        store: TicketStore,
        github: GitHubIssues,
        coordinator: Coordinator,
        consider: Callable[[Comment], Awaitable[None]],
        expire_overdue: Callable[[], None],
        settings: DeskSettings,
        clock: Clock,
        replica_id: str,
    ) -> None:
        self._store = store
        self._github = github
        self._coordinator = coordinator
        self._consider = consider
        self._expire_overdue = expire_overdue
        self.settings = settings
        self._clock = clock
        self._replica_id = replica_id
        self._wake = asyncio.Event()
        # True while the loop sleeps because nothing waits (see wake_if_idle).
        self._idle = False
        self._seen: dict[tuple[int, datetime, str], None] = {}
        # Versions that could not be judged yet (the keyring was unreadable), oldest first.
        self._deferred: dict[tuple[int, datetime, str], Comment] = {}
        self._task: asyncio.Task[None] | None = None
        self.polls = 0
        self.last_webhook_at: datetime | None = None

    def start(self) -> None:
        """Start the poll loop; tickets left pending by an earlier run resume."""
        self._task = asyncio.create_task(self._poll_loop(), name="ticketproxy-poller")
        pending = self._store.count_pending()
        if pending:
            log.info("resuming %d pending ticket(s)", pending)
            self._wake.set()

    async def stop(self) -> None:
        """Stop polling."""
        if self._task is not None:
            await cancel_task(self._task)
            self._task = None

    async def release_lease(self) -> None:
        """Hand polling to another replica at once rather than when the lease runs out."""
        await self._coordinator.release_poll_lease(self._replica_id)

    def poke(self) -> None:
        """Poll now instead of at the next interval (a webhook arrived, a test wants it)."""
        self._wake.set()

    def wake_if_idle(self) -> None:
        """Start polling if nothing waited until now; otherwise keep to the interval.

        Called for each ticket opened: a burst of new tickets must not become a poll per
        ticket (a new issue has no answer yet), only the first of them ends the idleness.
        """
        if self._idle:
            self._wake.set()

    async def receive_comment_event(self, event: CommentEvent) -> None:
        """Act on a verified ``issue_comment`` webhook as on a polled comment."""
        if event.repo.lower() != self.settings.repo.lower():
            log.info("webhook for %s ignored: tickets live in %s", event.repo, self.settings.repo)
            return
        self.last_webhook_at = self._clock()
        comment = event.comment
        if event.action == "deleted":
            self._report_deleted_answer(comment)
            return
        # The same (id, updated_at) dedupe as the poll: a version seen both ways counts once.
        version = comment_version(comment)
        if version in self._seen:
            return
        self._seen[version] = None
        await self._consider_or_defer(version, comment)

    @property
    def deferred(self) -> int:
        """Return how many comments wait for the keyring to be readable again."""
        return len(self._deferred)

    async def poll_once(self) -> int:
        """Read new and edited comments once and act on them; return the requests made."""
        self.polls += 1
        await self._reconsider_deferred()
        cursor = self._store.get_cursor()
        page = await self._github.list_comments(since=cursor.since, etag=cursor.etag)
        if page.not_modified:
            return page.requests
        newest: datetime | None = None
        for comment in page.comments:
            newest = comment.updated_at if newest is None else max(newest, comment.updated_at)
            version = comment_version(comment)
            if version in self._seen:
                continue
            self._seen[version] = None
            await self._consider_or_defer(version, comment)
        since = cursor.since
        if newest is not None:
            candidate = newest - self.settings.poll_overlap
            if since is None or candidate > parse_github_time(since):
                since = format_github_time(candidate)
        # An ETag describes one URL; a new `since` is a new URL.
        etag = page.etag if since == cursor.since else None
        self._store.set_cursor(PollCursor(since=since, etag=etag))
        self._forget_seen_before(since)
        return page.requests

    async def _consider_or_defer(
        self, version: tuple[int, datetime, str], comment: Comment
    ) -> None:
        """Consider a comment; keep it for later if the keyring cannot be read now."""
        try:
            await self._consider(comment)
        except (KeyringUnavailable, OidcKeysUnavailable):
            if version not in self._deferred:
                log.warning(
                    "comment %d by %s on #%d waits for the keyring to be readable again",
                    comment.id,
                    comment.author_login,
                    comment.issue_number,
                )
            self._deferred[version] = comment

    async def _reconsider_deferred(self) -> None:
        """Consider again, in order, the comments the keyring kept from being judged."""
        for version, comment in list(self._deferred.items()):
            del self._deferred[version]
            await self._consider_or_defer(version, comment)

    def _report_deleted_answer(self, comment: Comment) -> None:
        ticket = self._store.ticket_for_issue(comment.issue_number)
        answer = None if ticket is None else self._store.answer_for(ticket.id)
        if ticket is not None and answer is not None and answer.comment_id == comment.id:
            # The answer stays accepted (it was verified and may be delivered); the audit
            # reports the deletion.
            log.warning(
                "request_id=%s ticket %d: its accepted answer (comment %d by %s) was deleted",
                ticket.request_id,
                ticket.id,
                comment.id,
                comment.author_login,
            )

    async def _poll_loop(self) -> None:
        while True:
            try:
                self._expire_overdue()
                if self._store.count_pending() == 0:
                    # Nothing waits: make no GitHub requests until a ticket is opened.
                    self._wake.clear()
                    self._idle = True
                    try:
                        await self._wake.wait()
                    finally:
                        self._idle = False
                    continue
                delay = await self._poll_if_leader()
            except GitHubUnavailable as exc:
                log.warning("poll deferred %.0fs: %s", exc.retry_after, exc)
                delay = max(self.settings.poll_interval, exc.retry_after)
            except StoreUnavailable as exc:
                # The database is down or restarting: look again soon, not in 30 s.
                log.warning("poll deferred %.0fs: %s", exc.retry_after, exc)
                delay = max(self.settings.poll_interval, exc.retry_after)
            except TicketingError as exc:
                log.error("poll failed: %s", exc)
                delay = max(self.settings.poll_interval, 30.0)
            except Exception:
                # Anything else (a full disk, a bug) must not silently end the poller: every
                # waiting client depends on it.
                log.exception("poll failed unexpectedly")
                delay = max(self.settings.poll_interval, 30.0)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=delay)

    async def _poll_if_leader(self) -> float:
        """Poll if this replica holds the lease; return how long to wait before the next."""
        lease = self.settings.poll_lease
        if not await self._coordinator.hold_poll_lease(self._replica_id, lease):
            # Another replica polls and announces what it finds; look again in time to take
            # over should it stop renewing.
            return min(self._poll_delay(), lease.total_seconds() / 3)
        await self.poll_once()
        # As GitHub's primary budget runs low, poll less often (or not until reset).
        delay = poll_delay(
            self._poll_delay(),
            self._github.rate_remaining,
            self._github.rate_limit,
            self._github.reset_in(now=self._clock()),
        )
        # Held through the pause too, so that the replicas do not take turns.
        await self._coordinator.hold_poll_lease(
            self._replica_id, lease + timedelta(seconds=min(delay, 86_400.0))
        )
        return delay

    def _poll_delay(self) -> float:
        last = self.last_webhook_at
        if last is not None and self._clock() - last <= WEBHOOKS_FRESH_FOR:
            # GitHub does not redeliver a failed delivery, so polling goes on as the source
            # of truth, only less often while webhooks bring the news first.
            return self.settings.poll_interval * self.settings.webhook_backstop_factor
        return self.settings.poll_interval

    def _forget_seen_before(self, since: str | None) -> None:
        if since is None or len(self._seen) < 10_000:
            return
        horizon = parse_github_time(since)
        self._seen = {key: None for key in self._seen if key[1] >= horizon}
