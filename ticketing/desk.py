"""The ticket desk: requests in, verified answers out.

It opens one ticket per request key (a retry re-attaches), finds answers with the
repo-wide comment poll, verifies each signed comment with :mod:`auth.verify`, commits the
first valid answer before anyone is told about it, expires tickets nobody answered, and
keeps GitHub's labels and state in step. Follow-up writes (labels, replies, closing)
run in the background through :class:`FollowUps`, so a waiting client is never held up by
GitHub bookkeeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from auth.comment import TRAILER_PREFIX
from auth.keyring import Keyring
from auth.verify import Accepted, RejectReason, VerifyLimits, verify_comment

from .answers import Refusal, Release, prepare_release
from .errors import GitHubUnavailable, TicketingError
from .github_client import Comment, GitHubClient, format_github_time, parse_github_time
from .render import render_ticket, request_marker
from .replies import (
    is_bot_reply,
    render_expired_notice,
    render_late_answer_reply,
    render_rejection_reply,
    render_unreleasable_reply,
)
from .request import ChatRequest, ToolCall
from .store import PollCursor, StoredAnswer, Ticket, TicketState, TicketStore

log = logging.getLogger(__name__)

LABEL = "ticketproxy"
LABEL_AWAITING = "awaiting-answer"
LABEL_ANSWERED = "answered"
LABEL_EXPIRED = "expired"


def utc_now() -> datetime:
    """Return the current time as an aware UTC datetime."""
    return datetime.now(UTC)


@dataclass(frozen=True)
class DeskSettings:
    """How the desk waits, polls and replies."""

    repo: str
    poll_interval: float = 5.0
    max_wait: timedelta = timedelta(hours=1)
    redeliver_window: timedelta = timedelta(hours=1)
    poll_overlap: timedelta = timedelta(seconds=5)
    lock_issues: bool = True
    max_replies_per_ticket: int = 5
    verify_limits: VerifyLimits = field(default_factory=VerifyLimits)


def encode_release(release: Release) -> str:
    """Serialise what is released to the agent, for the store."""
    return json.dumps(
        {
            "content": release.content,
            "tool_calls": [[c.id, c.name, c.arguments] for c in release.tool_calls],
            "finish_reason": release.finish_reason,
        },
        ensure_ascii=False,
    )


def decode_release(text: str) -> Release:
    """Rebuild a release stored with :func:`encode_release`."""
    data = json.loads(text)
    return Release(
        content=data["content"],
        tool_calls=tuple(ToolCall(id=i, name=n, arguments=a) for i, n, a in data["tool_calls"]),
        finish_reason=data["finish_reason"],
    )


@dataclass(frozen=True)
class Outcome:
    """How a ticket ended: with an accepted answer, or expired without one."""

    ticket: Ticket
    answer: StoredAnswer | None

    @property
    def expired(self) -> bool:
        """Say whether nobody answered before the deadline."""
        return self.answer is None

    @property
    def release(self) -> Release | None:
        """Return what the agent receives: text and tool calls, or None when expired."""
        if self.answer is None:
            return None
        if not self.answer.release:
            return Release(content=self.answer.text, tool_calls=(), finish_reason="stop")
        return decode_release(self.answer.release)


class KeyringSource:
    """Load the keyring file, reloading it when it changes on disk (revocation, rotation)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._mtime: float | None = None
        self._keyring = Keyring()
        self.current()

    def current(self) -> Keyring:
        """Return the keyring as the file says now."""
        mtime = self.path.stat().st_mtime
        if mtime != self._mtime:
            self._keyring = Keyring.load(self.path)
            self._mtime = mtime
            log.info("keyring loaded: %d key(s) from %s", len(self._keyring), self.path)
        return self._keyring


