"""The desk: one object that wires the life cycle's collaborators, starts and stops them.

The fronts talk to this facade only. It decides nothing itself; each job has its module:

- :mod:`~ticketing.desk.intake`: a request becomes a ticket (issue or step), or re-attaches;
- :mod:`~ticketing.desk.waiters`: where a completion waits; deadlines and expiry;
- :mod:`~ticketing.desk.finder`: the poll and webhooks find new comments;
- :mod:`~ticketing.desk.comments`: each comment is verified and acted on, as
  :mod:`~ticketing.desk.decisions` (pure) says;
- :mod:`~ticketing.desk.review`: held answers, judgements, release or reopen;
- :mod:`~ticketing.desk.delivery`: the first delivery closes the ticket;
- :mod:`~ticketing.desk.drafts`: an upstream model's draft for the editor;
- :mod:`~ticketing.desk.wakeups`: replicas tell each other what changed.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta

from auth.errors import KeyringError
from auth.keyring import Keyring
from ticketing.clock import Clock, utc_now
from ticketing.coordination import Coordinator, LocalCoordinator
from ticketing.github.interface import Comment, GitHubIssues
from ticketing.github.webhooks import CommentEvent
from ticketing.github.write_queue import WriteQueue
from ticketing.oidc_keys import OidcKeys
from ticketing.render.ticket import RenderedTicket
from ticketing.request import ChatRequest
from ticketing.store.interface import TicketStore
from ticketing.store.model import Ticket

from .agents import take_agent_draft
from .comments import SignedComments
from .counters import AnswerCounters
from .delegations import Delegations
from .delivery import Delivery
from .drafts import Drafts
from .events import DeskEvents
from .finder import AnswerFinder
from .intake import Intake
from .outcome import DeliveredOutcomes, Outcome
from .rendering import TicketRenderer
from .review import Review
from .runs import Runs
from .settings import DeskSettings
from .waiters import Waiters
from .wakeups import Announcer, Listener

__all__ = ["Desk", "new_replica_id"]


def new_replica_id() -> str:
    """Return a name for this process among replicas: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class Desk:
    """Open tickets, find and verify answers, and hand them to waiting requests."""

    def __init__(
        self,
        *,
        store: TicketStore,
        github: GitHubIssues,
        keyring: Callable[[], Keyring],
        settings: DeskSettings,
        bot_login: str | None = None,
        clock: Clock = utc_now,
        coordinator: Coordinator | None = None,
        replica_id: str | None = None,
        oidc_keys: OidcKeys | None = None,
    ) -> None:
        self.store = store
        self.github = github
        self.clock = clock
        self._settings = settings
        self.bot_login = bot_login
        self.followups = WriteQueue(store=store, github=github, clock=clock)
        # The cross-process parts (key locks, jtis, poll lease, wake-ups); alone, in-process.
        self.coordinator: Coordinator = coordinator or LocalCoordinator()
        self.replica_id = replica_id or new_replica_id()
        self._counters = AnswerCounters()
        # What views (the desk API's event stream) hear: every change, here or elsewhere.
        self.events = DeskEvents(store)
        self._announcer = Announcer(self.coordinator, told=self.events.changed)
        self._delivered = delivered = DeliveredOutcomes(
            window=settings.redeliver_window, clock=clock
        )
        self._waiters = Waiters(
            store=store,
            followups=self.followups,
            announcer=self._announcer,
            delivered=delivered,
            clock=clock,
            settings=settings,
        )
        self._delivery = Delivery(
            store=store,
            followups=self.followups,
            delivered=delivered,
            announcer=self._announcer,
            settings=settings,
            clock=clock,
        )
        runs = Runs(store)
        self._renderer = TicketRenderer(store=store, runs=runs, settings=settings)
        self._keyring = keyring
        self._delegations = delegations = Delegations(
            store=store,
            followups=self.followups,
            settings=settings,
            clock=clock,
            submit=lambda request, request_id, deadline: self._intake.submit(
                request, request_id=request_id, deadline=deadline
            ),
        )
        self._waiters.after_expiry = delegations.expired
        self._review = review = Review(
            store=store,
            followups=self.followups,
            waiters=self._waiters,
            runs=runs,
            counters=self._counters,
            settings=settings,
            clock=clock,
            delegations=delegations,
        )
        self._comments = SignedComments(
            store=store,
            followups=self.followups,
            coordinator=self.coordinator,
            keyring=keyring,
            waiters=self._waiters,
            runs=runs,
            review=review,
            counters=self._counters,
            settings=settings,
            clock=clock,
            bot_login=bot_login,
            delegations=delegations,
            oidc_keys=oidc_keys,
        )
        self._finder = AnswerFinder(
            store=store,
            github=github,
            coordinator=self.coordinator,
            consider=self._consider,
            expire_overdue=self._waiters.expire_overdue,
            settings=settings,
            clock=clock,
            replica_id=self.replica_id,
        )
        self._intake = Intake(
            store=store,
            github=github,
            followups=self.followups,
            coordinator=self.coordinator,
            runs=runs,
            renderer=self._renderer,
            delivered=delivered,
            announcer=self._announcer,
            poke=self._finder.wake_if_idle,
            settings=settings,
            clock=clock,
        )
        self._drafts = Drafts(store=store, followups=self.followups, settings=settings, clock=clock)
        self._listener = Listener(
            self.coordinator, on_change=self._changed_elsewhere, on_gap=self._recheck_all
        )

    @property
    def settings(self) -> DeskSettings:
        """Return how the desk waits, polls and replies."""
        return self._settings

    @settings.setter
    def settings(self, settings: DeskSettings) -> None:
        """Change how the desk waits, polls and replies, from the next decision on."""
        if settings.repo != self._settings.repo:
            raise ValueError("a running desk keeps its repository")
        self._settings = settings
        self._delivered.window = settings.redeliver_window
        for part in (
            self._delivery,
            self._delegations,
            self._renderer,
            self._review,
            self._comments,
            self._finder,
            self._intake,
            self._drafts,
        ):
            part.settings = settings

    # --- life cycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Start polling; tickets left pending by an earlier run resume."""
        self.followups.start()
        await self._listener.start()
        self._finder.start()
        # Delegations a crash or an outage left half-opened open their other children.
        self._delegations.opener.start()

    def release_waiting(self) -> int:
        """Tell every waiting client to retry (DeskStopped) and take no new one; count them."""
        return self._waiters.stop()

    async def stop(self) -> None:
        """Stop polling and finish queued GitHub writes."""
        await self._finder.stop()
        await self._delegations.opener.stop()
        await self._announcer.drain()
        await self._listener.stop()
        self._waiters.stop()
        await self._finder.release_lease()
        await self.followups.stop()

    async def _consider(self, comment: Comment) -> None:
        """Take a dispatched agent's draft comment, then act on the comment as on any."""
        take_agent_draft(
            comment, store=self.store, reference=self._settings.ticket_ref, clock=self.clock
        )
        await self._comments.consider(comment)

    def _changed_elsewhere(self, ticket_id: int) -> None:
        """Wake local waiters (and an idle poller) for a ticket another replica changed."""
        self._waiters.wake(ticket_id)
        self.events.changed(ticket_id)
        ticket = self.store.get_ticket(ticket_id)
        if ticket is not None and ticket.state.pending:
            self._finder.wake_if_idle()  # a ticket was opened elsewhere: someone must poll

    async def _recheck_all(self) -> None:
        """Re-read every ticket waited on here: other replicas' announcements were missed."""
        self._finder.wake_if_idle()  # a ticket opened elsewhere meanwhile needs polling
        await self._waiters.wake_all(also=self.events.changed)

    def keyring(self) -> Keyring:
        """Return the keyring now (raises KeyringError while it cannot be read)."""
        return self._keyring()

    def keyring_problem(self) -> str | None:
        """Return why the keyring cannot be used now (nothing is judged meanwhile), or None."""
        try:
            self._keyring()
        except KeyringError as exc:
            return str(exc)
        return None

    @property
    def deferred_comments(self) -> int:
        """Return how many signed comments wait for the keyring to be readable again."""
        return self._finder.deferred

    # --- what the fronts use ---------------------------------------------------------------

    def ticket_ref(self, ticket: Ticket) -> str:
        """Return the reference a signature's ``aud`` must name for this ticket."""
        return self.settings.ticket_ref(ticket)

    async def submit(
        self,
        request: ChatRequest,
        *,
        request_id: str,
        thread_name: str | None = None,
        continues: int | None = None,
    ) -> Ticket:
        """Return the ticket for this request (the next step after ``continues``, if given)."""
        return await self._intake.submit(
            request, request_id=request_id, thread_name=thread_name, continues=continues
        )

    def render(self, ticket: Ticket, request: ChatRequest) -> RenderedTicket:
        """Render a ticket as GitHub shows it: the issue (step 1) or its step comment."""
        return self._renderer.render(ticket, request)

    def settled(self, ticket: Ticket, *, rejection: bool = False) -> Outcome | None:
        """Return the ticket's outcome if it is already decided, without waiting.

        With ``rejection``, a reviewer's rejection of its held answer decides it too.
        """
        return self._waiters.settled(ticket, rejection=rejection)

    def recent_delivery(self, request_key: str) -> Outcome | None:
        """Return the delivered outcome a retry of this request gets now, if kept in memory."""
        return self._delivered.recent(request_key)

    def watch(self, ticket: Ticket, *, rejection: bool = False) -> asyncio.Future[Outcome]:
        """Return a future of the ticket's outcome: its answer, or its expiry.

        With ``rejection``, a reviewer's signed rejection of its held answer settles it too
        (MCP's ``request_approval``); without, the ticket waits for another answer.
        """
        return self._waiters.watch(ticket, rejection=rejection)

    def delivered(self, outcome: Outcome) -> None:
        """Record that a client received this outcome; close the issue on first delivery."""
        self._delivery.delivered(outcome)

    def expire(self, ticket: Ticket) -> None:
        """Expire a pending ticket past its deadline and say so on GitHub."""
        self._waiters.expire(ticket)

    # --- finding answers -----------------------------------------------------------------

    def poke(self) -> None:
        """Poll now instead of at the next interval."""
        self._finder.poke()

    async def poll_once(self) -> int:
        """Read new and edited comments once and act on them; return the requests made."""
        return await self._finder.poll_once()

    async def receive_comment_event(self, event: CommentEvent) -> None:
        """Act on a verified ``issue_comment`` webhook as on a polled comment."""
        await self._finder.receive_comment_event(event)

    @property
    def polls(self) -> int:
        """Return how many polls this desk has made."""
        return self._finder.polls

    @property
    def last_webhook_at(self) -> datetime | None:
        """Return when the last webhook for the tickets' repository arrived."""
        return self._finder.last_webhook_at

    @property
    def answers_accepted(self) -> int:
        """Return how many answers were accepted (read by the metrics)."""
        return self._counters.accepted

    @property
    def answers_rejected(self) -> Counter[str]:
        """Return the signed comments refused, by reason (read by the metrics)."""
        return self._counters.rejected

    # --- drafts from an upstream model ------------------------------------------------------

    def claim_draft(self, ticket: Ticket, *, stale_after: timedelta | None = None) -> bool:
        """Reserve the one draft this ticket may get; False if it has one or cannot get one."""
        return self._drafts.claim(ticket, stale_after=stale_after)

    def post_draft(self, ticket: Ticket, text: str, *, model: str) -> bool:
        """Queue a claimed draft as a marked suggestion on the ticket's issue."""
        return self._drafts.post(ticket, text, model=model)

    def fail_draft(self, ticket: Ticket, detail: str, *, model: str) -> None:
        """Record that no draft came for this ticket; it goes on waiting for people."""
        self._drafts.fail(ticket, detail, model=model)
