"""Ticket references: ``owner/repo#12`` for an issue, ``owner/repo#12/3`` for its step 3.

Pure: no I/O. A signature's ``aud`` claim is the reference of the ticket it answers, so
the step is part of it and a signature for step 3 cannot answer step 4. Only the one
canonical spelling is written and read (no leading zeros, no ``/1``), so each ticket has
exactly one reference to compare.
"""

from __future__ import annotations

import re

__all__ = ["parse_ticket_reference", "ticket_reference"]

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_REFERENCE = re.compile(
    r"([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#([1-9][0-9]{0,9})(?:/([1-9][0-9]{0,9}))?"
)


def ticket_reference(repo: str, issue_number: int, step: int = 1) -> str:
    """Return ``owner/repo#12`` for step 1 of issue 12, ``owner/repo#12/3`` for step 3."""
    if not _REPO.fullmatch(repo):
        raise ValueError(f"repo must look like owner/name, got {repo!r}")
    for name, value in (("issue number", issue_number), ("step", step)):
        # bool is an int; True as an issue number is a bug, not issue 1.
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 10**10:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return f"{repo}#{issue_number}" if step == 1 else f"{repo}#{issue_number}/{step}"


def parse_ticket_reference(text: str) -> tuple[str, int, int]:
    """Return (repo, issue number, step) from a reference; step 1 when it names none."""
    match = _REFERENCE.fullmatch(text)
    if match is None or match[3] == "1":
        raise ValueError(
            f"ticket reference must look like owner/repo#12 or owner/repo#12/3, got {text!r}"
        )
    return match[1], int(match[2]), int(match[3] or 1)
