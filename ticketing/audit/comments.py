"""A ticket's comments as the audit reads them: the bot's notice records, signed text, claims.

Pure: no I/O. A bot notice's record counts only when the bot posted it with the reply
marker of its kind (:func:`ticketing.render.replies.reply_marker`) and exactly one whole
record line (:func:`ticketing.render.markers.read_record_line`). The claims of a signed
comment are read here *unverified*, only to sort comments; each is verified before it counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import jwt

from auth.comment import normalise_text, split_signed_comment
from auth.errors import CommentFormatError
from auth.logins import same_login
from ticketing.render.markers import read_record_line
from ticketing.render.replies import reply_marker

__all__ = [
    "AuditComment",
    "BotRecord",
    "bot_records",
    "claimed_act",
    "claimed_ticket",
    "record_ticket",
    "signed_text",
]


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


def record_ticket(body: str, default: str) -> str:
    """Return the step a bot comment's record line names (default: the issue), unverified."""
    for line in body.replace("\r\n", "\n").split("\n"):
        record = read_record_line(line)
        if record is not None:
            return record.ticket or default
    return default


def signed_text(body: str) -> str | None:
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


def claimed_act(body: str) -> str | None:
    """Return the ``act`` a signed comment claims, unverified: only to sort comments."""
    return _claimed(body, "act")


def claimed_digest(body: str) -> str | None:
    """Return the ``sha256`` a signed comment claims, unverified: only to find what it judged."""
    return _claimed(body, "sha256")


def claimed_ticket(body: str) -> str | None:
    """Return the ticket (``aud``) a signed comment claims, unverified: only to sort comments."""
    return _claimed(body, "aud")
