"""The answer a reviewer is asked to judge, as ``ticketproxy approve`` and ``reject`` find it.

Pure: comments in, a :class:`PendingAnswer` out. The bot's newest needs-review notice names
the answer and the digest a reviewer signs; without one, the newest signed answer is taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from auth.comment import text_digest
from auth.logins import same_login
from ticketing.audit.comments import (
    AuditComment,
    bot_records,
    claimed_act,
    claimed_ticket,
    signed_text,
)
from ticketing.render.replies import NEEDS_REVIEW

__all__ = ["PendingAnswer", "pending_answer"]


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
            if same_login(c.author_login, bot_login) or claimed_ticket(c.body) in {None, ticket}
        ]
    if requests:
        record = requests[-1]
        comment = next((c for c in comments if c.id == record.comment_id), None)
        if comment is None:
            return None
        text = signed_text(comment.body)
        current = text_digest(text if text is not None else comment.body)
        return PendingAnswer(comment, text or "", record.digest, current, requested=True)
    for comment in sorted(comments, key=lambda c: (c.created_at, c.id), reverse=True):
        if same_login(comment.author_login, bot_login) or claimed_act(comment.body) != "answer":
            continue
        text = signed_text(comment.body) or ""
        digest = text_digest(text)
        return PendingAnswer(comment, text, digest, digest, requested=False)
    return None
