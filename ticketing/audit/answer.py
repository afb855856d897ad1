"""The answer audit: re-verify a ticket's delivered answer and the judgements of it.

Pure: comments and a keyring in, a :class:`~ticketing.audit.results.TicketAudit` out. Each
signed comment is verified again with ``now`` set to its ``created_at`` (GitHub's clock), so
a signature that has since expired, or whose key was rotated out afterwards, still audits as
valid inside its window, while one made with a key revoked *before* it signed does not.
Replays are checked within the ticket.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from auth.comment import text_digest
from auth.keyring import Keyring
from auth.oidc import OidcTrust
from auth.policy import ReviewPolicy
from auth.review_tally import Judgement
from auth.roles import Act
from auth.verify import DEFAULT_LIMITS, Accepted, RejectReason, VerifyLimits, verify_comment
from auth.verify import Verdict as VerifyVerdict
from ticketing.audit.comments import AuditComment, claimed_act, claimed_digest, signed_text
from ticketing.audit.issuer_keys import missing_issuer_key
from ticketing.audit.results import SignedRecord, TicketAudit, finished_audit
from ticketing.audit.review import audit_review

__all__ = ["audit_ticket"]

_ANSWER = frozenset({Act.ANSWER})
_JUDGING = frozenset({Act.APPROVE, Act.REJECT})
_JUDGING_VALUES = frozenset(act.value for act in _JUDGING)


def audit_ticket(
    ticket: str,
    comments: Sequence[AuditComment],
    *,
    keyring_history: Keyring,
    delivered_comment_id: int | None,
    released_digest: str | None,
    policy: ReviewPolicy | None,
    released_at: datetime | None = None,
    limits: VerifyLimits = DEFAULT_LIMITS,
    oidc: OidcTrust | None = None,
) -> TicketAudit:
    """Re-verify the delivered answer of ``ticket`` and the approvals that released it.

    ``delivered_comment_id`` and ``released_digest`` say what ticketproxy released (from its
    store, or its delivered notice) and ``released_at`` when; None means nothing was
    released. With a ``policy``, the answer must carry the approvals the policy requires.
    ``oidc`` is the trusted issuer's JWKS, for agents' keyless answers: their tokens are
    checked at the comment's posting time, so the audit says they were valid when received.
    """
    trust = _Trust(keyring_history, oidc)
    ordered = sorted(comments, key=lambda c: (c.created_at, c.id))
    if delivered_comment_id is None:
        return TicketAudit(ticket, "unanswered", None, (), (), notes=_stray_notes(ordered))
    problems: list[str] = []
    notes: list[str] = []
    answer_comment = next((c for c in ordered if c.id == delivered_comment_id), None)
    if answer_comment is None:
        problems.append(
            f"the delivered answer, comment {delivered_comment_id}, is no longer on the ticket"
        )
        return finished_audit(ticket, None, (), None, problems, notes, None, released_at)
    answer_text = signed_text(answer_comment.body)
    digest = released_digest or text_digest(answer_text or answer_comment.body)
    answer: SignedRecord | None = None
    judgements: list[tuple[Judgement, SignedRecord]] = []
    seen: set[str] = set()
    # Answers other than the delivered one, by digest: reviews may have judged them.
    earlier = {
        text_digest(text): c
        for c in ordered
        if c.id != answer_comment.id
        and claimed_act(c.body) == Act.ANSWER.value
        and (text := signed_text(c.body)) is not None
    }
    # One pass in posting order, so a token's first use is the one that counts.
    for comment in ordered:
        claimed = claimed_act(comment.body)
        if comment.id == answer_comment.id:
            verdict = _verify(comment, ticket, trust, seen, limits, acts=_ANSWER)
            if isinstance(verdict, Accepted):
                answer = _record(verdict, comment)
            else:
                problems.append(
                    f"the delivered answer ({comment.url}) does not verify: "
                    f"{verdict.reason.value}: {verdict.detail}"
                )
                if verdict.reason is RejectReason.UNKNOWN_KEY and (
                    missing := missing_issuer_key(comment.body, trust.oidc)
                ):
                    problems.append(missing)
        elif claimed in _JUDGING_VALUES:
            judged = _verify(comment, ticket, trust, seen, limits, acts=_JUDGING, judged=digest)
            if isinstance(judged, Accepted):
                judgement = Judgement.from_accepted(
                    judged, comment_id=comment.id, posted_at=comment.created_at
                )
                judgements.append((judgement, _record(judged, comment)))
            elif judged.reason is RejectReason.TEXT_MISMATCH and (
                other := _judged_earlier(comment, ticket, trust, seen, limits, earlier)
            ):
                # A valid judgement of another answer (say, the rejection of a first try):
                # it says nothing about the delivered one, and nothing was tampered with.
                notes.append(
                    f"{comment.author_login}'s signed {claimed} ({comment.url}) judged an"
                    f" earlier answer ({other.url}), not the delivered one"
                )
            else:
                notes.append(
                    f"{comment.author_login}'s signed {claimed} ({comment.url}) did not count: "
                    f"{judged.reason.value}: {judged.detail}"
                )
        elif claimed is not None:
            # Other answers never count here, but their tokens are spent all the same.
            _verify(comment, ticket, trust, seen, limits, acts=_ANSWER)
    if answer is not None and released_digest is not None and answer.digest != released_digest:
        problems.append(
            f"the delivered answer's signed text (sha256 {answer.digest[:12]}) is not what "
            f"was released (sha256 {released_digest[:12]})"
        )
    if released_at is not None and answer_comment.updated_at > released_at:
        problems.append(
            f"the delivered answer was edited at {_shown(answer_comment.updated_at)}, after its "
            f"release at {_shown(released_at)}"
        )
    return audit_review(
        ticket,
        answer,
        answer_comment,
        judgements,
        policy=policy,
        digest=digest,
        released_at=released_at,
        problems=problems,
        notes=notes,
    )


def _judged_earlier(
    comment: AuditComment,
    ticket: str,
    trust: _Trust,
    seen: set[str],
    limits: VerifyLimits,
    earlier: dict[str, AuditComment],
) -> AuditComment | None:
    """Return the other answer a judgement validly judged, if it names one by its digest."""
    digest = claimed_digest(comment.body)
    other = None if digest is None else earlier.get(digest)
    if digest is None or other is None or other.created_at > comment.created_at:
        return None
    verdict = _verify(comment, ticket, trust, seen, limits, acts=_JUDGING, judged=digest)
    return other if isinstance(verdict, Accepted) else None


def _stray_notes(comments: Sequence[AuditComment]) -> tuple[str, ...]:
    signed = sum(1 for c in comments if claimed_act(c.body) == Act.ANSWER.value)
    if not signed:
        return ()
    return (f"{signed} signed answer(s) on the ticket, none recorded as delivered",)


@dataclass(frozen=True)
class _Trust:
    """The keyring, and the issuer's keys that vouch for the OIDC agents it lists."""

    keyring: Keyring
    oidc: OidcTrust | None


