"""The offline audit: re-verify, from a ticket's comments alone, what was released and why.

Pure: comments and a keyring in, a :class:`TicketAudit` out; fetching the comments is the
caller's job. Each signed comment is verified again with its key looked up by kid and with
``now`` set to the comment's ``created_at`` (GitHub's clock), so a signature that has since
expired, or whose key was rotated out afterwards (``revoked_at`` kept in the keyring),
still audits as valid inside its window, while one made with a key revoked *before* it
signed does not. Replays are checked within the ticket.

What ticketproxy records on the ticket, in comments posted by its bot account (the one that
opened the issue), each ending in the reply marker line of :mod:`ticketing.render.replies`::

    <!-- ticketproxy:reply needs-review -->   the answer awaits review (read by `approve`)
    <!-- ticketproxy:reply delivered -->      the answer was released to the agent

and each holding exactly one record line, made by
:func:`ticketing.render.markers.render_record_line`::

    comment_id=<id of the answer comment> sha256=<digest of the answer text>

The audit catches an answer edited after release (``updated_at`` later than the delivered
notice, or a digest that no longer matches), an approval for another text or posted before
the answer, self-approval, a reused jti, a signer without the role, a revoked key, and an
answer released with fewer approvals than the policy requires.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

import jwt

from auth.comment import normalise_text, split_signed_comment, text_digest
from auth.errors import CommentFormatError
from auth.keyring import Keyring
from auth.logins import same_login
from auth.policy import Judgement, ReviewPolicy, commands_in, decide, tally_review
from auth.roles import Act
from auth.verify import DEFAULT_LIMITS, Accepted, VerifyLimits, verify_comment
from auth.verify import Verdict as VerifyVerdict
from ticketing.render.markers import read_record_line
from ticketing.render.replies import DELIVERED, NEEDS_REVIEW, reply_marker

__all__ = [
    "AuditComment",
    "BotRecord",
    "PendingAnswer",
    "SignedRecord",
    "TicketAudit",
    "audit_issue",
    "audit_steps",
    "audit_ticket",
    "bot_records",
    "pending_answer",
]

_ANSWER = frozenset({Act.ANSWER})
_JUDGING = frozenset({Act.APPROVE, Act.REJECT})
_JUDGING_VALUES = frozenset(act.value for act in _JUDGING)

AuditVerdict = Literal["ok", "mismatch", "unanswered"]


@dataclass(frozen=True)
class AuditComment:
    """An issue comment as GitHub shows it now, with GitHub's own timestamps."""

    id: int
    author_login: str
    author_id: int | None
    body: str
    created_at: datetime
    updated_at: datetime
    url: str


@dataclass(frozen=True)
class BotRecord:
    """A bot notice naming an answer comment and the digest of its text."""

    kind: str
    comment_id: int
    digest: str
    posted_at: datetime
    notice_url: str
    # The ticket reference of the step it is about (``owner/repo#12/3``), when it names one.
    ticket: str | None = None


@dataclass(frozen=True)
class SignedRecord:
    """Who signed a comment, with which key and token, and when it was signed and posted."""

    act: Act
    signer: str
    kid: str
    jti: str
    digest: str
    signed_at: datetime
    posted_at: datetime
    comment_id: int
    comment_url: str

    def to_json(self) -> dict[str, Any]:
        """Return the record as JSON-ready values."""
        return {
            "act": self.act.value,
            "signer": self.signer,
            "kid": self.kid,
            "jti": self.jti,
            "sha256": self.digest,
            "signed_at": _iso(self.signed_at),
            "posted_at": _iso(self.posted_at),
            "comment_id": self.comment_id,
            "comment_url": self.comment_url,
        }


@dataclass(frozen=True)
class TicketAudit:
    """The audit of one ticket: the verdict, the answer and approvals, and what is wrong."""

    ticket: str
    verdict: AuditVerdict
    answer: SignedRecord | None
    approvals: tuple[SignedRecord, ...]
    problems: tuple[str, ...]
    # Judgements and answers that never counted: worth reading, not a mismatch by themselves.
    notes: tuple[str, ...] = ()
    rejection: SignedRecord | None = None
    required_approvals: int | None = None
    released_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the audit as JSON-ready values, one object per ticket."""
        return {
            "ticket": self.ticket,
            "verdict": self.verdict,
            "answer": None if self.answer is None else self.answer.to_json(),
            "approvals": [record.to_json() for record in self.approvals],
            "rejection": None if self.rejection is None else self.rejection.to_json(),
            "required_approvals": self.required_approvals,
            "released_at": None if self.released_at is None else _iso(self.released_at),
            "problems": list(self.problems),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class PendingAnswer:
    """The answer a reviewer is asked to judge, and the digest they would sign."""

    comment: AuditComment
    text: str
    digest: str
    current_digest: str
    requested: bool  # named by the bot's needs-review notice, not guessed

    @property
    def edited(self) -> bool:
        """Say whether the comment's text changed since the bot asked for review."""
        return self.digest != self.current_digest


