"""The signed-comment format: answer text, a blank line, then a hidden signature trailer.

::

    <answer text, markdown>

    <!-- ticketproxy-signature: <compact JWS> -->

The trailer must be the last non-blank line, and the only trailer-like text anywhere in
the comment. A trailer that is quoted, inside a code block, repeated or followed by more
text makes the comment ambiguous, and :func:`split_signed_comment` raises
:class:`~auth.errors.CommentFormatError` rather than guess which part was signed.
"""

from __future__ import annotations

import hashlib
import re

from auth.errors import CommentFormatError

TRAILER_PREFIX = "<!-- ticketproxy-signature: "
TRAILER_SUFFIX = " -->"
DIGEST_RE = re.compile(r"[0-9a-f]{64}")  # what text_digest returns: lower-case hex SHA-256

_COMPACT_JWS = r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"
_TOKEN_RE = re.compile(_COMPACT_JWS)
_TRAILER_RE = re.compile(
    re.escape(TRAILER_PREFIX) + f"({_COMPACT_JWS})" + re.escape(TRAILER_SUFFIX)
)
# Anything that looks like the start of a trailer, however spaced or cased: finding one
# outside the last line means a quoted, pasted or hidden second signature.
_MARKER_RE = re.compile(r"<!--\s*ticketproxy-signature", re.IGNORECASE)
# A CommonMark code fence: up to three spaces, then three or more backticks or tildes.
_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")


def normalise_text(text: str) -> str:
    """Return text as it is signed: LF line endings, surrounding whitespace stripped."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def text_digest(text: str) -> str:
    """Return the hex SHA-256 of the normalised text's UTF-8 bytes."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()


def trailer_line(token: str) -> str:
    """Return the trailer line that carries ``token``."""
    return f"{TRAILER_PREFIX}{token}{TRAILER_SUFFIX}"


def split_signed_comment(body: str) -> tuple[str, str | None]:
    """Split a comment into the text before its trailer and the token in it.

    Return ``(body, None)`` for an unsigned comment, one with no trailer-like text at all.
    Raise :class:`CommentFormatError` when a trailer is present but is not the one
    unambiguous last line.
    """
    lines = body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    last = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].strip()), None)
    match = None if last is None else _TRAILER_RE.fullmatch(lines[last].strip(" \t"))
    if match is None or last is None:
        if _MARKER_RE.search(body):
            raise CommentFormatError(
                "the signature trailer must be the last line of the comment, exactly as "
                "signed, with nothing after it"
            )
        return body, None
    text_lines = lines[:last]
    if any(_MARKER_RE.search(line) for line in text_lines):
        raise CommentFormatError(
            "the comment holds more than one signature trailer (perhaps quoted or in a code "
            "block); post the answer with only its own trailer"
        )
    if _ends_inside_code_fence(text_lines):
        raise CommentFormatError(
            "the signature trailer is inside an unclosed code block; close the block "
            "before the trailer"
        )
    return "\n".join(text_lines), match.group(1)


def render_signed_comment(text: str, token: str) -> str:
    """Return the comment body that carries ``text`` signed by ``token``."""
    if _TOKEN_RE.fullmatch(token) is None:
        raise CommentFormatError("the token is not a compact JWS")
    normalised = normalise_text(text)
    body = f"{normalised}\n\n{trailer_line(token)}" if normalised else trailer_line(token)
    # Parsing what was rendered refuses text that would make the comment ambiguous, such
    # as text that already holds a trailer or leaves a code block open.
    split_signed_comment(body)
    return body


def _ends_inside_code_fence(lines: list[str]) -> bool:
    # CommonMark section 4.5: a fence closes on a line of the same character, at least as
    # long, with nothing but spaces after it; an unclosed fence runs to the end.
    opening: str | None = None
    for line in lines:
        match = _FENCE_RE.fullmatch(line)
        if match is None:
            continue
        fence, rest = match.groups()
        if opening is None:
            if not (fence[0] == "`" and "`" in rest):
                opening = fence
        elif fence[0] == opening[0] and len(fence) >= len(opening) and not rest.strip(" \t"):
            opening = None
    return opening is not None
