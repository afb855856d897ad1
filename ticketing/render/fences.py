"""CommonMark code fences: finding the blocks a person wrote, and writing ones text cannot close.

Pure: no I/O. Reading follows CommonMark's fenced code blocks
(https://spec.commonmark.org/0.31.2/#fenced-code-blocks): a fence is three or more
backticks or tildes, indented at most three spaces; a backtick fence's info string holds no
backtick; a block is closed by a fence of the same character at least as long, and runs to
the end of the text when it is not. Writing picks a backtick fence longer than any backtick
run in the text, so the text can never end its own block.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ticketing.render.markdown import split_lines

__all__ = [
    "FencedBlock",
    "backtick_fence",
    "fenced_blocks",
    "longest_backtick_run",
    "unwrap_json_fence",
]

_FENCE_OPEN = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")


@dataclass(frozen=True)
class FencedBlock:
    """A fenced code block: its opening line (0-based), info string and body."""

    line: int
    info: str
    body: str
    closed: bool
    end: int  # index of the closing line, or of the last line when unclosed


def fenced_blocks(lines: Sequence[str]) -> Iterator[FencedBlock]:
    """Yield the top-level fenced code blocks, so a fence inside another is only text."""
    index = 0
    while index < len(lines):
        opening = _FENCE_OPEN.fullmatch(lines[index])
        # CommonMark: a backtick fence's info string may not contain a backtick.
        if opening is None or (opening[2][0] == "`" and "`" in opening[3]):
            index += 1
            continue
        fence = opening[2]
        end = index + 1
        while end < len(lines) and not _closes(lines[end], fence):
            end += 1
        closed = end < len(lines)
        yield FencedBlock(
            line=index,
            info=opening[3].strip(" \t"),
            body="\n".join(lines[index + 1 : end]),
            closed=closed,
            end=end if closed else len(lines) - 1,
        )
        index = end + 1


def unwrap_json_fence(text: str) -> str:
    """Return the inside of text that is exactly one ```json (or bare) fenced block, else text."""
    lines = split_lines(text)
    blocks = list(fenced_blocks(lines))
    if len(blocks) != 1:
        return text
    block = blocks[0]
    whole = block.line == 0 and block.closed and block.end == len(lines) - 1
    if whole and block.info.lower() in {"", "json"}:
        return block.body.strip()
    return text


def longest_backtick_run(text: str) -> int:
    """Return the length of the longest run of backticks in text (0 when there is none)."""
    # "a run of k backticks occurs" holds for every k up to the longest run and for none
    # after it, so a doubling then a binary search with C-speed substring tests finds it in
    # O(log k) scans; listing every run with a regex was most of the time spent rendering a
    # multi-megabyte prompt.
    if "`" not in text:
        return 0
    low, high = 1, 2
    while "`" * high in text:
        low, high = high, high * 2
    # The longest run is at least `low` and shorter than `high`.
    while high - low > 1:
        middle = (low + high) // 2
        if "`" * middle in text:
            low = middle
        else:
            high = middle
    return low


def backtick_fence(text: str) -> str:
    """Return a backtick fence, three or longer, that no backtick run in text can close."""
    return "`" * max(3, longest_backtick_run(text) + 1)


def _closes(line: str, fence: str) -> bool:
    """Return whether a line closes a block opened with ``fence``."""
    closing = _FENCE_CLOSE.fullmatch(line)
    return closing is not None and closing[1][0] == fence[0] and len(closing[1]) >= len(fence)
