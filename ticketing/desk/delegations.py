"""Delegation in the desk: a signed delegate act splits an open ticket into child tickets.

Each sub-question becomes a ticket of its own, opened through the ordinary intake (its own
issue, its own reference, answered by an ordinary signed answer) by
:mod:`~ticketing.desk.delegation_opening` (resumed after an outage or a crash), recorded
as the parent's child, linked under the parent's issue as a sub-issue through the write
queue, and, when addressed, pinged to its addressee alone. The parent stays open, so its agent keeps
waiting. When every child is answered the parent lists their signed answers, and an editor
signs the parent's final answer, the only one the agent gets. An editor may answer the
parent at any time; its children still open then close as superseded. A child that expires
says so on the parent, which can still be answered directly.

Children expire once three quarters of the parent's remaining wait has passed, leaving the
last quarter for an editor to answer the parent directly.
"""

from __future__ import annotations

import logging

from auth.verify import Accepted
from ticketing.clock import Clock
from ticketing.github.interface import Comment
from ticketing.github.write_kinds import Guard
from ticketing.github.write_queue import WriteQueue
from ticketing.render.delegation import (
    ANSWERS_KIND,
    ChildAnswer,
    render_child_answer_record,
    render_child_expired_notice,
    render_delegation_answers,
    render_superseded_notice,
)
from ticketing.store.interface import TicketStore
from ticketing.store.model import (
    DelegationAct,
    ReplyClaim,
    StoredDelegation,
    Ticket,
    TicketState,
)

from .delegation_opening import DelegationOpener, Submit
from .delegation_plan import GIVEN_UP
from .settings import LABEL, LABEL_ANSWERED, LABEL_EXPIRED, DeskSettings

__all__ = ["Delegations", "Submit"]

log = logging.getLogger(__name__)

_SETTLED = (TicketState.ANSWERED, TicketState.DELIVERED)


class Delegations:
    """Open a delegation's children, and follow them until the parent can be finalised."""

    def __init__(
        self,
        *,
        store: TicketStore,
        followups: WriteQueue,
        settings: DeskSettings,
        clock: Clock,
        submit: Submit,
    ) -> None:
        self._store = store
        self._followups = followups
        self._settings = settings
        self._clock = clock
        # Opens the children of each accepted act, and resumes those left unfinished.
        self.opener = DelegationOpener(
            store=store, followups=followups, settings=settings, clock=clock, submit=submit
        )

    @property
    def settings(self) -> DeskSettings:
        """Return the desk's settings (references, labels)."""
        return self._settings

    @settings.setter
    def settings(self, settings: DeskSettings) -> None:
        """Change the settings here and in the opener."""
        self._settings = settings
        self.opener.settings = settings

    async def delegate(self, parent: Ticket, comment: Comment, verdict: Accepted) -> None:
        """Record ``verdict``'s split of ``parent`` and open one child per sub-question.

        The act is recorded with its sub-questions in the transaction that spends its jti,
        so the children GitHub cannot take now (or a crash interrupts) are opened later.
        """
        assert parent.issue_number is not None
        now = self._clock()
        act = DelegationAct(
            jti=verdict.jti,
            parent_id=parent.id,
            comment_id=comment.id,
            comment_url=comment.url,
            delegated_by=verdict.signer,
            digest=verdict.digest,
            questions=tuple((q.ask, q.to) for q in verdict.delegations),
            delegated_at=now,
        )
        # Single-use, durably: a replay is refused at verification from now on.
        if not self._store.spend_delegation(verdict.jti, parent_id=parent.id, now=now, act=act):
            log.info(
                "ticket %d: delegation %s not carried out (used, or closed)", parent.id, comment.id
            )
            return
        await self.opener.open(act)

    def answered(self, ticket: Ticket) -> None:
        """After ``ticket``'s answer was accepted: follow up on its parent or its children."""
        delegation = self._store.delegation_of(ticket.id)
        if delegation is not None:
            self._child_answered(ticket, delegation)
        for child in self._store.delegations_of(ticket.id):
            self._supersede(ticket, child)

    def _child_answered(self, child: Ticket, delegation: StoredDelegation) -> None:
        """Close the answered child; once all are answered, list their answers on the parent."""
        assert child.issue_number is not None
        answer = self._store.answer_for(child.id)
        parent = self._store.get_ticket(delegation.parent_id)
        if answer is not None and parent is not None and parent.issue_number is not None:
            record = render_child_answer_record(
                parent=parent.issue_number,
                signer=answer.signer,
                comment_id=answer.comment_id,
                digest=answer.digest,
                comment_url=answer.comment_url,
            )
            self._followups.comment(child.issue_number, record, request_id=child.request_id)
        self._followups.close(
            child.issue_number, labels=[LABEL, LABEL_ANSWERED], request_id=child.request_id
        )
        if parent is None or parent.issue_number is None or parent.state is not TicketState.OPEN:
            return
        siblings = [d for d in self._store.delegations_of(parent.id) if d.jti == delegation.jti]
        act = self._store.delegation_act(delegation.jti)
        if act is not None and act.outcome != GIVEN_UP and len(siblings) < len(act.questions):
            return  # a sub-question's child is not open yet
        listed: list[ChildAnswer] = []
        for sibling in siblings:
            ticket = self._store.get_ticket(sibling.child_id)
            answer = self._store.answer_for(sibling.child_id)
            if ticket is None or ticket.issue_number is None or answer is None:
                return  # still waiting for another child
            listed.append(
                ChildAnswer(
                    ticket.issue_number,
                    sibling.question,
                    sibling.addressee,
                    signer=answer.signer,
                    digest=answer.digest,
                    answer_url=answer.comment_url,
                )
            )
        # Once per delegation: the claim is on the delegate comment.
        self._followups.reply_once(
            parent.issue_number,
            render_delegation_answers(listed),
            claim=ReplyClaim(
                comment_id=delegation.comment_id, ticket_id=parent.id, kind=ANSWERS_KIND
            ),
            request_id=parent.request_id,
        )

    def _supersede(self, parent: Ticket, delegation: StoredDelegation) -> None:
        """Close a child still open once its parent was answered directly."""
        child = self._store.get_ticket(delegation.child_id)
        if child is None or child.issue_number is None or not child.state.pending:
            return
        assert parent.issue_number is not None
        guard = Guard.ticket_in(child.id, {TicketState.EXPIRED})
        writes = [
            self._followups.comment(
                child.issue_number,
                render_superseded_notice(parent=parent.issue_number),
                request_id=child.request_id,
                only_if=guard,
            ),
            self._followups.close(
                child.issue_number,
                labels=[LABEL, LABEL_EXPIRED],
                request_id=child.request_id,
                only_if=guard,
            ),
        ]
        if not self._store.expire(child.id, now=self._clock()):
            for write in writes:
                self._followups.cancel(write, "the child was no longer pending")
            return
        log.info("ticket %d superseded: its parent %d was answered", child.id, parent.id)

    def expired(self, ticket: Ticket) -> None:
        """After ``ticket`` expired: a delegated child says so on its parent, still open."""
        delegation = self._store.delegation_of(ticket.id)
        if delegation is None or ticket.issue_number is None:
            return
        parent = self._store.get_ticket(delegation.parent_id)
        if parent is None or parent.issue_number is None or not parent.state.pending:
            return
        self._followups.comment(
            parent.issue_number,
            render_child_expired_notice(child=ticket.issue_number, question=delegation.question),
            request_id=parent.request_id,
        )
