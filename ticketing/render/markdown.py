"""Inert markdown from untrusted text, for the tickets and replies the bot writes on GitHub.

Pure: no I/O, no clock. Agent text shown here must not act on GitHub, so:

- outside code fences a word joiner (U+2060) follows every ``@``, and every ``#`` or
  ``GH-`` that precedes a digit, so nobody is pinged and no issue is cross-referenced;
- ``<!--`` and ``-->`` get a word joiner everywhere, fences included, so no hidden trailer
  or marker can be forged;
- inline values are one line with every ASCII punctuation character backslash-escaped, so
  they hold no HTML, link, emphasis or table pipe;
- bidi controls are dropped (or shown as U+FFFD in fences), so text cannot read differently
  from what it says.

It also formats times for the people reading those comments. A naive datetime raises
``ValueError``: it is a programming error, not agent input.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

__all__ = [
    "block_text",
    "clip",
    "escape_inline",
    "format_span",
    "format_utc",
    "inert_line",
    "neutralise_markers",
    "neutralise_mentions",
    "one_line",
    "split_lines",
]

_WJ = "\u2060"  # WORD JOINER: invisible, and breaks GitHub's mention/reference/comment syntax.
_BIDI_CONTROLS = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_MENTION = re.compile(r"@(?!\u2060)")
# `#12`, `owner/repo#12` and `GH-12` link to issues and add a "mentioned" event to them.
_REFERENCE = re.compile(r"(#|\bGH-)(?=\d)", re.IGNORECASE)
_NAME_LIMIT = 100  # names, roles, ids and tool names shown outside fences
# General categories Cc, Zl and Zp (C0 and C1 controls, U+2028, U+2029) become spaces; a
# table rather than unicodedata per character, as prompts can be megabytes long.
_LINE_BREAKERS = (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)
_ONE_LINE = str.maketrans(
    dict.fromkeys(_LINE_BREAKERS, " ") | dict.fromkeys(map(ord, _BIDI_CONTROLS))
)
_SHOW_BIDI = str.maketrans(dict.fromkeys(map(ord, _BIDI_CONTROLS), "\ufffd"))


def format_utc(moment: datetime) -> str:
    """Format an aware datetime as UTC ISO 8601 to the second, e.g. 2026-11-21T20:34:04Z."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"datetime must be timezone-aware, got naive {moment.isoformat()}")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_span(span: timedelta) -> str:
    """Format a duration for a reader, e.g. "2 h 5 min"; negative spans read "0 s"."""
    seconds = max(int(span.total_seconds()), 0)
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else ""]
    parts += [f"{minutes} min" if minutes else "", f"{secs} s" if secs else ""]
    return " ".join(p for p in parts if p) or "0 s"


def neutralise_markers(text: str) -> str:
    """Break every ``<!--`` and ``-->`` with a word joiner so no hidden comment can be forged."""
    while "<!--" in text or "-->" in text:
        text = text.replace("<!--", f"<!-{_WJ}-").replace("-->", f"-{_WJ}->")
    return text


def neutralise_mentions(text: str) -> str:
    """Put a word joiner after every ``@`` and issue-reference prefix so nobody is pinged."""
    return _REFERENCE.sub(lambda m: m.group(1) + _WJ, _MENTION.sub("@" + _WJ, text))


def one_line(text: str) -> str:
    """Collapse all whitespace and drop control characters, so text stays on one line."""
    return " ".join(text.translate(_ONE_LINE).split())


def clip(text: str, limit: int) -> str:
    """Cut text to at most ``limit`` characters, ending in an ellipsis when cut."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)].rstrip() + "…"


def inert_line(text: str, *, limit: int) -> str:
    """Return untrusted text as one line that pings nobody and forges no marker, cut at limit."""
    # Not markdown-escaped: for places GitHub shows as plain text, such as an issue title.
    return clip(neutralise_mentions(neutralise_markers(one_line(text))), limit)


def escape_inline(text: str, *, limit: int = _NAME_LIMIT) -> str:
    """Return untrusted text as one line of inert markdown, cut visibly beyond ``limit``."""
    cleaned = inert_line(text, limit=limit)
    # Escaping every ASCII punctuation character is always valid CommonMark and leaves no
    # HTML, link, emphasis or table pipe; escaping after the cut leaves no dangling `\`.
    return "".join("\\" + c if c in _ASCII_PUNCTUATION else c for c in cleaned)


def block_text(text: str) -> str:
    """Normalise text shown in a fence: LF line ends, no NUL, no bidi overrides."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")
    # Bidi overrides can make a fenced line read differently from what it says.
    return text.translate(_SHOW_BIDI)


def split_lines(text: str) -> list[str]:
    """Split text into lines, taking CRLF and CR as line endings like CommonMark does."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