def bot_records(
    comments: Iterable[AuditComment], *, kind: str, bot_login: str
) -> tuple[BotRecord, ...]:
    """Return the records of the bot's ``kind`` notices, oldest first.

    Only comments by ``bot_login`` with the marker line ``<!-- ticketproxy:reply <kind> -->``
    count, and only when exactly one line is a whole record line: untrusted text the bot
    quotes in a notice cannot add a record.
    """
    marker = reply_marker(kind)
    records: list[BotRecord] = []
    for comment in sorted(comments, key=lambda c: (c.created_at, c.id)):
        if not same_login(comment.author_login, bot_login):
            continue
        lines = comment.body.replace("\r\n", "\n").split("\n")
        if not any(line.strip() == marker for line in lines):
            continue
        found = [r for r in map(read_record_line, lines) if r is not None]
        if len(found) != 1:
            continue
        records.append(
            BotRecord(
                kind=kind,
                comment_id=found[0].comment_id,
                digest=found[0].digest,
                posted_at=comment.created_at,
                notice_url=comment.url,
                ticket=found[0].ticket,
            )
        )
    return tuple(records)


def pending_answer(
    comments: Sequence[AuditComment],
    *,
    bot_login: str,
    ticket: str | None = None,
    issue_ticket: str | None = None,
) -> PendingAnswer | None:
    """Return the answer awaiting review: the one the bot's newest needs-review notice names.

    Without such a notice, return the newest comment signed as an answer. Return None when
    there is neither, or when the named comment is gone. With ``ticket`` (a step of an agent
    run; ``issue_ticket`` is the issue's own reference) only that step's notices and answers
    count.
    """
    requests = bot_records(comments, kind=NEEDS_REVIEW, bot_login=bot_login)
    if ticket is not None:
        requests = tuple(r for r in requests if (r.ticket or issue_ticket) == ticket)
        comments = [
            c
            for c in comments
            if same_login(c.author_login, bot_login) or _claimed_ticket(c.body) in {None, ticket}
        ]
    if requests:
        record = requests[-1]
        comment = next((c for c in comments if c.id == record.comment_id), None)
        if comment is None:
            return None
        text = _signed_text(comment.body)
        current = text_digest(text if text is not None else comment.body)
        return PendingAnswer(comment, text or "", record.digest, current, requested=True)
    for comment in sorted(comments, key=lambda c: (c.created_at, c.id), reverse=True):
        if same_login(comment.author_login, bot_login) or _claimed_act(comment.body) != "answer":
            continue
        text = _signed_text(comment.body) or ""
        digest = text_digest(text)
        return PendingAnswer(comment, text, digest, digest, requested=False)
    return None


def audit_issue(
    ticket: str,
    comments: Sequence[AuditComment],
    *,
    keyring_history: Keyring,
    bot_login: str,
    policy: ReviewPolicy | None,
    limits: VerifyLimits = DEFAULT_LIMITS,
) -> TicketAudit:
    """Audit a ticket from its comments alone, reading what the bot's notices recorded."""
    delivered = bot_records(comments, kind=DELIVERED, bot_login=bot_login)
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
    )
    if first is None:
        return audit
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
            )
        )
    return tuple(audits)


def _about_step(comment: AuditComment, ref: str, issue_ticket: str, bot_login: str) -> bool:
    """Say whether a comment belongs to the audit of step ``ref`` (sorting only, unverified)."""
    if same_login(comment.author_login, bot_login):
        return _record_ticket(comment.body, issue_ticket) == ref
    return _claimed_ticket(comment.body) in {None, ref}


