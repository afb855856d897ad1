"""The delegation audit: a delegated ticket's split, and each child's signed answer.

Pure: comments and a keyring in, problems, notes and child audits out. The bot records
each delegation it carried out in a ``delegated`` notice on the parent (the delegate
comment's id and the digest of its signed text, and the child issues as ``- #N:`` lines),
and each child's accepted answer in a ``delegated-answer`` notice on the child. The audit
re-verifies the delegate comment as an editor's signed delegate act for the parent, with
as many sub-questions as children. Each child's answer is audited for the child's own
reference exactly as a delivered answer is (:func:`ticketing.audit.issue.audit_issue` with
``released_as=DELEGATED_ANSWER``), and the parent's final answer as any ticket's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from auth.keyring import Keyring
from auth.roles import Act
from auth.verify import DEFAULT_LIMITS, Accepted, VerifyLimits, verify_comment
from ticketing.audit.comments import AuditComment, bot_records
from ticketing.render.delegation import DELEGATED, DELEGATED_ANSWER

__all__ = [
    "DELEGATED",
    "DELEGATED_ANSWER",
    "DelegationAudit",
    "audit_delegations",
]

_CHILD_LINE = re.compile(r"- #([1-9][0-9]{0,9}): ")


@dataclass(frozen=True)
class DelegationAudit:
    """What the delegations on a parent come to: the children, problems and notes."""

    children: tuple[int, ...]
    problems: tuple[str, ...]
    notes: tuple[str, ...]


def audit_delegations(
    ticket: str,
    comments: Sequence[AuditComment],
    *,
    keyring_history: Keyring,
    bot_login: str,
    limits: VerifyLimits = DEFAULT_LIMITS,
) -> DelegationAudit:
    """Re-verify each delegation the bot carried out on ``ticket``; list its children."""
    by_id = {comment.id: comment for comment in comments}
    children: list[int] = []
    problems: list[str] = []
    notes: list[str] = []
    seen: set[str] = set()
    for record in bot_records(comments, kind=DELEGATED, bot_login=bot_login):
        notice = next(c for c in comments if c.url == record.notice_url)
        split = _children(notice.body)
        children += split
        delegate = by_id.get(record.comment_id)
        if delegate is None:
            problems.append(
                f"the delegation the bot carried out, comment {record.comment_id}, is no longer"
                " on the ticket"
            )
            continue
        verdict = verify_comment(
            delegate.body,
            author_login=delegate.author_login,
            author_id=delegate.author_id,
            ticket=ticket,
            keyring=keyring_history,
            now=delegate.created_at,
            is_jti_used=seen.__contains__,
            acts=frozenset({Act.DELEGATE}),
            limits=limits,
        )
        if not isinstance(verdict, Accepted):
            problems.append(
                f"the delegation in comment {delegate.id} does not verify: {verdict.detail}"
            )
            continue
        seen.add(verdict.jti)
        if verdict.digest != record.digest or len(verdict.delegations) != len(split):
            problems.append(
                f"the delegation in comment {delegate.id} is not what the bot recorded (sha256"
                f" {record.digest[:12]}, {len(split)} children)"
            )
            continue
        listed = ", ".join(f"#{number}" for number in split)
        notes.append(
            f"delegated by {verdict.signer} (key {verdict.kid}, jti {verdict.jti}) into"
            f" {listed}: {delegate.url}"
        )
    return DelegationAudit(tuple(children), tuple(problems), tuple(notes))


def _children(body: str) -> list[int]:
    """Return the child issues a delegated notice lists, in order."""
    found: list[int] = []
    for line in body.replace("\r\n", "\n").split("\n"):
        match = _CHILD_LINE.match(line)
        if match is not None:
            found.append(int(match.group(1)))
    return found
