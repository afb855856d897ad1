"""What the audit finds about one ticket: its verdict and the signed records behind it.

Pure values, each with a ``to_json`` for ``ticketproxy audit --json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from auth.roles import Act

__all__ = ["AuditVerdict", "SignedRecord", "TicketAudit", "finished_audit"]

AuditVerdict = Literal["ok", "mismatch", "unanswered"]


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
    # Signed by an agent identity: "alice's agent, by …" (its key, or its OIDC token).
    agent: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the record as JSON-ready values."""
        extra = {} if self.agent is None else {"agent": self.agent}
        return {
            **extra,
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
    # Paths of the files the signed answer created: its signature covers their bytes.
    created_files: tuple[str, ...] = ()

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
            "created_files": list(self.created_files),
        }


def finished_audit(
    ticket: str,
    answer: SignedRecord | None,
    approvals: tuple[SignedRecord, ...],
    rejection: SignedRecord | None,
    problems: list[str],
    notes: list[str],
    required: int | None,
    released_at: datetime | None,
) -> TicketAudit:
    """Return the audit of ``ticket``: a mismatch when anything is wrong, else ok."""
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


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
