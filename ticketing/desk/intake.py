"""Intake: a request becomes a ticket, or re-attaches to the one its key already has.

A retried request (same key) re-attaches to its ticket, so no duplicate issue is opened.
The next step of an agent run (see :mod:`ticketing.threads`) becomes a step comment on the
run's issue instead of an issue of its own. The key is held across replicas while the
ticket is found or opened and its issue created, so a request sent to two replicas at once
opens one issue.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime

from ticketing.clock import Clock
from ticketing.coordination import Coordinator
from ticketing.errors import GitHubError, GitHubUnavailable
from ticketing.github.interface import GitHubIssues, IssueRef
from ticketing.github.times import format_github_time
from ticketing.github.write_kinds import Guard, WriteKind
from ticketing.github.write_queue import WriteQueue
from ticketing.render.ticket import request_marker
from ticketing.request import ChatRequest
from ticketing.store.interface import TicketStore
from ticketing.store.model import PollCursor, Ticket, TicketState

from .outcome import DeliveredOutcomes
from .rendering import TicketRenderer
from .runs import Runs
from .settings import LABEL, LABEL_AWAITING, DeskSettings
from .tree_links import parent_issue, queue_checklist
from .wakeups import Announcer

__all__ = ["Intake"]

log = logging.getLogger(__name__)

# Issues rendered and being opened at once; the rest of a burst waits before rendering,
# holding no rendered body. GitHub takes one call at a time anyway (see the worker).
OPENINGS_AT_ONCE = 32


class Intake:
    """Find or open the ticket for each request, and put it on GitHub."""

    def __init__(
        self,
        *,
        store: TicketStore,
        github: GitHubIssues,
        followups: WriteQueue,
        coordinator: Coordinator,
        runs: Runs,
        renderer: TicketRenderer,
        delivered: DeliveredOutcomes,
        announcer: Announcer,
        poke: Callable[[], None],
        settings: DeskSettings,
        clock: Clock,
    ) -> None:
        self._store = store
        self._github = github
        self._followups = followups
        self._coordinator = coordinator
        self._runs = runs
        self._renderer = renderer
        self._delivered = delivered
        self._announcer = announcer
        self._poke = poke
        self.settings = settings
        self._clock = clock
        self._openings = asyncio.Semaphore(OPENINGS_AT_ONCE)

    async def submit(
        self,
        request: ChatRequest,
        *,
        request_id: str,
        thread_name: str | None = None,
        continues: int | None = None,
        deadline: datetime | None = None,
    ) -> Ticket:
        """Return the ticket for this request, opening an issue only if none is live.

        ``thread_name`` is a run the client named; ``continues``, the ticket it follows;
        ``deadline``, when it expires if not the default wait from now (a delegated child).
        Raises GitHubUnavailable when GitHub cannot take the issue now; the ticket is kept, so
        the retry resumes it. Any other GitHubError ends the ticket (expired) before it is
        raised.
        """
        delivered = self._delivered.recent(request.key)
        if delivered is not None:
            # A retry of an answer already delivered: no lock, no store, no GitHub.
            return delivered.ticket
        live = self._store.latest_ticket_for_key(request.key)
        if (
            live is not None
            and live.state is not TicketState.CREATING
            and self._reusable(live, self._clock())
        ):
            # Re-attaching opens nothing, so it takes no lock: a replica killed while it held
            # this key's lock (until that lapses) keeps no retry waiting.
            log.debug("request_id=%s re-attached to ticket %d", request_id, live.id)
            self._poke()
            self._announcer.announce(live.id)
            return live
        # Held across replicas: a request sent to two of them at once opens one issue.
        async with self._coordinator.hold_key(request.key):
            now = self._clock()
            ticket = self._store.latest_ticket_for_key(request.key)
            fresh = not self._reusable(ticket, now)
            if fresh:
                ticket = self._store.open_ticket(
                    request.key,
                    request_id=request_id,
                    created=now,
                    deadline=deadline or now + self.settings.max_wait,
                    request=request.to_json(),
                    client=request.client,
                    thread=self._runs.thread_for(request, thread_name, continues=continues),
                    children_after=self.settings.tree_after_steps,
                )
                if thread_name is not None and ticket.thread_id is not None:
                    self._runs.name_run(request.client, thread_name, ticket)
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
            if ticket.state is TicketState.CREATING:
                ticket = await self._create(ticket, request, fresh=fresh)
            self._poke()
        # Wakes the replica holding the poll lease, should it be idle.
        self._announcer.announce(ticket.id)
        return ticket

    async def _create(self, ticket: Ticket, request: ChatRequest, *, fresh: bool) -> Ticket:
        """Put a "creating" ticket on GitHub; end it if GitHub refuses for good.

        A refusal that waiting cannot fix (a bad token, a missing repository) ends the
        ticket, so it is not resumed at every start; the client's retry, once the operator
        has fixed the settings, opens a new one. GitHubUnavailable keeps it for the retry.
        """
        try:
            if ticket.own_issue:
                return await self._create_child(ticket, request, fresh=fresh)
            if ticket.step > 1:
                return await self._create_step(ticket, request, fresh=fresh)
            ref = await self._open_issue(ticket, request, fresh=fresh)
            return self._store.set_issue(
                ticket.id, number=ref.number, url=ref.url, now=self._clock()
            )
        except GitHubUnavailable:
            raise
        except GitHubError as exc:
            # Expired without a word on GitHub: there is no issue (or step) to say it on.
            if self._store.expire(ticket.id, now=self._clock()):
                log.warning(
                    "request_id=%s ticket %d ended: GitHub refused to open it (%s)",
                    ticket.request_id,
                    ticket.id,
                    exc,
                )
            raise

    def _reusable(self, ticket: Ticket | None, now: datetime) -> bool:
        if ticket is None:
            return False
        if ticket.state.pending or ticket.state is TicketState.ANSWERED:
            return True
        if ticket.state is TicketState.DELIVERED:
            answer = self._store.answer_for(ticket.id)
            delivered = answer.delivered_at if answer else None
            return delivered is not None and now - delivered < self.settings.redeliver_window
        return False

    async def _create_step(self, ticket: Ticket, request: ChatRequest, *, fresh: bool) -> Ticket:
        """Post the next step of an agent run as a comment on its issue, and reopen it."""
        root = self._store.get_ticket(ticket.thread_id or ticket.id)
        assert root is not None
        assert root.issue_number is not None
        assert root.issue_url is not None
        number = root.issue_number
        rendered = await self._renderer.render_off_loop(ticket, request)
        # A ticket still "creating" from an earlier attempt may have its comments already:
        # then each is looked for (by its exact body) before it is posted; in a series, an
        # earlier attempt's first comment may be further back than usual.
        lookback = 10 + len(rendered.continuations)
        comment_id = await self._github.post_comment(
            number, rendered.body, might_have_sent=not fresh, lookback=lookback
        )
        for part in rendered.continuations:
            await self._github.post_comment(
                number, part, might_have_sent=not fresh, lookback=lookback
            )
        # Also while still "creating": with replicas, another one's queue may send these
        # before this one records the step as open (the comment is posted by then).
        guard = Guard.ticket_in(
            ticket.id, {TicketState.CREATING, TicketState.OPEN}, newest_step=True
        )
        # One PATCH reopens and relabels: one write, not two, against GitHub's limit.
        self._followups.reopen(
            number, labels=[LABEL, LABEL_AWAITING], request_id=ticket.request_id, only_if=guard
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
        return self._store.set_issue(ticket.id, number=number, url=url, now=self._clock())

    async def _create_child(self, ticket: Ticket, request: ChatRequest, *, fresh: bool) -> Ticket:
        """Open a later step as a child issue, and queue its link under its parent.

        The link is queued (durably) before the ticket is recorded open: a crash in between
        leaves the ticket "creating", and its retry finds the issue by its marker and queues
        the link again, which GitHub is asked about before it is sent (so it lands once).
        """
        ref = await self._open_issue(ticket, request, fresh=fresh)
        parent = parent_issue(self._store, self.settings, ticket)
        self._followups.enqueue(
            WriteKind.LINK_SUB_ISSUE, parent, {"child": ref.number}, ticket.request_id, None
        )
        log.info(
            "request_id=%s ticket %d (step %d) is child issue #%d of #%d",
            ticket.request_id,
            ticket.id,
            ticket.step,
            ref.number,
            parent,
        )
        opened = self._store.set_issue(ticket.id, number=ref.number, url=ref.url, now=self._clock())
        queue_checklist(self._store, self._followups, self.settings, opened)
        return opened

    async def _open_issue(self, ticket: Ticket, request: ChatRequest, *, fresh: bool) -> IssueRef:
        """Open the ticket's issue once (found by its marker if an earlier attempt did)."""
        async with self._openings:
            rendered = await self._renderer.render_off_loop(ticket, request)
            marker = request_marker(f"{request.key}{ticket.id:08x}")
            # A ticket still "creating" from an earlier attempt may already have its issue
            # (a crash or a lost response after GitHub created it): look before creating
            # again. A ticket opened just now cannot have one, so it costs no lookup.
            ref = None if fresh else await self._github.find_issue_by_marker(marker)
            created = ref is None
            if ref is None:
                ref = await self._github.create_issue(
                    title=rendered.title,
                    body=rendered.body,
                    labels=[LABEL, LABEL_AWAITING],
                    marker=marker,
                    lock=self.settings.lock_issues,
                )
        # The rest of a prompt too long for one body, in order, before anyone is asked.
        for part in rendered.continuations:
            await self._github.post_comment(
                ref.number,
                part,
                might_have_sent=not created,
                lookback=10 + len(rendered.continuations),
            )
        self._start_polling_from(ref.created_at)
        log.info("request_id=%s ticket %d is issue %s", ticket.request_id, ticket.id, ref.url)
        return ref

    def _start_polling_from(self, created: datetime) -> None:
        """Start the poll no later than the first ticket's creation (GitHub's clock)."""
        cursor = self._store.get_cursor()
        start = format_github_time(created - self.settings.poll_overlap)
        if cursor.since is None:
            self._store.set_cursor(PollCursor(since=start, etag=None))
