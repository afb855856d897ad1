"""The ticket desk: requests in, verified answers out.

It opens one ticket per request key (a retry re-attaches), finds answers with the
repo-wide comment poll, verifies each signed comment with :mod:`auth.verify`, commits the
first valid answer before anyone is told about it, expires tickets nobody answered, and
keeps GitHub's labels and state in step. Follow-up writes (labels, replies, closing)
are stored in the durable :class:`~ticketing.github.write_queue.WriteQueue` and sent in the
background, so a waiting client is never held up by GitHub bookkeeping and a crash loses
none of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import os
import secrets
import socket
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from auth.comment import TRAILER_PREFIX
from auth.keyring import Keyring
from auth.logins import same_login
from auth.policy import Command, Judgement, ReviewDecision, ReviewPolicy, decide, tally_review
from auth.roles import Act, Role
from auth.verify import Accepted, RejectReason, Verdict, VerifyLimits, verify_comment
from ticketing.answers import Refusal, Release, prepare_release
from ticketing.coordination import Coordinator, LocalCoordinator, Subscription
from ticketing.errors import DeskStopped, GitHubUnavailable, TicketingError
from ticketing.github.client import GitHubClient
from ticketing.github.interface import Comment
from ticketing.github.poll_budget import poll_delay
from ticketing.github.times import format_github_time, parse_github_time
from ticketing.github.webhooks import CommentEvent
from ticketing.github.write_kinds import Guard
from ticketing.github.write_queue import WriteQueue
from ticketing.references import ticket_reference
from ticketing.render.drafts import MAX_DRAFT_COMMENT, draft_digest, render_draft_comment
from ticketing.render.redact import describe_redactions, redact_request
from ticketing.render.replies import (
    is_bot_reply,
    render_delivered_notice,
    render_expired_notice,
    render_late_answer_reply,
    render_needs_review_notice,
    render_rejection_reply,
    render_review_rejected_notice,
    render_unreleasable_reply,
)
from ticketing.render.ticket import RenderedTicket, render_step, render_ticket, request_marker
from ticketing.request import ChatRequest, ToolCall
from ticketing.store.sqlite import (
    Candidate,
    DraftState,
    PollCursor,
    ReplyClaim,
    StoredAnswer,
    StoredJudgement,
    ThreadStart,
    Ticket,
    TicketState,
    TicketStore,
)
from ticketing.threads import (
    continuation_fingerprints,
    is_side_call,
    named_thread_key,
    reply_fingerprint,
    step_delta,
    tools_changed,
)

log = logging.getLogger(__name__)

LABEL = "ticketproxy"
LABEL_AWAITING = "awaiting-answer"
LABEL_ANSWERED = "answered"
LABEL_EXPIRED = "expired"
LABEL_NEEDS_REVIEW = "needs-review"
# Reactions on an editor's signed comment: seen and verified, delivered, refused (GitHub's
# reaction set has no check mark or cross: a rocket and a thumbs-down stand in for them).
REACTION_SEEN = "eyes"
REACTION_DELIVERED = "rocket"
REACTION_REFUSED = "-1"
_ANSWER = frozenset({Act.ANSWER})
_JUDGING = frozenset({Act.APPROVE, Act.REJECT})
# Delivered outcomes kept in memory to answer retries without touching the store.
_DELIVERED_CACHE = 4096
_REPLAYED = "This signature was already used; sign the answer again to post it anew."
# Prompts at least this long (characters of message text) are rendered in a worker thread:
# a multi-megabyte prompt takes a fraction of a second to fence and split.
RENDER_IN_THREAD_FROM = 200_000
# Webhooks count as arriving while the last one is at most this old.
WEBHOOKS_FRESH_FOR = timedelta(minutes=10)


def new_replica_id() -> str:
    """Return a name for this process among replicas: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def _version(comment: Comment) -> tuple[int, datetime, str]:
    """Name one version of a comment for dedupe.

    GitHub's timestamps have whole seconds, so an edit within the same second as the
    version already seen keeps its ``updated_at``: the body's hash tells them apart.
    """
    digest = hashlib.sha256(comment.body.encode("utf-8", "surrogatepass")).hexdigest()
    return (comment.id, comment.updated_at, digest)


def _render_step_of(shown: ChatRequest, notes: tuple[str, ...], **fields: Any) -> RenderedTicket:
    """Render a step comment (a partial of this is run off the event loop for big prompts)."""
    return render_step(shown, notes=notes, **fields)


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
    # While webhooks arrive, poll this many times less often (the backstop).
    webhook_backstop_factor: float = 6.0
    # Which answers wait for security reviewers' signed approvals.
    policy: ReviewPolicy = field(default_factory=ReviewPolicy.default)
    # With several replicas, only the holder of this lease polls GitHub; a replica that
    # stops (or dies) without renewing it hands polling over within this long.
    poll_lease: timedelta = timedelta(seconds=15)
    # The answer page's address, linked from every ticket (None: tickets name /desk/ only).
    answer_page: str | None = None


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