class FollowUps:
    """Run GitHub bookkeeping writes one at a time in the background, retrying on back-off."""

    def __init__(self, *, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._queue: asyncio.Queue[tuple[str, Callable[[], Awaitable[object]]]] = asyncio.Queue()
        self._sleep = sleep
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the background worker."""
        self._task = asyncio.create_task(self._work(), name="ticketproxy-followups")

    async def stop(self) -> None:
        """Finish queued work briefly, then stop."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout=5)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def add(self, what: str, action: Callable[[], Awaitable[object]]) -> None:
        """Queue one write."""
        self._queue.put_nowait((what, action))

    async def drain(self) -> None:
        """Wait until every queued write is done."""
        await self._queue.join()

    @property
    def depth(self) -> int:
        """Return how many writes wait."""
        return self._queue.qsize()

    async def _work(self) -> None:
        while True:
            what, action = await self._queue.get()
            try:
                for attempt in range(5):
                    try:
                        await action()
                        break
                    except GitHubUnavailable as exc:
                        log.warning("follow-up %r deferred %.0fs: %s", what, exc.retry_after, exc)
                        await self._sleep(min(exc.retry_after, 60.0) * (attempt + 1))
                    except TicketingError as exc:
                        log.error("follow-up %r failed: %s", what, exc)
                        break
            finally:
                self._queue.task_done()


class Desk:
    """Open tickets, find and verify answers, and hand them to waiting requests."""

    def __init__(
        self,
        *,
        store: TicketStore,
        github: GitHubClient,
        keyring: Callable[[], Keyring],
        settings: DeskSettings,
        bot_login: str | None = None,
        clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.store = store
        self.github = github
        self.settings = settings
        self.bot_login = bot_login
        self._keyring = keyring
        self._clock = clock
        self._sleep = sleep
        self.followups = FollowUps(sleep=sleep)
        self._events: dict[int, asyncio.Event] = {}
        self._key_locks: dict[str, asyncio.Lock] = {}
        self._wake = asyncio.Event()
        self._seen: dict[tuple[int, datetime], None] = {}
        self._poll_task: asyncio.Task[None] | None = None
        self.polls = 0

    # --- life cycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Start polling; tickets left pending by an earlier run resume."""
        self.followups.start()
        self._poll_task = asyncio.create_task(self._poll_loop(), name="ticketproxy-poller")
        pending = self.store.count_pending()
        if pending:
            log.info("resuming %d pending ticket(s)", pending)
            self._wake.set()

    async def stop(self) -> None:
        """Stop polling and finish queued GitHub writes."""
        if self._poll_task is not None:
            self._poll_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poll_task
        await self.followups.stop()

    def ticket_ref(self, ticket: Ticket) -> str:
        """Return the ticket reference a signature's ``aud`` must name: ``owner/repo#N``."""
        return f"{self.settings.repo}#{ticket.issue_number}"

    # --- submitting and waiting ----------------------------------------------------------

    def _reusable(self, ticket: Ticket | None, now: datetime) -> bool:
        if ticket is None:
            return False
        if ticket.state.pending or ticket.state is TicketState.ANSWERED:
            return True
        if ticket.state is TicketState.DELIVERED:
            answer = self.store.answer_for(ticket.id)
            delivered = answer.delivered_at if answer else None
            return delivered is not None and now - delivered < self.settings.redeliver_window
        return False

    async def submit(self, request: ChatRequest, *, request_id: str) -> Ticket:
        """Return the ticket for this request, opening an issue only if none is live.

        A retried request (same key) re-attaches to its ticket. Raises GitHubUnavailable
        when GitHub cannot take the issue now; the ticket is kept, so the retry resumes it.
        """
        lock = self._key_locks.setdefault(request.key, asyncio.Lock())
        async with lock:
            now = self._clock()
            ticket = self.store.latest_ticket_for_key(request.key)
            if not self._reusable(ticket, now):
                ticket = self.store.open_ticket(
                    request.key,
                    request_id=request_id,
                    created=now,
                    deadline=now + self.settings.max_wait,
                    request=request.to_json(),
                )
                log.info("request_id=%s ticket %d opened", request_id, ticket.id)
            else:
                assert ticket is not None
                log.info(
                    "request_id=%s re-attached to ticket %d (%s)",
                    request_id,
                    ticket.id,
                    ticket.state,
                )
            if ticket.state is TicketState.CREATING:
                ticket = await self._create_issue(ticket, request)
            self._wake.set()
            return ticket

    async def _create_issue(self, ticket: Ticket, request: ChatRequest) -> Ticket:
        # One marker per ticket, not per request: after an expiry the same request opens a
        # new ticket, which must never be matched to the old, expired issue.
        marked = replace(request, key=f"{request.key}{ticket.id:08x}")
        marker = request_marker(marked.key)
        rendered = render_ticket(
            marked,
            request_id=ticket.request_id,
            created=ticket.created_at,
            deadline=ticket.deadline,
            repo=self.settings.repo,
        )
        # A ticket still "creating" may already have its issue (a crash or a lost response
        # after GitHub created it): look before creating again.
        ref = await self.github.find_issue_by_marker(marker)
        if ref is None:
            ref = await self.github.create_issue(
                title=rendered.title,
                body=rendered.body,
                labels=[LABEL, LABEL_AWAITING],
                marker=marker,
                lock=self.settings.lock_issues,
            )
        self._advance_cursor_to(ref.created_at)
        log.info("request_id=%s ticket %d is issue %s", ticket.request_id, ticket.id, ref.url)
        return self.store.set_issue(ticket.id, number=ref.number, url=ref.url, now=self._clock())

    def _advance_cursor_to(self, created: datetime) -> None:
        """Start the poll no later than the first ticket's creation (GitHub's clock)."""
        cursor = self.store.get_cursor()
        start = format_github_time(created - self.settings.poll_overlap)
        if cursor.since is None:
            self.store.set_cursor(PollCursor(since=start, etag=None))

    async def wait(self, ticket: Ticket) -> Outcome:
        """Wait until the ticket is answered or its deadline passes."""
        event = self._events.setdefault(ticket.id, asyncio.Event())
        while True:
            current = self.store.get_ticket(ticket.id)
            assert current is not None
            if current.state in {TicketState.ANSWERED, TicketState.DELIVERED}:
                return Outcome(current, self.store.answer_for(ticket.id))
            if current.state is TicketState.EXPIRED:
                return Outcome(current, None)
            remaining = (current.deadline - self._clock()).total_seconds()
            if remaining <= 0:
                self.expire(current)
                continue
            event.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout=remaining)

    def delivered(self, outcome: Outcome) -> None:
        """Record that a client received this outcome; close the issue on first delivery."""
        ticket = outcome.ticket
        if outcome.answer is None or ticket.issue_number is None:
            return
        if self.store.mark_delivered(ticket.id, now=self._clock()):
            number = ticket.issue_number
            log.info("request_id=%s ticket %d delivered", ticket.request_id, ticket.id)
            self.followups.add("close issue", lambda: self.github.close_issue(number))

    def expire(self, ticket: Ticket) -> None:
        """Expire a pending ticket past its deadline and say so on GitHub."""
        if not self.store.expire(ticket.id, now=self._clock()):
            return
        log.info("request_id=%s ticket %d expired", ticket.request_id, ticket.id)
        self._notify(ticket.id)
        number = ticket.issue_number
        if number is None:
            return
        notice = render_expired_notice(
            deadline=ticket.deadline, waited=ticket.deadline - ticket.created_at
        )
        self.followups.add("expiry notice", lambda: self.github.post_comment(number, notice))
        self.followups.add(
            "label expired", lambda: self.github.set_labels(number, [LABEL, LABEL_EXPIRED])
        )
        self.followups.add("close expired", lambda: self.github.close_issue(number))

    def _notify(self, ticket_id: int) -> None:
        event = self._events.pop(ticket_id, None)
        if event is not None:
            event.set()

    # --- finding answers -----------------------------------------------------------------

    async def _poll_loop(self) -> None:
        while True:
            try:
                self._expire_overdue()
                if self.store.count_pending() == 0:
                    # Nothing waits: make no GitHub requests until a ticket is opened.
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                await self.poll_once()
                delay = self.settings.poll_interval
            except GitHubUnavailable as exc:
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

    def _expire_overdue(self) -> None:
        now = self._clock()
        for ticket in self.store.pending_tickets():
            if ticket.deadline <= now:
                self.expire(ticket)

    def poke(self) -> None:
        """Poll now instead of at the next interval (a webhook arrived, a test wants it)."""
        self._wake.set()

    async def poll_once(self) -> int:
        """Read new and edited comments once and act on them; return the requests made."""
        self.polls += 1
        cursor = self.store.get_cursor()
        page = await self.github.list_comments(since=cursor.since, etag=cursor.etag)
        if page.not_modified:
            return page.requests
        newest: datetime | None = None
        for comment in page.comments:
            newest = comment.updated_at if newest is None else max(newest, comment.updated_at)
            version = (comment.id, comment.updated_at)
            if version in self._seen:
                continue
            self._seen[version] = None
            await self._consider(comment)
        since = cursor.since
        if newest is not None:
            candidate = newest - self.settings.poll_overlap
            if since is None or candidate > parse_github_time(since):
                since = format_github_time(candidate)
        # An ETag describes one URL; a new `since` is a new URL.
        etag = page.etag if since == cursor.since else None
        self.store.set_cursor(PollCursor(since=since, etag=etag))
        self._forget_seen_before(since)
        return page.requests

    def _forget_seen_before(self, since: str | None) -> None:
        if since is None or len(self._seen) < 10_000:
            return
        horizon = parse_github_time(since)
        self._seen = {key: None for key in self._seen if key[1] >= horizon}

    async def _consider(self, comment: Comment) -> None:
        if self.bot_login is not None and comment.author_login.lower() == self.bot_login.lower():
            return
        if is_bot_reply(comment.body):
            return
        ticket = self.store.ticket_for_issue(comment.issue_number)
        if ticket is None or TRAILER_PREFIX not in comment.body:
            # Not one of our tickets, or ordinary discussion: neither can answer.
            return
        if ticket.state is not TicketState.OPEN:
            answer = self.store.answer_for(ticket.id)
            if answer is None or answer.comment_id != comment.id:
                self._reply_once(
                    ticket,
                    comment,
                    "late",
                    render_late_answer_reply(comment_url=comment.url, state=ticket.state.value),
                )
            return
        verdict = verify_comment(
            comment.body,
            author_login=comment.author_login,
            author_id=comment.author_id,
            ticket=self.ticket_ref(ticket),
            keyring=self._keyring(),
            now=self._clock(),
            is_jti_used=self.store.is_jti_used,
            limits=self.settings.verify_limits,
        )
        if isinstance(verdict, Accepted):
            stored = self.store.request_for(ticket.id)
            request = ChatRequest.from_json(stored) if stored else None
            release = (
                prepare_release(verdict.text, request, call_id_seed=ticket.request_key)
                if request is not None
                else Release(content=verdict.text, tool_calls=(), finish_reason="stop")
            )
            if isinstance(release, Refusal):
                log.info(
                    "request_id=%s comment %d is signed but cannot be released: %s",
                    ticket.request_id,
                    comment.id,
                    "; ".join(release.problems),
                )
                self._reply_once(
                    ticket,
                    comment,
                    "unreleasable",
                    render_unreleasable_reply(
                        comment_url=comment.url,
                        author=comment.author_login,
                        problems=release.problems,
                    ),
                )
                return
            self._accept(ticket, comment, verdict, release)
            return
        log.info(
            "request_id=%s comment %d by %s not accepted: %s (%s)",
            ticket.request_id,
            comment.id,
            comment.author_login,
            verdict.reason.value,
            verdict.detail,
        )
        if verdict.reason is not RejectReason.UNSIGNED:
            self._reply_once(
                ticket,
                comment,
                f"rejected:{verdict.reason.value}",
                render_rejection_reply(
                    comment_url=comment.url, author=comment.author_login, detail=verdict.detail
                ),
            )

    def _accept(
        self, ticket: Ticket, comment: Comment, verdict: Accepted, release: Release
    ) -> None:
        stored = StoredAnswer(
            ticket_id=ticket.id,
            comment_id=comment.id,
            comment_url=comment.url,
            text=verdict.text,
            signer=verdict.signer,
            kid=verdict.kid,
            jti=verdict.jti,
            digest=verdict.digest,
            accepted_at=self._clock(),
            delivered_at=None,
            release=encode_release(release),
        )
        if not self.store.accept_answer(stored):
            return
        log.info(
            "request_id=%s ticket %d answered by %s (kid %s, comment %d)",
            ticket.request_id,
            ticket.id,
            verdict.signer,
            verdict.kid,
            comment.id,
        )
        self._notify(ticket.id)
        number = comment.issue_number
        self.followups.add(
            "label answered", lambda: self.github.set_labels(number, [LABEL, LABEL_ANSWERED])
        )

    def _reply_once(self, ticket: Ticket, comment: Comment, kind: str, body: str) -> None:
        # One reply per comment, and a cap per ticket, so that replies cannot be used to
        # make the bot spam the repository.
        if self.store.count_replies(ticket.id) >= self.settings.max_replies_per_ticket:
            return
        if not self.store.claim_reply(
            comment.id, ticket_id=ticket.id, kind=kind, now=self._clock()
        ):
            return
        number = comment.issue_number
        self.followups.add(kind, lambda: self.github.post_comment(number, body))
