"""The issue audit: read the bot's delivered notices and audit what they say was released.

Pure: comments in, one :class:`~ticketing.audit.results.TicketAudit` per ticket out. An
agent run's issue holds one ticket per step; each delivered notice names its step
(``ticket=``), and each step is audited under its own reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from auth.keyring import Keyring
from auth.logins import same_login
from auth.oidc import OidcTrust
from auth.policy import ReviewPolicy
from auth.verify import DEFAULT_LIMITS, VerifyLimits
from ticketing.audit.answer import audit_ticket
from ticketing.audit.comments import AuditComment, bot_records, claimed_ticket, record_ticket
from ticketing.audit.files import created_files
from ticketing.audit.results import TicketAudit
from ticketing.render.replies import DELIVERED

__all__ = ["audit_issue", "audit_steps"]


def audit_issue(
    ticket: str,
    comments: Sequence[AuditComment],
    *,
    keyring_history: Keyring,
    bot_login: str,
    policy: ReviewPolicy | None,
    limits: VerifyLimits = DEFAULT_LIMITS,
    oidc: OidcTrust | None = None,
    released_as: str = DELIVERED,
) -> TicketAudit:
    """Audit a ticket from its comments alone, reading what the bot's notices recorded.

    ``released_as`` is the kind of bot record that names the released answer: the delivered
    notice, or on a delegated child the answer the bot recorded for its parent.
    """
    delivered = bot_records(comments, kind=released_as, bot_login=bot_login)
    first = delivered[0] if delivered else None
    audit = audit_ticket(
        ticket,
        comments,
        keyring_history=keyring_history,
        delivered_comment_id=None if first is None else first.comment_id,
        released_digest=None if first is None else first.digest,
        released_at=None if first is None else first.posted_at,
        policy=policy,
        limits=limits,
        oidc=oidc,
    )
    if first is None:
        return audit
    if audit.answer is not None:
        audit = replace(audit, created_files=created_files(comments, audit.answer.comment_id))
    others = sorted(
        {(r.comment_id, r.digest) for r in delivered} - {(first.comment_id, first.digest)}
    )
    if not others:
        return audit
    problem = (
        "the bot recorded more than one delivered answer: "
        + ", ".join(f"comment {cid} (sha256 {digest[:12]})" for cid, digest in sorted(others))
        + " besides the first"
    )
    return replace(audit, verdict="mismatch", problems=(*audit.problems, problem))


def audit_steps(
    issue_ticket: str,
    comments: Sequence[AuditComment],
    *,
    keyring_history: Keyring,
    bot_login: str,
    policy: ReviewPolicy | None,
    limits: VerifyLimits = DEFAULT_LIMITS,
    oidc: OidcTrust | None = None,
) -> tuple[TicketAudit, ...]:
    """Audit every step of an agent run's issue, each under its own ticket reference.

    The bot's delivered notices say which step each release was for (``ticket=``); the
    signed comments of a step are those whose token names that step (read unverified, only
    to sort them: each is verified against the step it claims). An issue with no step
    notices is audited as one ticket, as :func:`audit_issue` does.
    """
    delivered = bot_records(comments, kind=DELIVERED, bot_login=bot_login)
    steps: list[str] = []
    for record in delivered:
        ref = record.ticket or issue_ticket
        if ref not in steps:
            steps.append(ref)
    if not steps:
        steps = [issue_ticket]
    audits = []
    for ref in steps:
        mine = [c for c in comments if _about_step(c, ref, issue_ticket, bot_login)]
        audits.append(
            audit_issue(
                ref,
                mine,
                keyring_history=keyring_history,
                bot_login=bot_login,
                policy=policy,
                limits=limits,
                oidc=oidc,
            )
        )
    return tuple(audits)


def _about_step(comment: AuditComment, ref: str, issue_ticket: str, bot_login: str) -> bool:
    """Say whether a comment belongs to the audit of step ``ref`` (sorting only, unverified)."""
    if same_login(comment.author_login, bot_login):
        return record_ticket(comment.body, issue_ticket) == ref
    return claimed_ticket(comment.body) in {None, ref}
