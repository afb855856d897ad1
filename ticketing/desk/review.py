"""Security review: hold a risky answer, count reviewers' judgements, release or reopen.

What a judgement does is decided in :mod:`ticketing.desk.decisions`; this module carries
it out: the candidate and the judgements go to the store, the notices and labels to the
write queue, and an approved answer to its waiting clients.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from auth.keyring import Keyring
from auth.logins import same_login
from auth.review_decision import ReviewDecision
from auth.review_tally import Judgement, ReviewTally, tally_review
from auth.roles import Act, Role
from auth.verify import Accepted
from ticketing.clock import Clock
from ticketing.github.interface import Comment
from ticketing.github.write_kinds import Guard
from ticketing.github.write_queue import WriteQueue
from ticketing.release import Release
from ticketing.render.replies import render_needs_review_notice, render_review_rejected_notice
from ticketing.store.interface import TicketStore
from ticketing.store.model import Candidate, StoredJudgement, Ticket, TicketState

from .counters import AnswerCounters
from .delegations import Delegations
from .outcome import decode_release, encode_release
from .runs import Runs
from .settings import LABEL, LABEL_ANSWERED, LABEL_AWAITING, LABEL_NEEDS_REVIEW, DeskSettings
from .waiters import Waiters

__all__ = ["Review", "queue_answered_label"]

log = logging.getLogger(__name__)


# How long the "answered" label waits for the delivery: a waiting client gets its answer
# within this, and the close then sets the label in the same PATCH (one write, not two).
ANSWERED_LABEL_DELAY = timedelta(seconds=2)


def queue_answered_label(followups: WriteQueue, ticket: Ticket, number: int) -> int:
    """Queue the "answered" label, sent only once an answer is committed (see followups).

    It is for an answer no client has taken yet; once the ticket is delivered it is
    skipped, as the close sets the same labels.
    """
    return followups.set_labels(
        number,
        [LABEL, LABEL_ANSWERED],
        request_id=ticket.request_id,
        only_if=Guard.ticket_in(ticket.id, {TicketState.ANSWERED}, newest_step=True),
        delay=ANSWERED_LABEL_DELAY,
    )


class Review:
    """Carry out the review's decisions on the store, GitHub and the waiting clients."""

    def __init__(
        self,
        *,
        store: TicketStore,
        followups: WriteQueue,
        waiters: Waiters,
        runs: Runs,
        counters: AnswerCounters,
        settings: DeskSettings,
        clock: Clock,
        delegations: Delegations,
    ) -> None:
        self._store = store
        self._delegations = delegations
        self._followups = followups
        self._waiters = waiters
        self._runs = runs
        self._counters = counters
        self.settings = settings
        self._clock = clock

    def hold(
        self,
        ticket: Ticket,
        comment: Comment,
        verdict: Accepted,
        release: Release,
        decision: ReviewDecision,
        keyring: Keyring,
    ) -> None:
        """Keep a verified answer with risky commands from the agent until reviewers approve.

        ``keyring`` is the one the answer was verified with: the reviewers asked are its.
        """
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
            on_behalf_of=None if verdict.agent is None else verdict.agent.on_behalf_of,
        )
        reviewers = sorted(
            login
            for login in keyring.logins_with_role(Role.REVIEWER)
            if not same_login(login, verdict.signer)
            and not (verdict.agent is not None and same_login(login, verdict.agent.on_behalf_of))
        )
        guard = Guard.ticket_in(
            ticket.id, {TicketState.NEEDS_REVIEW, TicketState.ANSWERED, TicketState.DELIVERED}
        )
        writes = [
            self._followups.set_labels(
                number,
                [LABEL, LABEL_NEEDS_REVIEW],
                request_id=ticket.request_id,
                only_if=Guard.ticket_in(ticket.id, {TicketState.NEEDS_REVIEW}, newest_step=True),
            ),
            self._followups.comment(
                number,
                render_needs_review_notice(
                    comment_url=comment.url,
                    author=verdict.signer,
                    required=decision.required_approvals,
                    commands=[command.show() for command in release.commands()],
                    findings=[(f.rule, f.detail) for f in decision.findings],
                    reviewers=reviewers,
                    comment_id=comment.id,
                    digest=verdict.digest,
                    ticket=self.settings.step_ref(ticket),
                ),
                request_id=ticket.request_id,
                only_if=guard,
            ),
        ]
        if not self._store.propose_answer(candidate):
            for write in writes:
                self._followups.cancel(write, "the ticket was no longer open")
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
        # Nothing is released, but views (and other replicas' views) show the held answer.
        self._waiters.notify(ticket.id)

    def record(
        self, ticket: Ticket, comment: Comment, candidate: Candidate, verdict: Accepted
    ) -> ReviewTally | None:
        """Record a verified judgement and return the tally; None if it was recorded before."""
        judgement = StoredJudgement(
            comment_id=comment.id,
            candidate_id=candidate.comment_id,
            act=verdict.act.value,
            reviewer=verdict.signer,
            kid=verdict.kid,
            jti=verdict.jti,
            digest=verdict.digest,
            posted_at=comment.created_at,
            reason=verdict.text,
        )
        if not self._store.record_judgement(judgement, ticket_id=ticket.id):
            return None
        # Read after recording: with replicas, the last judgement recorded sees them all.
        return tally_review(
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
                for j in self._store.judgements_for(candidate.comment_id)
            ],
        )

    def release_approved(
        self, ticket: Ticket, number: int, candidate: Candidate, tally: ReviewTally
    ) -> None:
        """Make the approved answer the ticket's answer, and release it to its clients."""
        label = queue_answered_label(self._followups, ticket, number)
        if not self._store.approve_candidate(candidate, now=self._clock()):
            self._followups.cancel(label, "the answer was no longer under review")
            return
        self._runs.link_reply(ticket, decode_release(candidate.release))
        self._delegations.answered(ticket)
        self._counters.accepted += 1
        log.info(
            "request_id=%s ticket %d: answer by %s approved by %s",
            ticket.request_id,
            ticket.id,
            candidate.signer,
            ", ".join(tally.approvers),
        )
        self._waiters.notify(ticket.id)

    def reopen_rejected(
        self, ticket: Ticket, comment: Comment, candidate: Candidate, verdict: Accepted
    ) -> None:
        """Drop the rejected answer; the ticket waits for another.

        Its waiters are woken: a completion goes on waiting, but a watcher that settles on a
        rejection (MCP's ``request_approval``) gets it, with the reviewer and the reason.
        """
        number = comment.issue_number
        guard = Guard.ticket_in(ticket.id, {TicketState.OPEN}, newest_step=True)
        writes = [
            self._followups.set_labels(
                number, [LABEL, LABEL_AWAITING], request_id=ticket.request_id, only_if=guard
            ),
            self._followups.comment(
                number,
                render_review_rejected_notice(
                    comment_url=comment.url, reviewer=verdict.signer, reason=verdict.text
                ),
                request_id=ticket.request_id,
                only_if=guard,
            ),
        ]
        if not self._store.reject_candidate(candidate, now=self._clock()):
            for write in writes:
                self._followups.cancel(write, "the answer was no longer under review")
            return
        self._counters.rejected["review_rejected"] += 1
        log.info(
            "request_id=%s ticket %d: answer by %s rejected by %s",
            ticket.request_id,
            ticket.id,
            candidate.signer,
            verdict.signer,
        )
        self._waiters.notify(ticket.id)
