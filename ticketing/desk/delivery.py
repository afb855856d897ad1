"""Delivery: record that a client received its answer, and close the ticket on GitHub."""

from __future__ import annotations

import logging
from dataclasses import replace

from ticketing.clock import Clock
from ticketing.github.write_kinds import Guard, WriteKind
from ticketing.github.write_queue import WriteQueue
from ticketing.render.replies import render_delivered_notice
from ticketing.store.interface import TicketStore
from ticketing.store.model import TicketState

from .outcome import DeliveredOutcomes, Outcome
from .settings import LABEL, LABEL_ANSWERED, DeskSettings
from .tree_links import queue_checklist
from .wakeups import Announcer

__all__ = ["Delivery"]

log = logging.getLogger(__name__)


class Delivery:
    """Commit the first delivery of each answer, with its record on the ticket."""

    def __init__(
        self,
        *,
        store: TicketStore,
        followups: WriteQueue,
        delivered: DeliveredOutcomes,
        announcer: Announcer,
        settings: DeskSettings,
        clock: Clock,
    ) -> None:
        self._store = store
        self._announcer = announcer
        self._followups = followups
        self._delivered = delivered
        self.settings = settings
        self._clock = clock

    def delivered(self, outcome: Outcome) -> None:
        """Record that a client received this outcome; close the issue on first delivery."""
        ticket = outcome.ticket
        if outcome.answer is None or ticket.issue_number is None:
            return
        if outcome.answer.delivered_at is not None:
            self._delivered.remember(outcome)
            return  # a re-delivery (the client retried after a lost response)
        # Queued before the delivery is committed and sent only once it is (see followups):
        # a crash in between can neither lose the close nor close an undelivered ticket.
        # The close also labels the issue answered, in the same PATCH: the label queued at
        # acceptance waits a moment, and is skipped once the ticket is delivered.
        close = self._followups.close(
            ticket.issue_number,
            labels=[LABEL, LABEL_ANSWERED],
            request_id=ticket.request_id,
            only_if=Guard.ticket_in(ticket.id, {TicketState.DELIVERED}, newest_step=True),
        )
        answer = outcome.answer
        approvers = [
            j.reviewer for j in self._store.judgements_for(answer.comment_id) if j.act == "approve"
        ]
        # The record of exactly which signed text the agent got, for `ticketproxy audit`; it
        # also tells the editor the agent has the answer (no reaction repeats it).
        notice = self._followups.comment(
            ticket.issue_number,
            render_delivered_notice(
                comment_url=answer.comment_url,
                signer=answer.signer,
                kid=answer.kid,
                delivered_at=self._clock(),
                comment_id=answer.comment_id,
                digest=answer.digest,
                approvers=approvers,
                ticket=self.settings.step_ref(ticket),
            ),
            request_id=ticket.request_id,
            only_if=Guard.ticket_in(ticket.id, {TicketState.DELIVERED}),
        )
        now = self._clock()
        if self._store.mark_delivered(ticket.id, now=now):
            log.info("request_id=%s ticket %d delivered", ticket.request_id, ticket.id)
            # Views (here and on the other replicas) show the answer as received.
            self._announcer.announce(ticket.id)
            # The close sets the labels: a label write still waiting (the "answered" one
            # queued at acceptance) would only repeat them.
            self._followups.drop_unsent(
                WriteKind.SET_LABELS, ticket.issue_number, "cancelled: the close sets the labels"
            )
            # A child of a long run: the root's checklist ticks it (after the close above).
            queue_checklist(self._store, self._followups, self.settings, ticket)
            self._delivered.remember(
                Outcome(
                    replace(ticket, state=TicketState.DELIVERED),
                    replace(answer, delivered_at=now),
                )
            )
        else:
            for write in (notice, close):
                self._followups.cancel(write, "delivered before")