def _verify(
    comment: AuditComment,
    ticket: str,
    trust: _Trust,
    seen: set[str],
    limits: VerifyLimits,
    *,
    acts: frozenset[Act],
    judged: str | None = None,
) -> VerifyVerdict:
    verdict = verify_comment(
        comment.body,
        author_login=comment.author_login,
        author_id=comment.author_id,
        ticket=ticket,
        keyring=trust.keyring,
        # GitHub's creation time, not today: what matters is whether the key and the token
        # were valid when the comment was posted.
        now=comment.created_at,
        is_jti_used=seen.__contains__,
        acts=acts,
        judged_digest=judged,
        limits=limits,
        oidc=trust.oidc,
    )
    if isinstance(verdict, Accepted):
        seen.add(verdict.jti)
    return verdict


def _record(verdict: Accepted, comment: AuditComment) -> SignedRecord:
    return SignedRecord(
        act=verdict.act,
        signer=verdict.signer,
        kid=verdict.kid,
        jti=verdict.jti,
        digest=verdict.digest,
        signed_at=verdict.issued_at,
        posted_at=comment.created_at,
        comment_id=comment.id,
        comment_url=comment.url,
        agent=None if verdict.agent is None else _agent_line(verdict),
    )


def _agent_line(verdict: Accepted) -> str:
    agent = verdict.agent
    assert agent is not None
    proof = "an enrolled agent key" if agent.oidc is None else agent.oidc.describe()
    return f"{agent.describe()}, by {proof}"


def _shown(value: datetime) -> str:
    return f"{value.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
