"""Where a completion waits: one future per waiting client, settled by an answer or expiry.

Each front calls :meth:`Waiters.watch` with the ticket its request opened (or re-attached
to) and awaits the future. The future is settled when the ticket is answered (found by the
:mod:`~ticketing.desk.finder`, here or on another replica) or expires at its deadline: one
timer per ticket, however many clients wait for it. Expiry fails closed: it queues the
notice, the label and the close on GitHub, and the clients get an outcome with no answer.

A watcher may also ask to settle on a reviewer's rejection of the ticket's held answer
(``watch(ticket, rejection=True)``): MCP's ``request_approval`` ends there, with the
reviewer and the reason, while the ticket itself (and every other watcher, such as a chat
completion) waits for another answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from ticketing.clock import Clock
from ticketing.errors import DeskStopped, StoreUnavailable
from ticketing.github.write_kinds import Guard
from ticketing.github.write_queue import WriteQueue
from ticketing.render.replies import render_expired_notice
from ticketing.store.interface import TicketStore
from ticketing.store.model import Ticket, TicketState

from .outcome import DeliveredOutcomes, Outcome, Rejection
from .settings import LABEL, LABEL_EXPIRED, DeskSettings
from .tree_links import queue_checklist
from .wakeups import Announcer

__all__ = ["Waiters"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Watch:
    """One waiting client: its future, and whether a rejection settles it."""

    future: asyncio.Future[Outcome]
    rejection: bool


class Waiters:
    """Futures of waiting clients by ticket, their deadline timers, and expiry."""

    def __init__(
        self,
        *,
        store: TicketStore,
        followups: WriteQueue,
        announcer: Announcer,
        delivered: DeliveredOutcomes,
        clock: Clock,
        settings: DeskSettings | None = None,
    ) -> None:
        self._store = store
        # Read for long runs' trees: an expired child is shown stale in its root's checklist.
        self._settings = settings
        self._followups = followups
        self._announcer = announcer
        self._delivered = delivered
        self._clock = clock
        self._watchers: dict[int, list[_Watch]] = {}
        self._deadline_timers: dict[int, asyncio.TimerHandle] = {}
        self._stopped = False
        # Told of each ticket this desk expires (a delegated child tells its parent).
        self.after_expiry: Callable[[Ticket], None] | None = None

    def settled(self, ticket: Ticket, *, rejection: bool = False) -> Outcome | None:
        """Return the ticket's outcome if it is already decided, without waiting.

        With ``rejection``, a reviewer's rejection of its held answer decides it too.
        """
        remembered = self._delivered.recent(ticket.request_key)
        if remembered is not None and remembered.ticket.id == ticket.id:
            return remembered
        current = self._store.get_ticket(ticket.id)
        if current is None:
            return None
        outcome = self._outcome_of(current)
        if outcome is None and rejection:
            outcome = self._rejection_of(current)
        return outcome

    def watch(self, ticket: Ticket, *, rejection: bool = False) -> asyncio.Future[Outcome]:
        """Return a future of the ticket's outcome: its answer, or its expiry at the deadline.

        With ``rejection``, a reviewer's signed rejection of the ticket's held answer (now or
        before) settles it too. Cancelling the future (the client went away) leaves the
        ticket waiting.
        """
        if self._stopped:
            raise DeskStopped()
        # A plain future per waiting client, and one deadline timer per ticket: thousands of
        # clients wait at once, and a task with its own timer each cost several KiB apiece.
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        # Futures cancelled meanwhile (their clients left) are dropped here and when the
        # ticket settles, rather than by a done-callback each.
        watchers = [w for w in self._watchers.get(ticket.id, ()) if not w.future.done()]
        watchers.append(_Watch(future, rejection))
        self._watchers[ticket.id] = watchers
        try:
            self._settle(ticket.id)
        except BaseException:
            future.cancel()  # the caller gets the error; nothing is left waiting
            raise
        return future

    def notify(self, ticket_id: int) -> None:
        """Settle this replica's waiters for a ticket that changed, and tell the others."""
        self.wake(ticket_id)
        self._announcer.announce(ticket_id)

    def wake(self, ticket_id: int) -> None:
        """Settle this replica's waiters for a ticket that may have changed."""
        # Read afresh: an announcement may come without the ticket having finished.
        self._settle_or_fail(ticket_id)

    async def wake_all(self, *, also: Callable[[int], None], batch: int = 100) -> int:
        """Settle every waiter here against the store, as after missed announcements.

        ``also`` is told each ticket re-read. The event loop is let run between batches:
        thousands of clients may wait at once. Return how many tickets were re-read.
        Raises StoreUnavailable, leaving every waiter waiting, if the store cannot be read
        (its server may be back for the subscription before it is for the store): the
        caller re-reads again later, rather than fail clients over a passing outage.
        """
        waited = list(self._watchers)
        for index, ticket_id in enumerate(waited, start=1):
            try:
                self._settle(ticket_id)
            except StoreUnavailable:
                raise
            except Exception as exc:
                log.exception("waiting on ticket %d failed", ticket_id)
                self._fail(ticket_id, exc)
            also(ticket_id)
            if index % batch == 0:
                await asyncio.sleep(0)
        return len(waited)

    def expire(self, ticket: Ticket) -> None:
        """Expire a pending ticket past its deadline and say so on GitHub."""
        writes: list[int] = []
        number = ticket.issue_number
        if number is None and ticket.step > 1 and ticket.thread_id is not None:
            # A step whose comment was perhaps posted, but never confirmed (the client gave
            # up): its run's issue still says that the step ended.
            root = self._store.get_ticket(ticket.thread_id)
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
                self._followups.comment(number, notice, request_id=request_id, only_if=guard),
                self._followups.close(
                    number, labels=[LABEL, LABEL_EXPIRED], request_id=request_id, only_if=newest
                ),
            ]
        if not self._store.expire(ticket.id, now=self._clock()):
            for write in writes:
                self._followups.cancel(write, "the ticket was no longer pending")
            return
        log.info("request_id=%s ticket %d expired", ticket.request_id, ticket.id)
        if self._settings is not None:
            queue_checklist(self._store, self._followups, self._settings, ticket)
        if self.after_expiry is not None:
            self.after_expiry(ticket)
        self.notify(ticket.id)

    def expire_overdue(self) -> None:
        """Expire every pending ticket whose deadline has passed."""
        for ticket in self._store.overdue_tickets(self._clock()):
            self.expire(ticket)

    def stop(self) -> int:
        """Release every waiting client with DeskStopped (its retry re-attaches); count them.

        Called first when the server shuts down, so no handler holds the shutdown up while
        it waits for people, and again when the desk stops (then it releases nobody).
        """
        self._stopped = True
        released = 0
        for timer in self._deadline_timers.values():
            timer.cancel()
        self._deadline_timers.clear()
        # Nothing will settle these any more: their clients are told to retry, and the
        # retry re-attaches to the ticket (on this process restarted, or another replica).
        for ticket_id in list(self._watchers):
            for future in self._unwatch(ticket_id):
                if not future.done():
                    future.set_exception(DeskStopped())
                    released += 1
        return released

    def _outcome_of(self, current: Ticket) -> Outcome | None:
        """Return how a ticket ended, as the store says now, or None while it waits."""
        if current.state in {TicketState.ANSWERED, TicketState.DELIVERED}:
            return Outcome(current, self._store.answer_for(current.id))
        if current.state is TicketState.EXPIRED:
            return Outcome(current, None)
        return None

    def _rejection_of(self, current: Ticket) -> Outcome | None:
        """Return a waiting ticket's outcome for a watcher that settles on a rejection."""
        if not current.state.pending:
            return None
        candidate = self._store.rejected_candidate(current.id)
        if candidate is None:
            return None
        judgements = self._store.judgements_for(candidate.comment_id)
        rejecting = next((j for j in judgements if j.act == "reject"), None)
        if rejecting is None:
            return None
        return Outcome(current, None, rejection=Rejection(candidate, rejecting))

    def _settle(self, ticket_id: int) -> None:
        """Hand a finished ticket's outcome to its watchers; expire it if overdue."""
        while ticket_id in self._watchers:
            watchers = [w for w in self._watchers[ticket_id] if not w.future.done()]
            if not watchers:
                self._unwatch(ticket_id)  # every client waiting here has left
                return
            self._watchers[ticket_id] = watchers
            current = self._store.get_ticket(ticket_id)
            assert current is not None
            outcome = self._outcome_of(current)
            if outcome is not None:
                for future in self._unwatch(ticket_id):
                    if not future.done():
                        future.set_result(outcome)
                return
            rejected = self._rejection_of(current) if any(w.rejection for w in watchers) else None
            if rejected is not None:
                for watch in watchers:
                    if watch.rejection:
                        watch.future.set_result(rejected)
                continue  # the others wait on
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
        return [watch.future for watch in self._watchers.pop(ticket_id, [])]

    def _deadline_passed(self, ticket_id: int) -> None:
        self._deadline_timers.pop(ticket_id, None)
        self._settle_or_fail(ticket_id)

    def _settle_or_fail(self, ticket_id: int) -> None:
        """Settle from a callback: a failure (say, a bug) goes to the watchers.

        A store that is down for now fails no one: the clients keep waiting, and the ticket is
        read again after the store's ``retry_after`` (as :meth:`wake_all` leaves them waiting).
        """
        try:
            self._settle(ticket_id)
        except StoreUnavailable as exc:
            if ticket_id in self._watchers:
                log.warning(
                    "cannot read ticket %d (%s); its clients wait, read again in %.0f s",
                    ticket_id,
                    exc,
                    exc.retry_after,
                )
                asyncio.get_running_loop().call_later(
                    exc.retry_after, self._settle_or_fail, ticket_id
                )
        except Exception as exc:
            log.exception("waiting on ticket %d failed", ticket_id)
            self._fail(ticket_id, exc)

    def _fail(self, ticket_id: int, exc: Exception) -> None:
        """Hand a failure to settle a ticket to its watchers (their clients get the error)."""
        for future in self._unwatch(ticket_id):
            if not future.done():
                future.set_exception(exc)
