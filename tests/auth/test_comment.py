"""Tests for auth.comment: normalising, rendering and splitting signed comments."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auth.comment import (
    TRAILER_PREFIX,
    normalise_text,
    render_signed_comment,
    split_signed_comment,
    text_digest,
)
from auth.errors import CommentFormatError

TOKEN = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
TRAILER = f"{TRAILER_PREFIX}{TOKEN} -->"


def test_normalising_turns_crlf_and_cr_into_lf_and_strips_the_ends() -> None:
    """Windows and old-Mac line endings and surrounding blanks do not change the text."""
    assert normalise_text("\r\n  Hello\r\nwide\rworld \n\n") == "Hello\nwide\nworld"


def test_digest_is_the_hex_sha256_of_the_normalised_utf8_text() -> None:
    """The digest matches a SHA-256 computed by hand over the UTF-8 bytes."""
    expected = hashlib.sha256("Grüße\nвсем".encode()).hexdigest()
    assert text_digest("  Grüße\r\nвсем\n") == expected


def test_rendered_comment_ends_with_a_blank_line_and_the_trailer() -> None:
    """The body is the normalised text, a blank line, and the trailer line."""
    body = render_signed_comment("  Run `ls`.\r\n", TOKEN)
    assert body == f"Run `ls`.\n\n{TRAILER}"


def test_rendered_comment_splits_back_into_its_text_and_token() -> None:
    """Splitting what was rendered gives back the text, up to the blank line, and the token."""
    assert split_signed_comment(render_signed_comment("a\n\nb", TOKEN)) == ("a\n\nb\n", TOKEN)


def test_comment_without_a_trailer_is_unsigned() -> None:
    """A plain comment splits into its whole body and no token."""
    assert split_signed_comment("Looks good to me") == ("Looks good to me", None)


def test_empty_comment_is_unsigned() -> None:
    """An empty or blank comment has no token."""
    assert split_signed_comment(" \n\t\n") == (" \n\t\n", None)


def test_trailer_with_surrounding_spaces_and_trailing_blank_lines_is_found() -> None:
    """Spaces around the trailer and blank lines after it are tolerated."""
    body = f"answer\r\n\r\n   {TRAILER}  \r\n\r\n  \n"
    assert split_signed_comment(body) == ("answer\n", TOKEN)


def test_two_trailers_are_ambiguous() -> None:
    """A comment with two trailers cannot say which text was signed."""
    with pytest.raises(CommentFormatError, match="more than one signature trailer"):
        split_signed_comment(f"first\n\n{TRAILER}\n\nsecond\n\n{TRAILER}")


def test_trailer_inside_a_quote_is_ambiguous() -> None:
    """A quoted signed comment is not the quoter's signed comment."""
    with pytest.raises(CommentFormatError, match="last line"):
        split_signed_comment(f"> answer\n>\n> {TRAILER}")


def test_quoted_trailer_above_a_real_trailer_is_ambiguous() -> None:
    """Quoting someone's signed answer above one's own trailer is refused too."""
    with pytest.raises(CommentFormatError, match="more than one"):
        split_signed_comment(f"> answer\n> {TRAILER}\n\nI agree\n\n{TRAILER}")


def test_trailer_inside_a_closed_code_block_is_ambiguous() -> None:
    """A trailer shown inside a code block is not a signature."""
    with pytest.raises(CommentFormatError, match="last line"):
        split_signed_comment(f"Example:\n```\nanswer\n{TRAILER}\n```\n")


def test_trailer_at_the_end_of_an_unclosed_code_block_is_ambiguous() -> None:
    """A trailer that renders as code, inside an unclosed fence, is refused."""
    with pytest.raises(CommentFormatError, match="inside an unclosed code block"):
        split_signed_comment(f"Example:\n~~~~ text\nanswer\n~~~\n{TRAILER}")


def test_trailer_after_a_closed_code_block_is_found() -> None:
    """A fence closed by a longer fence of the same character ends the block."""
    body = f"```tool_call\n{{}}\n````\n\n{TRAILER}"
    assert split_signed_comment(body) == ("```tool_call\n{}\n````\n", TOKEN)


def test_inline_code_with_three_backticks_is_not_a_fence() -> None:
    """A line like ```x``` is inline code, not an opening fence."""
    assert split_signed_comment(f"```x```\n\n{TRAILER}")[1] == TOKEN


def test_trailer_not_on_the_last_line_is_ambiguous() -> None:
    """Text added after the trailer was not signed, so the comment is refused."""
    with pytest.raises(CommentFormatError, match="last line"):
        split_signed_comment(f"answer\n\n{TRAILER}\nrm -rf /")


@pytest.mark.parametrize(
    "last_line",
    [
        f"{TRAILER_PREFIX}{TOKEN}-->",
        f"{TRAILER_PREFIX}{TOKEN}!! -->",
        f"{TRAILER_PREFIX}only.two -->",
        f"<!--ticketproxy-signature: {TOKEN} -->",
        f"<!-- TICKETPROXY-SIGNATURE: {TOKEN} -->",
        f"text {TRAILER}",
    ],
)
def test_last_line_that_almost_is_a_trailer_is_ambiguous(last_line: str) -> None:
    """A misspelt or garbled trailer is refused rather than treated as unsigned."""
    with pytest.raises(CommentFormatError):
        split_signed_comment(f"answer\n\n{last_line}")


def test_rendering_refuses_text_that_already_holds_a_trailer() -> None:
    """Signing a text that quotes a trailer would make an ambiguous comment."""
    with pytest.raises(CommentFormatError, match="more than one"):
        render_signed_comment(f"> {TRAILER}", TOKEN)


def test_rendering_refuses_text_that_leaves_a_code_block_open() -> None:
    """The trailer would render inside the code block, so signing such text is refused."""
    with pytest.raises(CommentFormatError, match="unclosed code block"):
        render_signed_comment("```\nls", TOKEN)


def test_rendering_refuses_a_token_that_is_not_a_compact_jws() -> None:
    """A token with spaces or two segments cannot go in a trailer."""
    with pytest.raises(CommentFormatError, match="compact JWS"):
        render_signed_comment("answer", "a.b c.d")


def test_rendering_empty_text_gives_just_the_trailer() -> None:
    """A signed note with no text is the trailer alone."""
    assert render_signed_comment(" \n", TOKEN) == TRAILER


@settings(max_examples=300, database=None, deadline=None)
@given(text=st.text())
def test_any_text_renders_to_a_comment_that_splits_back_or_is_refused(text: str) -> None:
    """Rendering either refuses the text or round-trips it exactly, normalised."""
    try:
        body = render_signed_comment(text, TOKEN)
    except CommentFormatError:
        return
    signed_text, token = split_signed_comment(body)
    assert token == TOKEN
    assert normalise_text(signed_text) == normalise_text(text)