async def _cancel(task: asyncio.Task[None]) -> None:
    """Cancel a background task and wait until it has ended."""
    # Python 3.11's wait_for can lose a cancellation that lands as its timeout fires (the
    # TimeoutError wins, and the loop suppresses it): so cancel again until the task ends.
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=1.0)
    with contextlib.suppress(asyncio.CancelledError):
        task.result()


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
        coordinator: Coordinator | None = None,
        replica_id: str | None = None,
    ) -> None:
        self.store = store
        self.github = github
        self.settings = settings
        self.bot_login = bot_login
        self._keyring = keyring
        self._clock = clock
        self._sleep = sleep
        self.followups = WriteQueue(store=store, github=github, clock=clock)
        # Who waits for which ticket, and when each waited-for ticket expires.
        self._watchers: dict[int, list[asyncio.Future[Outcome]]] = {}
        self._stopped = False
        self._deadline_timers: dict[int, asyncio.TimerHandle] = {}
        self._delivered: OrderedDict[str, Outcome] = OrderedDict()
        # The cross-process parts (key locks, jtis, poll lease, wake-ups); alone, in-process.
        self.coordinator: Coordinator = coordinator or LocalCoordinator()
        self.replica_id = replica_id or new_replica_id()
        self._subscription: Subscription | None = None
        self._listen_task: asyncio.Task[None] | None = None
        self._announcing: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._seen: dict[tuple[int, datetime, str], None] = {}
        self._poll_task: asyncio.Task[None] | None = None
        self.polls = 0
        # Read by the proxy's metrics at scrape time (ticketing imports no metrics library).
        self.answers_accepted = 0
        self.answers_rejected: Counter[str] = Counter()
        self.last_webhook_at: datetime | None = None

    # --- life cycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Start polling; tickets left pending by an earlier run resume."""
        self.followups.start()
        # Subscribed before anything is served, so no announcement from another replica is
        # missed between start-up and the first wait.
        self._subscription = await self.coordinator.subscribe()
        self._listen_task = asyncio.create_task(self._listen(), name="ticketproxy-wakeups")
        self._poll_task = asyncio.create_task(self._poll_loop(), name="ticketproxy-poller")
        pending = self.store.count_pending()
        if pending:
            log.info("resuming %d pending ticket(s)", pending)
            self._wake.set()

    async def stop(self) -> None:
        """Stop polling and finish queued GitHub writes."""
        if self._poll_task is not None:
            await _cancel(self._poll_task)
            self._poll_task = None
        if self._announcing:
            await asyncio.gather(*self._announcing, return_exceptions=True)
        # The listener first: closing a subscription that a task still reads can hang.
        if self._listen_task is not None:
            await _cancel(self._listen_task)
            self._listen_task = None
        if self._subscription is not None:
            await self._subscription.close()
            self._subscription = None
        self._stopped = True
        for timer in self._deadline_timers.values():
            timer.cancel()
        self._deadline_timers.clear()
        # Nothing will settle these any more: their clients are told to retry, and the
        # retry re-attaches to the ticket (on this process restarted, or another replica).
        for ticket_id in list(self._watchers):
            for future in self._unwatch(ticket_id):
                if not future.done():
                    future.set_exception(DeskStopped())
        # Another replica takes over polling at once rather than when the lease runs out.
        await self.coordinator.release_poll_lease(self.replica_id)
        await self.followups.stop()

    def ticket_ref(self, ticket: Ticket) -> str:
        """Return the reference a signature's ``aud`` must name: ``owner/repo#N`` or ``#N/step``.

        The step is part of it, so a signature for one step of an agent run can answer
        no other step on the same issue.
        """
        if ticket.issue_number is None:
            raise ValueError(f"ticket {ticket.id} has no issue yet")
        return ticket_reference(self.settings.repo, ticket.issue_number, ticket.step)

    def _page_of(self, ticket: Ticket) -> str | None:
        """Return the answer page's address that opens this ticket, if the page is known."""
        page = self.settings.answer_page
        if page is None or ticket.issue_number is None:
            return page
        return f"{page}?ticket={ticket.issue_number}"

    def _step_ref(self, ticket: Ticket) -> str | None:
        """Return the reference a bot record names for a later step; None for the issue."""
        return self.ticket_ref(ticket) if ticket.step > 1 else None

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

    async def submit(
        self, request: ChatRequest, *, request_id: str, thread_name: str | None = None
    ) -> Ticket:
        """Return the ticket for this request, opening an issue only if none is live.

        A retried request (same key) re-attaches to its ticket. The next step of an agent
        run (see :mod:`ticketing.threads`; ``thread_name`` is a thread the client named)
        becomes a step comment on the run's issue rather than an issue of its own. Raises
        GitHubUnavailable when GitHub cannot take the issue now; the ticket is kept, so the
        retry resumes it.
        """
        delivered = self._recently_delivered(request.key)
        if delivered is not None:
            # A retry of an answer already delivered: no lock, no store, no GitHub.
            return delivered.ticket
        # Held across replicas: a request sent to two of them at once opens one issue.
        async with self.coordinator.hold_key(request.key):
            now = self._clock()
            ticket = self.store.latest_ticket_for_key(request.key)
            fresh = not self._reusable(ticket, now)
            if fresh:
                ticket = self.store.open_ticket(
                    request.key,
                    request_id=request_id,
                    created=now,
                    deadline=now + self.settings.max_wait,
                    request=request.to_json(),
                    client=request.client,
                    thread=self._thread_for(request, thread_name),
                )
                if thread_name is not None and ticket.thread_id is not None:
                    self._name_run(request.client, thread_name, ticket)
                log.info(
                    "request_id=%s ticket %d opened (step %d of run %s)",
                    request_id,
                    ticket.id,
                    ticket.step,
                    ticket.thread_id,
                )
            else:
                assert ticket is not None
                log.debug(
                    "request_id=%s re-attached to ticket %d (%s)",
                    request_id,
                    ticket.id,
                    ticket.state,
                )
            assert ticket is not None
            if ticket.state is TicketState.CREATING and ticket.step > 1:
                ticket = await self._create_step(ticket, request, fresh=fresh)
            elif ticket.state is TicketState.CREATING:
                ticket = await self._create_issue(ticket, request, fresh=fresh)
            self._wake.set()
        # Wakes the replica holding the poll lease, should it be idle.
        self._announce(ticket.id)
        return ticket

    # --- threads: one issue per agent run -----------------------------------------------

    def _thread_for(self, request: ChatRequest, name: str | None) -> ThreadStart | None:
        """Return the agent run this request continues, or None to open an issue of its own."""
        if name is not None:
            thread_id = self.store.thread_for_name(named_thread_key(request.client, name))
            return None if thread_id is None else self._continue(thread_id, None)
        for _, fingerprint in continuation_fingerprints(request):
            parent = self.store.ticket_for_reply(fingerprint)
            if parent is not None and parent.thread_id is not None:
                return self._continue(parent.thread_id, parent)
        if is_side_call(request):
            thread_id = self.store.latest_thread_of_client(request.client)
            return None if thread_id is None else self._continue(thread_id, None)
        return None

    def _name_run(self, client: str, name: str, ticket: Ticket) -> None:
        """Point a client's thread name at the run this ticket belongs to, if it has none.

        A name already on a live run stays there: a request that could not join it (its run
        had a step waiting) opened an issue of its own, which must not take the name over.
        """
        key = named_thread_key(client, name)
        named = self.store.thread_for_name(key)
        if named is None or self._continue(named, None) is None:
            assert ticket.thread_id is not None
            self.store.name_thread(key, ticket.thread_id)

    def _continue(self, thread_id: int, parent: Ticket | None) -> ThreadStart | None:
        """Continue the run after ``parent`` (default: its newest step), if its issue exists."""
        root = self.store.get_ticket(thread_id)
        if root is None or root.issue_number is None:
            return None
        parent = parent or self.store.newest_in_thread(thread_id)
        if parent is None:
            return None
        return ThreadStart(thread_id=thread_id, parent_id=parent.id)

    def render(self, ticket: Ticket, request: ChatRequest) -> RenderedTicket:
        """Render a ticket as GitHub shows it: the issue (step 1) or its step comment."""
        return self._renderer(ticket, request)()

    async def _render_off_loop(self, ticket: Ticket, request: ChatRequest) -> RenderedTicket:
        """Render a ticket; a large prompt in a worker thread, so waiting clients keep going."""
        job = self._renderer(ticket, request)
        size = sum(
            len(m.content) + sum(len(c.arguments) for c in m.tool_calls) for m in request.messages
        ) + sum(len(json.dumps(t.parameters)) + len(t.description) for t in request.tools)
        if size < RENDER_IN_THREAD_FROM:
            return job()
        # Pure work (redaction, fencing, continuations) on values read from the store here.
        return await asyncio.to_thread(job)

    def _renderer(self, ticket: Ticket, request: ChatRequest) -> Callable[[], RenderedTicket]:
        """Read what rendering needs from the store, and return the pure rendering to run."""
        # One marker per ticket, not per request: after an expiry the same request opens a
        # new ticket, which must never be matched to the old, expired issue.
        marked = replace(request, key=f"{request.key}{ticket.id:08x}")
        parent = None if ticket.parent_id is None else self.store.get_ticket(ticket.parent_id)
        root = None if ticket.thread_id is None else self.store.get_ticket(ticket.thread_id)
        stored = None if parent is None else self.store.request_for(parent.id)
        step: Callable[[ChatRequest, tuple[str, ...]], RenderedTicket] | None = None
        if ticket.step > 1 and parent is not None and root is not None and stored is not None:
            assert root.issue_number is not None
            previous = ChatRequest.from_json(stored)
            delta = step_delta(previous, request, echoed=self._echoed(parent, previous, request))
            step = functools.partial(
                _render_step_of,
                step=ticket.step,
                new_from=delta.new_from,
                changed=delta.changed,
                tools_changed=tools_changed(previous, request),
                request_id=ticket.request_id,
                created=ticket.created_at,
                deadline=ticket.deadline,
                repo=self.settings.repo,
                issue_number=root.issue_number,
                since_step=parent.step,
                answer_page=self.settings.answer_page,
            )
        repo = self.settings.repo
        answer_page = self.settings.answer_page

        def job() -> RenderedTicket:
            # Secrets in the prompt are not posted; the stored request keeps them, since
            # answers are checked against what the agent really sent.
            shown, redactions = redact_request(marked)
            note = describe_redactions(redactions)
            notes = (note,) if note else ()
            if step is not None:
                return step(shown, notes)
            return render_ticket(
                shown,
                request_id=ticket.request_id,
                created=ticket.created_at,
                deadline=ticket.deadline,
                repo=repo,
                notes=notes,
                answer_page=answer_page,
            )

        return job

    def _echoed(self, parent: Ticket, previous: ChatRequest, request: ChatRequest) -> int | None:
        """Return the index of the assistant message repeating the parent's reply, if any."""
        release = Outcome(parent, self.store.answer_for(parent.id)).release
        if release is None:
            return None
        wanted = reply_fingerprint(previous, release.content, release.tool_calls)
        for index, fingerprint in continuation_fingerprints(request):
            if fingerprint == wanted:
                return index
        return None

    def _link_reply(
        self, ticket: Ticket, release: Release, request: ChatRequest | None = None
    ) -> None:
        """Remember the reply this ticket gives, so the agent's next step finds its run.

        ``request`` is the ticket's stored request when the caller has already read it.
        """
        if request is None:
            stored = self.store.request_for(ticket.id)
            if stored is None:
                return
            request = ChatRequest.from_json(stored)
        fingerprint = reply_fingerprint(request, release.content, release.tool_calls)
        self.store.link_reply(fingerprint, ticket.id)

    async def _create_step(self, ticket: Ticket, request: ChatRequest, *, fresh: bool) -> Ticket:
        """Post the next step of an agent run as a comment on its issue, and reopen it."""
        root = self.store.get_ticket(ticket.thread_id or ticket.id)
        assert root is not None
        assert root.issue_number is not None
        assert root.issue_url is not None
        number = root.issue_number
        rendered = await self._render_off_loop(ticket, request)
        # A ticket still "creating" from an earlier attempt may have its comments already:
        # then each is looked for (by its exact body) before it is posted; in a series, an
        # earlier attempt's first comment may be further back than usual.
        lookback = 10 + len(rendered.continuations)
        comment_id = await self.github.post_comment(
            number, rendered.body, might_have_sent=not fresh, lookback=lookback
        )
        for part in rendered.continuations:
            await self.github.post_comment(
                number, part, might_have_sent=not fresh, lookback=lookback
            )
        # Also while still "creating": with replicas, another one's queue may send these
        # before this one records the step as open (the comment is posted by then).
        guard = Guard.ticket_in(
            ticket.id, {TicketState.CREATING, TicketState.OPEN}, newest_step=True
        )
        self.followups.reopen(number, request_id=ticket.request_id, only_if=guard)
        self.followups.set_labels(
            number, [LABEL, LABEL_AWAITING], request_id=ticket.request_id, only_if=guard
        )
        url = f"{root.issue_url.split('#', 1)[0]}#issuecomment-{comment_id}"
        log.info(
            "request_id=%s ticket %d is step %d of issue #%d (%s)",
            ticket.request_id,
            ticket.id,
            ticket.step,
            number,
            url,
        )
        return self.store.set_issue(ticket.id, number=number, url=url, now=self._clock())

    async def _create_issue(self, ticket: Ticket, request: ChatRequest, *, fresh: bool) -> Ticket:
        rendered = await self._render_off_loop(ticket, request)
        marker = request_marker(f"{request.key}{ticket.id:08x}")
        # A ticket still "creating" from an earlier attempt may already have its issue (a
        # crash or a lost response after GitHub created it): look before creating again. A
        # ticket opened just now cannot have one, so it costs GitHub no lookup.
        ref = None if fresh else await self.github.find_issue_by_marker(marker)
        created = ref is None
        if ref is None:
            ref = await self.github.create_issue(
                title=rendered.title,
                body=rendered.body,
                labels=[LABEL, LABEL_AWAITING],
                marker=marker,
                lock=self.settings.lock_issues,
            )
        # The rest of a prompt too long for one body, in order, before anyone is asked.
        for part in rendered.continuations:
            await self.github.post_comment(
                ref.number,
                part,
                might_have_sent=not created,
                lookback=10 + len(rendered.continuations),
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

    def _recently_delivered(self, request_key: str) -> Outcome | None:
        """Return a delivered outcome still inside the redeliver window, from memory."""
        outcome = self._delivered.get(request_key)
        if outcome is None or outcome.answer is None or outcome.answer.delivered_at is None:
            return None
        if self._clock() - outcome.answer.delivered_at >= self.settings.redeliver_window:
            del self._delivered[request_key]
            return None
        return outcome

    def _remember_delivery(self, outcome: Outcome) -> None:
        # A delivered outcome never changes again, so any replica may keep it in memory;
        # bounded, oldest first out.
        self._delivered[outcome.ticket.request_key] = outcome
        while len(self._delivered) > _DELIVERED_CACHE:
            self._delivered.popitem(last=False)

    def settled(self, ticket: Ticket) -> Outcome | None:
        """Return the ticket's outcome if it is already decided, without waiting."""
        remembered = self._recently_delivered(ticket.request_key)
        if remembered is not None and remembered.ticket.id == ticket.id:
            return remembered
        current = self.store.get_ticket(ticket.id)
        return None if current is None else self._outcome_of(current)

    def _outcome_of(self, current: Ticket) -> Outcome | None:
        """Return how a ticket ended, as the store says now, or None while it waits."""
        if current.state in {TicketState.ANSWERED, TicketState.DELIVERED}:
            return Outcome(current, self.store.answer_for(current.id))
        if current.state is TicketState.EXPIRED:
            return Outcome(current, None)
        return None

    def watch(self, ticket: Ticket) -> asyncio.Future[Outcome]:
        """Return a future of the ticket's outcome: its answer, or its expiry at the deadline.

        Cancelling the future (the client went away) leaves the ticket waiting.
        """
        if self._stopped:
            raise DeskStopped()
        # A plain future per waiting client, and one deadline timer per ticket: thousands of
        # clients wait at once, and a task with its own timer each cost several KiB apiece.
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        # Futures cancelled meanwhile (their clients left) are dropped here and when the
        # ticket settles, rather than by a done-callback each.
        watchers = [f for f in self._watchers.get(ticket.id, ()) if not f.done()]
        watchers.append(future)
        self._watchers[ticket.id] = watchers
        try:
            self._settle(ticket.id)
        except BaseException:
            future.cancel()  # the caller gets the error; nothing is left waiting
            raise
        return future

    def _settle(self, ticket_id: int) -> None:
        """Hand a finished ticket's outcome to its watchers; expire it if overdue."""
        while ticket_id in self._watchers:
            if all(future.done() for future in self._watchers[ticket_id]):
                self._unwatch(ticket_id)  # every client waiting here has left
                return
            current = self.store.get_ticket(ticket_id)
            assert current is not None
            outcome = self._outcome_of(current)
            if outcome is not None:
                for future in self._unwatch(ticket_id):
                    if not future.done():
                        future.set_result(outcome)
                return
            remaining = (current.deadline - self._clock()).total_seconds()
            if remaining <= 0:
                # Notifies the watchers (settling them) unless the ticket changed meanwhile;
                # either way the next round reads it again.
                self.expire(current)
                continue
            if ticket_id not in self._deadline_timers:
                self._deadline_timers[ticket_id] = asyncio.get_running_loop().call_later(
                    remaining, self._deadline_passed, ticket_id
                )
            return

    def _unwatch(self, ticket_id: int) -> list[asyncio.Future[Outcome]]:
        """Stop watching a ticket (and its deadline); return the futures that watched it."""
        timer = self._deadline_timers.pop(ticket_id, None)
        if timer is not None:
            timer.cancel()
        return self._watchers.pop(ticket_id, [])

    def _deadline_passed(self, ticket_id: int) -> None:
        self._deadline_timers.pop(ticket_id, None)
        self._settle_or_fail(ticket_id)

    def _settle_or_fail(self, ticket_id: int) -> None:
        """Settle from a callback: a failure (say, of the store) goes to the watchers."""
        try:
            self._settle(ticket_id)
        except Exception as exc:
            log.exception("waiting on ticket %d failed", ticket_id)
            for future in self._unwatch(ticket_id):
                if not future.done():
                    future.set_exception(exc)

    def delivered(self, outcome: Outcome) -> None:
        """Record that a client received this outcome; close the issue on first delivery."""
        ticket = outcome.ticket
        if outcome.answer is None or ticket.issue_number is None:
            return
        if outcome.answer.delivered_at is not None:
            self._remember_delivery(outcome)
            return  # a re-delivery (the client retried after a lost response)
        # Queued before the delivery is committed and sent only once it is (see followups):
        # a crash in between can neither lose the close nor close an undelivered ticket.
        close = self.followups.close(
            ticket.issue_number,
            request_id=ticket.request_id,
            only_if=Guard.ticket_in(ticket.id, {TicketState.DELIVERED}, newest_step=True),
        )
        answer = outcome.answer
        # GitHub's reactions hold no check mark: a rocket says "sent to the agent".
        shipped = self.followups.react(
            ticket.issue_number,
            answer.comment_id,
            REACTION_DELIVERED,
            request_id=ticket.request_id,
            only_if=Guard.ticket_in(ticket.id, {TicketState.DELIVERED}),
        )
        approvers = [
            j.reviewer for j in self.store.judgements_for(answer.comment_id) if j.act == "approve"
        ]
        # The record of exactly which signed text the agent got, for `ticketproxy audit`.
        notice = self.followups.comment(
            ticket.issue_number,
            render_delivered_notice(
                comment_url=answer.comment_url,
                signer=answer.signer,
                kid=answer.kid,
                delivered_at=self._clock(),
                comment_id=answer.comment_id,
                digest=answer.digest,
                approvers=approvers,
                ticket=self._step_ref(ticket),
            ),
            request_id=ticket.request_id,
            only_if=Guard.ticket_in(ticket.id, {TicketState.DELIVERED}),
        )
        now = self._clock()
        if self.store.mark_delivered(ticket.id, now=now):
            log.info("request_id=%s ticket %d delivered", ticket.request_id, ticket.id)
            self._remember_delivery(
                Outcome(
                    replace(ticket, state=TicketState.DELIVERED),
                    replace(answer, delivered_at=now),
                )
            )
        else:
            for write in (notice, close, shipped):
                self.followups.cancel(write, "delivered before")

    def expire(self, ticket: Ticket) -> None:
        """Expire a pending ticket past its deadline and say so on GitHub."""
        writes: list[int] = []
        number = ticket.issue_number
        if number is None and ticket.step > 1 and ticket.thread_id is not None:
            # A step whose comment was perhaps posted, but never confirmed (the client gave
            # up): its run's issue still says that the step ended.
            root = self.store.get_ticket(ticket.thread_id)
            number = None if root is None else root.issue_number
        if number is not None:
            # Queued before the expiry is committed, sent only once it is (see followups).
            notice = render_expired_notice(
                deadline=ticket.deadline,
                waited=ticket.deadline - ticket.created_at,
                step=ticket.step,
            )
            guard = Guard.ticket_in(ticket.id, {TicketState.EXPIRED})
            # The issue's labels and state belong to its newest step.
            newest = Guard.ticket_in(ticket.id, {TicketState.EXPIRED}, newest_step=True)
            request_id = ticket.request_id
            writes = [
                self.followups.comment(number, notice, request_id=request_id, only_if=guard),
                self.followups.set_labels(
                    number, [LABEL, LABEL_EXPIRED], request_id=request_id, only_if=newest
                ),
                self.followups.close(number, request_id=request_id, only_if=newest),
            ]
        if not self.store.expire(ticket.id, now=self._clock()):
            for write in writes:
                self.followups.cancel(write, "the ticket was no longer pending")
            return
        log.info("request_id=%s ticket %d expired", ticket.request_id, ticket.id)
        self._notify(ticket.id)

    def _notify(self, ticket_id: int) -> None:
        self._wake_waiters(ticket_id)
        self._announce(ticket_id)

    def _wake_waiters(self, ticket_id: int) -> None:
        # Read afresh: an announcement may come without the ticket having finished.
        self._settle_or_fail(ticket_id)

    def _announce(self, ticket_id: int) -> None:
        """Tell the other replicas, in the background, that this ticket changed."""
        task = asyncio.create_task(self._publish(ticket_id))
        self._announcing.add(task)
        task.add_done_callback(self._announcing.discard)

    async def _publish(self, ticket_id: int) -> None:
        try:
            await self.coordinator.publish(ticket_id)
        except TicketingError as exc:
            # The others still find the change at their next read of the store (a deadline
            # or a retry); a lost wake-up delays a client, it loses nothing.
            log.warning("could not announce ticket %d to other replicas: %s", ticket_id, exc)

    async def _listen(self) -> None:
        """Wake local waiters (and an idle poller) for tickets other replicas changed."""
        subscription = self._subscription
        assert subscription is not None
        try:
            async for ticket_id in subscription:
                self._wake_waiters(ticket_id)
                ticket = self.store.get_ticket(ticket_id)
                if ticket is not None and ticket.state.pending:
                    self._wake.set()  # a ticket was opened elsewhere: someone must poll
        except TicketingError as exc:
            # Without wake-ups, waiters here are released by their deadlines only: say so.
            log.error("stopped listening to other replicas: %s", exc)

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
                lease = self.settings.poll_lease
                if await self.coordinator.hold_poll_lease(self.replica_id, lease):
                    await self.poll_once()
                    # As GitHub's primary budget runs low, poll less often (or not until reset).
                    delay = poll_delay(
                        self._poll_delay(),
                        self.github.rate_remaining,
                        self.github.rate_limit,
                        self.github.reset_in(now=self._clock()),
                    )
                    # Held through the pause too, so that the replicas do not take turns.
                    await self.coordinator.hold_poll_lease(
                        self.replica_id, lease + timedelta(seconds=min(delay, 86_400.0))
                    )
                else:
                    # Another replica polls and announces what it finds; look again in
                    # time to take over should it stop renewing.
                    delay = min(self._poll_delay(), lease.total_seconds() / 3)
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
        for ticket in self.store.overdue_tickets(self._clock()):
            self.expire(ticket)

    def _poll_delay(self) -> float:
        last = self.last_webhook_at
        if last is not None and self._clock() - last <= WEBHOOKS_FRESH_FOR:
            # GitHub does not redeliver a failed delivery, so polling goes on as the source
            # of truth, only less often while webhooks bring the news first.
            return self.settings.poll_interval * self.settings.webhook_backstop_factor
        return self.settings.poll_interval

    async def receive_comment_event(self, event: CommentEvent) -> None:
        """Act on a verified ``issue_comment`` webhook as on a polled comment."""
        if event.repo.lower() != self.settings.repo.lower():
            log.info("webhook for %s ignored: tickets live in %s", event.repo, self.settings.repo)
            return
        self.last_webhook_at = self._clock()
        comment = event.comment
        if event.action == "deleted":
            ticket = self.store.ticket_for_issue(comment.issue_number)
            answer = None if ticket is None else self.store.answer_for(ticket.id)
            if ticket is not None and answer is not None and answer.comment_id == comment.id:
                # The answer stays accepted (it was verified and may be delivered); the
                # audit reports the deletion.
                log.warning(
                    "request_id=%s ticket %d: its accepted answer (comment %d by %s) was deleted",
                    ticket.request_id,
                    ticket.id,
                    comment.id,
                    comment.author_login,
                )
            return
        # The same (id, updated_at) dedupe as the poll: a version seen both ways counts once.
        version = _version(comment)
        if version in self._seen:
            return
        self._seen[version] = None
        await self._consider(comment)

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
            version = _version(comment)
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
        if ticket.state is TicketState.NEEDS_REVIEW:
            await self._judge(ticket, comment)
            return
        if ticket.state is not TicketState.OPEN:
            answer = self.store.answer_for(ticket.id)
            if answer is None or answer.comment_id != comment.id:
                self.answers_rejected["late"] += 1
                self._reply_once(
                    ticket,
                    comment,
                    "late",
                    render_late_answer_reply(comment_url=comment.url, state=ticket.state.value),
                )
            return
        verdict = self._verify(ticket, comment, acts=_ANSWER)
        if not isinstance(verdict, Accepted) and verdict.reason is RejectReason.WRONG_ACT:
            # A signed approval or rejection, but no answer waits for review yet.
            self._refuse(
                ticket,
                comment,
                "early-judgement",
                "no answer is waiting for review on this ticket; approvals and rejections"
                " count only after the bot asks for a review",
            )
            return
        if isinstance(verdict, Accepted) and not await self._claim_jti(verdict, comment):
            self.answers_rejected[RejectReason.REPLAYED.value] += 1
            self._reply_once(
                ticket,
                comment,
                f"rejected:{RejectReason.REPLAYED.value}",
                render_rejection_reply(
                    comment_url=comment.url, author=comment.author_login, detail=_REPLAYED
                ),
            )
            return
        if isinstance(verdict, Accepted):
            # Seen and verified: the editor knows at a glance the proxy has it.
            self.followups.react(
                comment.issue_number, comment.id, REACTION_SEEN, request_id=ticket.request_id
            )
            stored = self.store.request_for(ticket.id)
            request = ChatRequest.from_json(stored) if stored else None
            release = (
                prepare_release(verdict.text, request, call_id_seed=ticket.request_key)
                if request is not None
                else Release(content=verdict.text, tool_calls=(), finish_reason="stop")
            )
            if isinstance(release, Refusal):
                self.answers_rejected["unreleasable"] += 1
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
            commands = release.commands()
            decision = decide(self.settings.policy, commands)
            if decision.required_approvals > 0:
                self._hold_for_review(ticket, comment, verdict, release, commands, decision)
                return
            self._accept(ticket, comment, verdict, release, request)
            return
        self.answers_rejected[verdict.reason.value] += 1
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

    async def _claim_jti(self, verdict: Accepted, comment: Comment) -> bool:
        """Claim the signature's jti for this comment among replicas; False if it is taken."""
        limits = self.settings.verify_limits
        # Kept as long as any signature can be valid: past that, its own exp refuses it.
        ttl = limits.max_lifetime + 2 * limits.leeway
        if await self.coordinator.claim_jti(verdict.jti, holder=f"comment:{comment.id}", ttl=ttl):
            return True
        log.info(
            "comment %d by %s refused: its jti was already used by another comment",
            comment.id,
            comment.author_login,
        )
        return False

    def _label_answered(self, ticket: Ticket, number: int) -> int:
        """Queue the "answered" label, sent only once an answer is committed (see followups)."""
        return self.followups.set_labels(
            number,
            [LABEL, LABEL_ANSWERED],
            request_id=ticket.request_id,
            only_if=Guard.ticket_in(
                ticket.id, {TicketState.ANSWERED, TicketState.DELIVERED}, newest_step=True
            ),
        )

    def _accept(
        self,
        ticket: Ticket,
        comment: Comment,
        verdict: Accepted,
        release: Release,
        request: ChatRequest | None,
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
        label = self._label_answered(ticket, comment.issue_number)
        if not self.store.accept_answer(stored):
            self.followups.cancel(label, "the ticket was no longer open")
            return
        self._link_reply(ticket, release, request)
        self.answers_accepted += 1
        log.info(
            "request_id=%s ticket %d answered by %s (kid %s, comment %d)",
            ticket.request_id,
            ticket.id,
            verdict.signer,
            verdict.kid,
            comment.id,
        )
        self._notify(ticket.id)

    # --- security review -------------------------------------------------------------------

    def _hold_for_review(
        self,
        ticket: Ticket,
        comment: Comment,
        verdict: Accepted,
        release: Release,
        commands: Sequence[Command],
        decision: ReviewDecision,
    ) -> None:
        """Keep a verified answer with risky commands from the agent until reviewers approve."""
        number = comment.issue_number
        candidate = Candidate(
            ticket_id=ticket.id,
            comment_id=comment.id,
            comment_url=comment.url,
            text=verdict.text,
            signer=verdict.signer,
            kid=verdict.kid,
            jti=verdict.jti,
            digest=verdict.digest,
            release=encode_release(release),
            required=decision.required_approvals,
            posted_at=comment.created_at,
            proposed_at=self._clock(),
        )
        reviewers = sorted(
            login
            for login in self._keyring().logins_with_role(Role.REVIEWER)
            if not same_login(login, verdict.signer)
        )
        guard = Guard.ticket_in(
            ticket.id, {TicketState.NEEDS_REVIEW, TicketState.ANSWERED, TicketState.DELIVERED}
        )
        writes = [
            self.followups.set_labels(
                number,
                [LABEL, LABEL_NEEDS_REVIEW],
                request_id=ticket.request_id,
                only_if=Guard.ticket_in(ticket.id, {TicketState.NEEDS_REVIEW}, newest_step=True),
            ),
            self.followups.comment(
                number,
                render_needs_review_notice(
                    comment_url=comment.url,
                    author=verdict.signer,
                    required=decision.required_approvals,
                    commands=[command.show() for command in commands],
                    findings=[(f.rule, f.detail) for f in decision.findings],
                    reviewers=reviewers,
                    comment_id=comment.id,
                    digest=verdict.digest,
                    ticket=self._step_ref(ticket),
                ),
                request_id=ticket.request_id,
                only_if=guard,
            ),
        ]
        if not self.store.propose_answer(candidate):
            for write in writes:
                self.followups.cancel(write, "the ticket was no longer open")
            return
        log.info(
            "request_id=%s ticket %d: answer by %s (comment %d) needs %d approval(s): %s",
            ticket.request_id,
            ticket.id,
            verdict.signer,
            comment.id,
            decision.required_approvals,
            "; ".join(f.rule for f in decision.findings),
        )

    def _verify(
        self,
        ticket: Ticket,
        comment: Comment,
        *,
        acts: frozenset[Act],
        judged_digest: str | None = None,
    ) -> Verdict:
        """Verify a signed comment on this ticket with the keyring and the used jtis."""
        return verify_comment(
            comment.body,
            author_login=comment.author_login,
            author_id=comment.author_id,
            ticket=self.ticket_ref(ticket),
            keyring=self._keyring(),
            now=self._clock(),
            is_jti_used=self.store.is_jti_used,
            acts=acts,
            judged_digest=judged_digest,
            limits=self.settings.verify_limits,
        )

    async def _judge(self, ticket: Ticket, comment: Comment) -> None:
        """Count a reviewer's signed approval or rejection of the answer under review."""
        candidate = self.store.pending_candidate(ticket.id)
        if candidate is None:
            return
        verdict = self._verify(ticket, comment, acts=_JUDGING, judged_digest=candidate.digest)
        if not isinstance(verdict, Accepted):
            detail = {
                RejectReason.WRONG_ACT: "an answer is already waiting for review; a reviewer"
                " must reject it before another answer can count",
                RejectReason.TEXT_MISMATCH: "this review is for a different text than the"
                f" answer under review (sha256 {candidate.digest})",
            }.get(verdict.reason, verdict.detail)
            self._refuse(ticket, comment, f"review:{verdict.reason.value}", detail)
            return
        if not await self._claim_jti(verdict, comment):
            self._refuse(ticket, comment, "review:replayed", _REPLAYED)
            return
        if verdict.act is Act.APPROVE and same_login(verdict.signer, candidate.signer):
            self._refuse(
                ticket,
                comment,
                "review:self-approval",
                "the author of an answer cannot approve it; another reviewer must",
            )
            return
        judgement = StoredJudgement(
            comment_id=comment.id,
            candidate_id=candidate.comment_id,
            act=verdict.act.value,
            reviewer=verdict.signer,
            kid=verdict.kid,
            jti=verdict.jti,
            digest=verdict.digest,
            posted_at=comment.created_at,
        )
        if not self.store.record_judgement(judgement, ticket_id=ticket.id):
            return
        tally = tally_review(
            candidate.required,
            answer_signer=candidate.signer,
            answer_digest=candidate.digest,
            answer_posted_at=candidate.posted_at,
            judgements=[
                Judgement(
                    act=Act(j.act),
                    reviewer=j.reviewer,
                    kid=j.kid,
                    jti=j.jti,
                    digest=j.digest,
                    comment_id=j.comment_id,
                    posted_at=j.posted_at,
                )
                for j in self.store.judgements_for(candidate.comment_id)
            ],
        )
        number = comment.issue_number
        if tally.state == "approved":
            label = self._label_answered(ticket, number)
            if not self.store.approve_candidate(candidate, now=self._clock()):
                self.followups.cancel(label, "the answer was no longer under review")
                return
            self._link_reply(ticket, decode_release(candidate.release))
            self.answers_accepted += 1
            log.info(
                "request_id=%s ticket %d: answer by %s approved by %s",
                ticket.request_id,
                ticket.id,
                candidate.signer,
                ", ".join(tally.approvers),
            )
            self._notify(ticket.id)
        elif tally.state == "rejected":
            guard = Guard.ticket_in(ticket.id, {TicketState.OPEN}, newest_step=True)
            writes = [
                self.followups.set_labels(
                    number, [LABEL, LABEL_AWAITING], request_id=ticket.request_id, only_if=guard
                ),
                self.followups.comment(
                    number,
                    render_review_rejected_notice(
                        comment_url=comment.url, reviewer=verdict.signer, reason=verdict.text
                    ),
                    request_id=ticket.request_id,
                    only_if=guard,
                ),
            ]
            if not self.store.reject_candidate(candidate, now=self._clock()):
                for write in writes:
                    self.followups.cancel(write, "the answer was no longer under review")
                return
            self.answers_rejected["review_rejected"] += 1
            log.info(
                "request_id=%s ticket %d: answer by %s rejected by %s",
                ticket.request_id,
                ticket.id,
                candidate.signer,
                verdict.signer,
            )
        else:
            log.info(
                "request_id=%s ticket %d: %d of %d approval(s)",
                ticket.request_id,
                ticket.id,
                len(tally.approvals),
                candidate.required,
            )

    def _refuse(self, ticket: Ticket, comment: Comment, kind: str, detail: str) -> None:
        """Count a refused signed comment and tell its author why, once."""
        self.answers_rejected[kind.replace("review:", "")] += 1
        log.info(
            "request_id=%s comment %d by %s refused (%s): %s",
            ticket.request_id,
            comment.id,
            comment.author_login,
            kind,
            detail,
        )
        self._reply_once(
            ticket,
            comment,
            kind,
            render_rejection_reply(
                comment_url=comment.url, author=comment.author_login, detail=detail
            ),
        )

    def _reply_once(self, ticket: Ticket, comment: Comment, kind: str, body: str) -> None:
        # One reply per comment, and a cap per ticket, so that replies cannot be used to
        # make the bot spam the repository.
        if self.store.count_replies(ticket.id) >= self.settings.max_replies_per_ticket:
            return
        self.followups.reply_once(
            comment.issue_number,
            body,
            claim=ReplyClaim(comment_id=comment.id, ticket_id=ticket.id, kind=kind),
            reaction=REACTION_REFUSED,
            request_id=ticket.request_id,
        )

    # --- drafts from an upstream model ------------------------------------------------------

    def claim_draft(self, ticket: Ticket, *, stale_after: timedelta | None = None) -> bool:
        """Reserve the one draft this ticket may get; False if it has one or cannot get one.

        With ``stale_after``, a claim older than that (its process stopped mid-draft) is
        taken over.
        """
        if ticket.issue_number is None or not ticket.state.pending:
            return False
        now = self._clock()
        # In the shared store: a retry, or the same request on another replica, loses here.
        stale_before = None if stale_after is None else now - stale_after
        return self.store.claim_draft(ticket.id, now=now, stale_before=stale_before)

    def post_draft(self, ticket: Ticket, text: str, *, model: str) -> bool:
        """Keep a claimed draft and queue it as a marked suggestion on the ticket's issue.

        The comment is sent only while the ticket still waits for an answer; it is never an
        answer (the bot's own comments are skipped), and a draft that is empty or too long
        for a GitHub comment is recorded as failed. Return whether it was queued.
        """
        number = ticket.issue_number
        if number is None:
            raise ValueError("a draft goes on the ticket's issue, and this ticket has none")
        digest = draft_digest(text)
        body = (
            render_draft_comment(
                text,
                model=model,
                digest=digest,
                ticket=self.ticket_ref(ticket),
                answer_page=self._page_of(ticket),
            )
            if text
            else ""
        )
        problem = (
            "the model returned no text and no tool call"
            if not text
            else f"the draft comment would have {len(body)} characters, more than GitHub takes"
            if len(body) > MAX_DRAFT_COMMENT
            else None
        )
        if problem is not None:
            self.fail_draft(ticket, problem, model=model)
            return False
        write = self.followups.comment(
            number,
            body,
            request_id=ticket.request_id,
            only_if=Guard.ticket_in(ticket.id, {state for state in TicketState if state.pending}),
        )
        if not self.store.finish_draft(
            ticket.id,
            state=DraftState.POSTED,
            now=self._clock(),
            model=model,
            text=text,
            digest=digest,
        ):
            self.followups.cancel(write, "the draft was not claimed")
            return False
        log.info(
            "request_id=%s ticket %d: draft by model %s queued (sha256 %s)",
            ticket.request_id,
            ticket.id,
            model,
            digest,
        )
        return True

    def fail_draft(self, ticket: Ticket, detail: str, *, model: str) -> None:
        """Record that no draft came for this ticket; it goes on waiting for people."""
        self.store.finish_draft(
            ticket.id, state=DraftState.FAILED, now=self._clock(), model=model, detail=detail
        )
