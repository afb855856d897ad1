"""The ``delegate`` claim: the sub-questions an editor splits a ticket into, pure.

A signed ``delegate`` act carries, besides the claims every act has, a ``delegate`` claim:
a JSON array of one to :data:`MAX_QUESTIONS` objects, each exactly ``{"ask": TEXT}`` or
``{"ask": TEXT, "to": LOGIN}``. ``ask`` is the sub-question (non-blank, at most
:data:`MAX_ASK_CHARS` characters); ``to`` is the GitHub login it is addressed to, which
must hold a key in the keyring (checked by :func:`unknown_addressees` at verification).
Anything else (another member, another type, too many, too long) makes the token
malformed: the schema is fixed, so a verifier never has to guess what was delegated.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from auth.logins import is_valid_login

__all__ = [
    "DELEGATE_CLAIM",
    "MAX_ASK_CHARS",
    "MAX_QUESTIONS",
    "Delegation",
    "delegations_claim",
    "read_delegations",
    "render_delegations",
    "unknown_addressees",
]

DELEGATE_CLAIM = "delegate"
# Small on purpose: each sub-question opens an issue, and GitHub takes 100 sub-issues.
MAX_QUESTIONS = 10
MAX_ASK_CHARS = 4_000
_MEMBERS = (frozenset({"ask"}), frozenset({"ask", "to"}))


@dataclass(frozen=True)
class Delegation:
    """One sub-question of a delegated ticket, and the login it is addressed to (or None)."""

    ask: str
    to: str | None = None


def read_delegations(value: object) -> tuple[Delegation, ...] | None:
    """Return the sub-questions of a ``delegate`` claim, or None if it breaks the schema."""
    if not isinstance(value, list) or not 0 < len(value) <= MAX_QUESTIONS:
        return None
    questions: list[Delegation] = []
    for item in value:
        if not isinstance(item, dict) or frozenset(item) not in _MEMBERS:
            return None
        ask, to = item.get("ask"), item.get("to")
        if not isinstance(ask, str) or not ask.strip() or len(ask) > MAX_ASK_CHARS:
            return None
        if "to" in item and not (isinstance(to, str) and is_valid_login(to)):
            return None
        questions.append(Delegation(ask=ask, to=to))
    return tuple(questions)


def delegations_claim(questions: Iterable[Delegation]) -> list[dict[str, Any]]:
    """Return the ``delegate`` claim for ``questions``; raise ValueError if it breaks the schema."""
    claim: list[dict[str, Any]] = [
        {"ask": q.ask} if q.to is None else {"ask": q.ask, "to": q.to} for q in questions
    ]
    if read_delegations(claim) is None:
        raise ValueError(
            f"a delegation holds 1 to {MAX_QUESTIONS} sub-questions, each non-blank and at most "
            f"{MAX_ASK_CHARS} characters, each addressed to nobody or to a valid GitHub login"
        )
    return claim


def unknown_addressees(questions: Iterable[Delegation], logins: Iterable[str]) -> list[str]:
    """Return the addressees, in order and once each, that are none of ``logins``."""
    known = frozenset(login.lower() for login in logins)
    missing: list[str] = []
    for question in questions:
        to = question.to
        if to is not None and to.lower() not in known and to not in missing:
            missing.append(to)
    return missing


def render_delegations(questions: Iterable[Delegation]) -> str:
    """Return the comment text of a delegation: what a reader of the ticket sees signed."""
    lines = ["Delegated: this ticket is split into these sub-questions.", ""]
    for index, question in enumerate(questions, start=1):
        who = "" if question.to is None else f" (for @{question.to})"
        first, *rest = question.ask.strip().split("\n")
        lines.append(f"{index}. {first}{who}")
        lines.extend(f"   {line}" if line else "" for line in rest)
    return "\n".join(lines)
