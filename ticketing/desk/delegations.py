"""Delegation in the desk: a signed delegate act splits an open ticket into child tickets.

Each sub-question becomes a ticket of its own, opened through the ordinary intake (its own
issue, its own reference, answered by an ordinary signed answer), recorded as the parent's
child, linked under the parent's issue as a sub-issue through the write queue, and, when
addressed, pinged to its addressee alone. The parent stays open, so its agent keeps
waiting. When every child is answered the parent lists their signed answers, and an editor
signs the parent's final answer, the only one the agent gets. An editor may answer the
parent at any time; its children still open then close as superseded. A child that expires
says so on the parent, which can still be answered directly.

Children expire once three quarters of the parent's remaining wait has passed, leaving the
last quarter for an editor to answer the parent directly.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from auth.delegation import Delegation
from auth.verify import Accepted
from ticketing.clock import Clock
from ticketing.github.interface import Comment
from ticketing.github.write_kinds import Guard, WriteKind
from ticketing.github.write_queue import WriteQueue
from ticketing.render.delegation import (
    ANSWERS_KIND,
    ChildAnswer,
    render_addressee_ping,
    render_child_answer_record,
    render_child_expired_notice,
    render_delegated_notice,
    render_delegation_answers,
    render_superseded_notice,
)
from ticketing.request import ChatRequest, Message
from ticketing.store.interface import TicketStore
from ticketing.store.model import ReplyClaim, StoredDelegation, Ticket, TicketState

from .settings import LABEL, LABEL_ANSWERED, LABEL_EXPIRED, DeskSettings

__all__ = ["Delegations", "Submit"]

log = logging.getLogger(__name__)

# Intake.submit: a request (with its id and deadline) in, its ticket (issue opened) out.
Submit = Callable[[ChatRequest, str, datetime], Awaitable[Ticket]]
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
        self.settings = settings
        self._clock = clock
        self._submit = submit

    async def delegate(self, parent: Ticket, comment: Comment, verdict: Accepted) -> None:
        """Open one child ticket per sub-question of ``verdict``, linked under ``parent``."""
        assert parent.issue_number is not None
        now = self._clock()
        # Single-use, durably: a replay is refused at verification from now on.
        if not self._store.spend_delegation(verdict.jti, parent_id=parent.id, now=now):
            log.info(
                "ticket %d: delegation %s not carried out (used, or closed)", parent.id, comment.id
            )
            return
        # The children expire first, so that the parent can still be answered directly.
        deadline = now + max(parent.deadline - now, timedelta(0)) * 3 / 4
        listed: list[ChildAnswer] = []
        for position, question in enumerate(verdict.delegations):
            request = self._child_request(parent, verdict, position, question)
            child = await self._submit(request, f"{parent.request_id}.d{position + 1}", deadline)
            assert child.issue_number is not None
            self._store.record_delegation(
                StoredDelegation(
                    child_id=child.id,
                    parent_id=parent.id,
                    position=position,
                    question=question.ask,
                    addressee=question.to,
                    delegated_by=verdict.signer,
                    comment_id=comment.id,
                    comment_url=comment.url,
                    jti=verdict.jti,
                    delegated_at=now,
                )
            )
            self._followups.enqueue(
                WriteKind.LINK_SUB_ISSUE,
                parent.issue_number,
                {"child": child.issue_number},
                parent.request_id,
                None,
            )
            if question.to is not None:
                ping = render_addressee_ping(
                    addressee=question.to,
                    parent=parent.issue_number,
                    reference=self.settings.ticket_ref(child),
                )
                self._followups.comment(child.issue_number, ping, request_id=child.request_id)
            listed.append(ChildAnswer(child.issue_number, question.ask, question.to))
        notice = render_delegated_notice(
            delegated_by=verdict.signer,
            children=listed,
            comment_id=comment.id,
            digest=verdict.digest,
        )
        self._followups.comment(parent.issue_number, notice, request_id=parent.request_id)
        log.info(
            "request_id=%s ticket %d delegated by %s into %d child ticket(s)",
            parent.request_id,
            parent.id,
            verdict.signer,
            len(listed),
        )

    def _child_request(
        self, parent: Ticket, verdict: Accepted, position: int, question: Delegation
    ) -> ChatRequest:
        """Return the request a child ticket shows: where it comes from, and its question."""
        stored = self._store.request_for(parent.id)
        model = ChatRequest.from_json(stored).model if stored else "delegated"
        # Its own key: a retry of the same delegation finds the same child.
        seed = f"delegation\0{parent.id}\0{verdict.jti}\0{position}"
        origin = (
            f"A sub-question of {self.settings.ticket_ref(parent)}, delegated by"
            f" {verdict.signer}. Answer it with a signed answer for this issue; the agent"
            " receives only the final answer of the delegated ticket."
        )
        return ChatRequest(
            model=model,
            messages=(Message("system", origin), Message("user", question.ask)),
            client="delegation",
            key=hashlib.sha256(seed.encode("utf-8")).hexdigest(),
        )

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
