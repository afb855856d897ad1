"""The marker lines that tie an issue to its request, a step comment to its step, and a bot
notice to the answer it records.

Pure: no I/O. A marker is an HTML comment alone on its line: ``<!-- ticketproxy:request
KEY -->`` in an issue body, ``<!-- ticketproxy:step N KEY -->`` in a step comment (the
step number first, so a reader such as ``ticketproxy answer`` knows the newest step).
Agent text can never contain ``<!--`` (see :func:`ticketing.render.markdown.neutralise_markers`),
so an exact marker line was written by the renderer.

A bot notice about an answer (delivered, or awaiting review) carries one visible record
line, read back by the offline audit (:mod:`ticketing.audit`)::

    comment_id=<id of the answer comment> sha256=<digest of the answer text> [ticket=<step>]

A key that is not 1 to 128 lowercase hex digits, a step outside 2 to 999999, or a record
line that would not read back raises ``ValueError``: they are programming errors, not agent
input.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = [
    "MARKER_PREFIX",
    "STEP_MARKER_PREFIX",
    "RecordLine",
    "find_request_marker",
    "find_step_marker",
    "find_step_number",
    "read_record_line",
    "render_record_line",
    "request_marker",
    "step_marker",
]

MARKER_PREFIX = "<!-- ticketproxy:request "
STEP_MARKER_PREFIX = "<!-- ticketproxy:step "
_MARKER_SUFFIX = " -->"
_MARKER_LINE = re.compile(r"<!-- ticketproxy:request ([0-9a-f]{1,128}) -->")
# The step number comes first, so a reader (`ticketproxy answer`) knows the newest step.
_STEP_MARKER_LINE = re.compile(r"<!-- ticketproxy:step ([1-9][0-9]{0,5}) ([0-9a-f]{1,128}) -->")
_HEX_KEY = re.compile(r"[0-9a-f]{1,128}")
# `ticket=` names the step of an agent run the record is about (absent: the issue itself).
_RECORD_LINE = re.compile(
    r"\s*comment_id=([1-9][0-9]{0,18}) sha256=([0-9a-f]{64})"
    r"(?: ticket=([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+#[1-9][0-9]{0,9}(?:/[1-9][0-9]{0,5})?))?\s*"
)


class RecordLine(NamedTuple):
    """What a record line names: the answer comment, its text's digest, and maybe its step."""

    comment_id: int
    digest: str
    ticket: str | None


def request_marker(key: str) -> str:
    """Return the hidden line that ties an issue to its request key."""
    return f"{MARKER_PREFIX}{_checked_key(key)}{_MARKER_SUFFIX}"


def step_marker(key: str, step: int) -> str:
    """Return the hidden line that ties a step comment to its step and request key."""
    if isinstance(step, bool) or not 2 <= step <= 999_999:
        raise ValueError(f"step must be 2 to 999999, got {step!r}")
    return f"{STEP_MARKER_PREFIX}{step} {_checked_key(key)}{_MARKER_SUFFIX}"


def _checked_key(key: str) -> str:
    """Return the key when it is 1 to 128 lowercase hex digits, else raise ValueError."""
    if not _HEX_KEY.fullmatch(key):
        raise ValueError(f"request key must be 1 to 128 lowercase hex digits, got {key!r}")
    return key


def find_request_marker(body: str) -> str | None:
    """Return the request key from the renderer's marker line in an issue body, if any."""
    return _find_marker(_MARKER_LINE, body)


def find_step_marker(body: str) -> str | None:
    """Return the request key from the renderer's marker line in a step comment, if any."""
    return _find_marker(_STEP_MARKER_LINE, body, group=2)


def find_step_number(body: str) -> int | None:
    """Return the step a step comment is for, from its marker line, if any."""
    found = _find_marker(_STEP_MARKER_LINE, body, group=1)
    return None if found is None else int(found)


def _find_marker(pattern: re.Pattern[str], body: str, *, group: int = 1) -> str | None:
    """Return the key of the last line of body that is exactly a marker of this pattern."""
    # Agent text can never contain `<!--` (see neutralise_markers), so any exact marker
    # line was written by the renderer; the last one wins, as the renderer writes it last.
    found: str | None = None
    for line in body.splitlines():
        match = pattern.fullmatch(line.strip())
        if match:
            found = match.group(group)
    return found


def render_record_line(*, comment_id: int, digest: str, ticket: str | None = None) -> str:
    """Return the record line a bot notice carries: ``comment_id=<n> sha256=<hex>``.

    With ``ticket`` (a step of an agent run, ``owner/repo#12/3``) the line ends in
    ``ticket=<reference>``, so that the audit checks each step under its own reference.
    """
    line = f"comment_id={comment_id} sha256={digest}"
    if ticket is not None:
        line += f" ticket={ticket}"
    if _RECORD_LINE.fullmatch(line) is None:
        raise ValueError(
            "comment_id must be a positive id, digest a hex SHA-256 and ticket OWNER/REPO#N[/S]"
        )
    return line


def read_record_line(line: str) -> RecordLine | None:
    """Return what ``line`` records when the whole line is a record line, else None."""
    match = _RECORD_LINE.fullmatch(line)
    if match is None:
        return None
    return RecordLine(int(match.group(1)), match.group(2), match.group(3))
