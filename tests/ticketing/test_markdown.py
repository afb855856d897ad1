"""Tests for ticketing.render.markdown: untrusted text made inert, times formatted for readers."""

from __future__ import annotations

import re
import sys
import unicodedata
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ticketing.render.markdown import (
    block_text,
    clip,
    escape_inline,
    format_span,
    format_utc,
    inert_line,
    neutralise_markers,
    neutralise_mentions,
    one_line,
    split_lines,
)

WJ = "\u2060"


def pings(text: str) -> list[str]:
    """Return each @mention or issue reference in text that GitHub would link."""
    return re.findall(r"@[A-Za-z0-9_-]|#\d|GH-\d", text, flags=re.IGNORECASE)


def test_mentions_and_issue_references_get_a_word_joiner() -> None:
    """@login, #12, owner/repo#12 and GH-12 no longer ping or link."""
    text = neutralise_mentions("hi @octocat, see #12, acme/x#3 and gh-7")
    assert pings(text) == []
    assert text == f"hi @{WJ}octocat, see #{WJ}12, acme/x#{WJ}3 and gh-{WJ}7"


def test_neutralising_mentions_twice_adds_no_second_joiner() -> None:
    """Text that is already neutral stays as it is."""
    once = neutralise_mentions("@a #1")
    assert neutralise_mentions(once) == once


@given(text=st.text(alphabet=st.sampled_from("<!->x"), max_size=40))
def test_no_html_comment_opener_or_closer_survives(text: str) -> None:
    """However the dashes are nested, no ``<!--`` or ``-->`` is left."""
    out = neutralise_markers(text)
    assert "<!--" not in out
    assert "-->" not in out
    assert out.replace(WJ, "") == text


def test_escape_inline_gives_one_line_of_escaped_punctuation() -> None:
    """Newlines collapse, bidi controls go, and every ASCII punctuation mark is escaped."""
    out = escape_inline("**bold**\n<b>x</b>\u202e | [l](u)")
    assert out == "\\*\\*bold\\*\\* \\<b\\>x\\<\\/b\\> \\| \\[l\\]\\(u\\)"


def test_escape_inline_cuts_long_text_with_an_ellipsis_before_escaping() -> None:
    """The cut leaves no dangling backslash, and says that text was cut."""
    out = escape_inline("a" * 9 + "." * 20, limit=10)
    assert out == "aaaaaaaaa…"
    assert escape_inline("abc.", limit=100) == "abc\\."


def test_inert_line_neutralises_without_escaping_markdown() -> None:
    """A title keeps its punctuation but pings nobody and forges no marker."""
    assert inert_line("Fix *x* @bob <!--\nnow", limit=100) == f"Fix *x* @{WJ}bob <!-{WJ}- now"


def test_one_line_and_clip_keep_short_text_whole() -> None:
    """Whitespace runs fold to one space, and text within the limit is not cut."""
    assert one_line("  a\t\nb\u2028c  ") == "a b c"
    assert clip("abc", 3) == "abc"
    assert clip("ab cd", 4) == "ab…"


def test_one_line_turns_exactly_the_control_and_separator_categories_into_spaces() -> None:
    """Every Cc, Zl and Zp character, and no other, becomes a space (bidi controls go)."""
    breakers = "".join(
        chr(c)
        for c in range(sys.maxunicode + 1)
        if unicodedata.category(chr(c)) in {"Cc", "Zl", "Zp"}
    )
    assert one_line(f"a{breakers}b") == "a b"
    kept = "".join(chr(c) for c in range(0x20, 0x3000) if chr(c) not in breakers)
    assert one_line(kept).replace(" ", "") == "".join(
        c
        for c in kept
        if not c.isspace()
        and c not in "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    )


def test_block_text_normalises_line_ends_nul_and_bidi_controls() -> None:
    """Fenced text gets LF line ends, and NUL and bidi overrides become U+FFFD."""
    assert block_text("a\r\nb\rc\x00\u202e") == "a\nb\nc\ufffd\ufffd"


def test_split_lines_takes_crlf_and_cr_as_line_ends() -> None:
    """CommonMark's three line endings split; other separators do not."""
    assert split_lines("a\r\nb\rc\nd\u2028e") == ["a", "b", "c", "d\u2028e"]


def test_format_utc_converts_to_utc_to_the_second() -> None:
    """An aware time in another zone is shown in UTC with a Z, microseconds dropped."""
    moment = datetime(2026, 11, 21, 22, 34, 4, 999, tzinfo=timezone(timedelta(hours=2)))
    assert format_utc(moment) == "2026-11-21T20:34:04Z"


def test_format_utc_refuses_a_naive_datetime() -> None:
    """A naive datetime is a programming error, so it raises rather than guess a zone."""
    with pytest.raises(ValueError, match="timezone-aware"):
        format_utc(datetime(2026, 11, 21, 20, 34, 4))  # noqa: DTZ001


@pytest.mark.parametrize(
    ("span", "shown"),
    [
        (timedelta(hours=2, minutes=5), "2 h 5 min"),
        (timedelta(days=1, seconds=1), "1 d 1 s"),
        (timedelta(0), "0 s"),
        (timedelta(seconds=-30), "0 s"),
    ],
)
def test_format_span_reads_as_days_hours_minutes_and_seconds(span: timedelta, shown: str) -> None:
    """Zero parts are left out, and a negative span reads as no time at all."""
    assert format_span(span) == shown


def test_format_utc_accepts_utc_itself() -> None:
    """UTC times are shown unchanged."""
    assert format_utc(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05Z"
