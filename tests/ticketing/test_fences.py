"""Tests for ticketing.render.fences: reading the fences people write, writing unbreakable ones."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ticketing.render.fences import (
    FencedBlock,
    backtick_fence,
    fenced_blocks,
    longest_backtick_run,
    unwrap_json_fence,
)
from ticketing.render.markdown import split_lines


def blocks(text: str) -> list[FencedBlock]:
    """Return the top-level fenced blocks of text."""
    return list(fenced_blocks(split_lines(text)))


def test_backtick_and_tilde_blocks_are_found_with_their_info_and_body() -> None:
    """Each block reports its opening line, trimmed info string, body and closing line."""
    found = blocks("intro\n```tool_call \n{}\n```\n\n  ~~~~ json\na\nb\n~~~~~\n")
    assert found == [
        FencedBlock(line=1, info="tool_call", body="{}", closed=True, end=3),
        FencedBlock(line=5, info="json", body="a\nb", closed=True, end=8),
    ]


@pytest.mark.parametrize("closing", ["~~~", "``", "```` x", "    ````"])
def test_only_a_fence_of_the_same_character_at_least_as_long_closes_a_block(
    closing: str,
) -> None:
    """Tildes, shorter runs, trailing text and four-space indents do not close ````."""
    (block,) = blocks(f"````\nbody\n{closing}\n")
    assert not block.closed
    assert block.body == f"body\n{closing}\n"


def test_unclosed_block_runs_to_the_end_of_the_text() -> None:
    """An unclosed block ends at the last line, and says it is not closed."""
    (block,) = blocks("```tool_call\n{}\nmore")
    assert (block.closed, block.end, block.body) == (False, 2, "{}\nmore")


def test_fence_inside_a_longer_fence_is_only_text() -> None:
    """A ```tool_call inside a ```` block is part of that block's body, not a block itself."""
    found = blocks("````\n```tool_call\n{}\n```\n````")
    assert [(b.info, b.body) for b in found] == [("", "```tool_call\n{}\n```")]


def test_backtick_fence_whose_info_holds_a_backtick_opens_no_block() -> None:
    """CommonMark: ```a`b is a paragraph with a code span, not a fence."""
    assert blocks("```a`b\ntext\n``") == []


@pytest.mark.parametrize("info", ["json", "JSON", ""])
def test_text_that_is_one_json_or_bare_block_is_unwrapped(info: str) -> None:
    """The body of a single ```json (or bare) block is returned, stripped."""
    assert unwrap_json_fence(f"```{info}\r\n  {{}}\r\n```") == "{}"


@pytest.mark.parametrize(
    "text",
    ["Here:\n```json\n{}\n```", "```json\n{}\n```\n```json\n{}\n```", "```python\n{}\n```"],
    ids=["prose-around", "two-blocks", "other-language"],
)
def test_text_that_is_not_exactly_one_json_block_is_left_alone(text: str) -> None:
    """Prose around the block, a second block, or another language keeps the text as it is."""
    assert unwrap_json_fence(text) == text


def test_longest_backtick_run_counts_the_longest_run() -> None:
    """Runs are counted separately, and text without backticks has none."""
    assert longest_backtick_run("a ` b ``` c ``") == 3
    assert longest_backtick_run("none") == 0


@given(text=st.text(alphabet=st.sampled_from("`~ \nab"), max_size=60))
def test_backtick_fence_holds_any_text_it_was_chosen_for(text: str) -> None:
    """Text fenced with its backtick_fence reads back as exactly one block with that body."""
    fence = backtick_fence(text)
    assert len(fence) >= 3
    assert blocks(f"{fence}text\n{text}\n{fence}") == [
        FencedBlock(0, "text", text, closed=True, end=len(split_lines(text)) + 1)
    ]