def _record_ticket(body: str, default: str) -> str:
    """Return the step a bot comment's record line names (default: the issue), unverified."""
    for line in body.replace("\r\n", "\n").split("\n"):
        record = read_record_line(line)
        if record is not None:
            return record.ticket or default
    return default


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
) -> TicketAudit:
    """Re-verify the delivered answer of ``ticket`` and the approvals that released it.

    ``delivered_comment_id`` and ``released_digest`` say what ticketproxy released (from its
    store, or its delivered notice) and ``released_at`` when; None means nothing was
    released. With a ``policy``, the answer must carry the approvals the policy requires.
    """
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
        return _finish(ticket, None, (), None, problems, notes, None, released_at)
    answer_text = _signed_text(answer_comment.body)
    digest = released_digest or text_digest(answer_text or answer_comment.body)
    answer: SignedRecord | None = None
    judgements: list[tuple[Judgement, SignedRecord]] = []
    seen: set[str] = set()
    # One pass in posting order, so a token's first use is the one that counts.
    for comment in ordered:
        claimed = _claimed_act(comment.body)
        if comment.id == answer_comment.id:
            verdict = _verify(comment, ticket, keyring_history, seen, limits, acts=_ANSWER)
            if isinstance(verdict, Accepted):
                answer = _record(verdict, comment)
            else:
                problems.append(
                    f"the delivered answer ({comment.url}) does not verify: "
                    f"{verdict.reason.value}: {verdict.detail}"
                )
        elif claimed in _JUDGING_VALUES:
            judged = _verify(
                comment, ticket, keyring_history, seen, limits, acts=_JUDGING, judged=digest
            )
            if isinstance(judged, Accepted):
                judgement = Judgement.from_accepted(
                    judged, comment_id=comment.id, posted_at=comment.created_at
                )
                judgements.append((judgement, _record(judged, comment)))
            else:
                notes.append(
                    f"{comment.author_login}'s signed {claimed} ({comment.url}) did not count: "
                    f"{judged.reason.value}: {judged.detail}"
                )
        elif claimed is not None:
            # Other answers never count here, but their tokens are spent all the same.
            _verify(comment, ticket, keyring_history, seen, limits, acts=_ANSWER)
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
    return _review(
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


def _review(
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
        text = _signed_text(answer_comment.body) or ""
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
    return _finish(ticket, answer, approvals, rejection, problems, notes, required, released_at)


def _finish(
    ticket: str,
    answer: SignedRecord | None,
    approvals: tuple[SignedRecord, ...],
    rejection: SignedRecord | None,
    problems: list[str],
    notes: list[str],
    required: int | None,
    released_at: datetime | None,
) -> TicketAudit:
    return TicketAudit(
        ticket=ticket,
        verdict="mismatch" if problems else "ok",
        answer=answer,
        approvals=approvals,
        problems=tuple(problems),
        notes=tuple(dict.fromkeys(notes)),
        rejection=rejection,
        required_approvals=required,
        released_at=released_at,
    )


def _stray_notes(comments: Sequence[AuditComment]) -> tuple[str, ...]:
    signed = sum(1 for c in comments if _claimed_act(c.body) == Act.ANSWER.value)
    if not signed:
        return ()
    return (f"{signed} signed answer(s) on the ticket, none recorded as delivered",)


def _verify(
    comment: AuditComment,
    ticket: str,
    keyring: Keyring,
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
        keyring=keyring,
        # GitHub's creation time, not today: what matters is whether the key and the token
        # were valid when the comment was posted.
        now=comment.created_at,
        is_jti_used=seen.__contains__,
        acts=acts,
        judged_digest=judged,
        limits=limits,
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
    )


def _signed_text(body: str) -> str | None:
    """Return the text before a comment's trailer, or None when it carries no valid trailer."""
    try:
        text, token = split_signed_comment(body)
    except CommentFormatError:
        return None
    return None if token is None else normalise_text(text)


def _unverified_claims(body: str) -> dict[str, Any] | None:
    """Return a signed comment's claims without verifying them: only to sort comments."""
    try:
        _, token = split_signed_comment(body)
        if token is None:
            return None
        claims = jwt.decode(token, options={"verify_signature": False})
    except (CommentFormatError, jwt.PyJWTError, ValueError, TypeError, RecursionError):
        return None
    return claims if isinstance(claims, dict) else {}


def _claimed(body: str, claim: str) -> str | None:
    """Return a string claim of a signed comment, unverified; None when it is unsigned."""
    claims = _unverified_claims(body)
    if claims is None:
        return None
    value = claims.get(claim)
    return value if isinstance(value, str) else "malformed"


def _claimed_act(body: str) -> str | None:
    """Return the ``act`` a signed comment claims, unverified: only to sort comments."""
    return _claimed(body, "act")


def _claimed_ticket(body: str) -> str | None:
    """Return the ticket (``aud``) a signed comment claims, unverified: only to sort comments."""
    return _claimed(body, "aud")


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _shown(value: datetime) -> str:
    return f"{value.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
