"""The review audit: whether a released answer had the approvals its policy requires.

Pure: the verified answer and judgements in, a :class:`~ticketing.audit.results.TicketAudit`
out. Judgements are counted by :func:`auth.review_tally.tally_review`, the same rules the
live desk used, so the audit and the desk cannot disagree about who counted.
"""

from __future__ import annotations

from datetime import datetime

from auth.policy import ReviewPolicy
from auth.review_decision import decide
from auth.review_tally import Judgement, tally_review
from ticketing.audit.comments import AuditComment, signed_text
from ticketing.audit.results import SignedRecord, TicketAudit, finished_audit
from ticketing.commands import commands_in

__all__ = ["audit_review"]


def audit_review(
    ticket: str,
    answer: SignedRecord | None,
    answer_comment: AuditComment,
    judgements: list[tuple[Judgement, SignedRecord]],
    *,
    policy: ReviewPolicy | None,
    digest: str,
    released_at: datetime | None,
    problems: list[str],
    notes: list[str],
) -> TicketAudit:
    """Count the judgements posted before release against the approvals the policy requires."""
    # Only judgements the desk could have seen before release can have released it.
    before = [
        pair for pair in judgements if released_at is None or pair[0].posted_at <= released_at
    ]
    notes += [
        f"{j.reviewer}'s {j.act.value} ({r.comment_url}) came after the release"
        for j, r in judgements
        if released_at is not None and j.posted_at > released_at
    ]
    required: int | None = None
    if policy is not None:
        text = signed_text(answer_comment.body) or ""
        required = decide(policy, commands_in(text, ())).required_approvals
    tally = tally_review(
        required or 0,
        answer_signer=answer.signer if answer else answer_comment.author_login,
        answer_digest=digest,
        answer_posted_at=answer_comment.created_at,
        judgements=[j for j, _ in before],
    )
    notes += tally.ignored
    records = {j.comment_id: r for j, r in before}
    approvals = tuple(records[j.comment_id] for j in tally.approvals)
    rejection = None if tally.rejection is None else records[tally.rejection.comment_id]
    if tally.state == "rejected" and tally.rejection is not None:
        problems.append(
            f"the answer was released although {tally.rejection.reviewer} rejected it "
            f"({rejection.comment_url if rejection else 'comment'})"
        )
    elif required and tally.state != "approved":
        problems.append(
            f"the answer was released with {len(tally.approvals)} of the {required} approval(s) "
            "the review policy requires"
        )
    return finished_audit(
        ticket, answer, approvals, rejection, problems, notes, required, released_at
    )
