"""The issue title: what the agent is working on, as one plain line that pings nobody.

Pure: no I/O, no clock. The title says what the agent works on: for an agent run, the
run's task (:func:`ticketing.render.autogpt_prompt.autogpt_task`), else the newest user
message's first meaningful line. The model is not in it (the header table shows it); the
agent's name leads it when the agent has one. The request is redacted before it is rendered
(:mod:`ticketing.render.redact`), so the title carries no secret the body hides.

GitHub shows a title as plain text apart from code spans, so block markers (``#``, ``>``,
list bullets, fences, triple quotes) and inline markers (backticks, ``**``, ``__``, ``~~``)
are dropped; every ``@`` and ``#123`` gets a word joiner
(:func:`ticketing.render.markdown.inert_line`), so nobody is pinged and no issue is
cross-referenced. A long title is cut at a word boundary, with an ellipsis.
"""

from __future__ import annotations

import re

from ticketing.render.markdown import inert_line, split_lines
from ticketing.request import ChatRequest

__all__ = ["TITLE_LIMIT", "meaningful_line", "render_title", "title_line"]

TITLE_LIMIT = 120  # GitHub allows 256; an issue list shows about this much
_NAME_LIMIT = 40  # the agent's name, so the task keeps most of the title
_LINE_LIMIT = 1_000  # enough to cut at a word later, small enough to stay cheap
_FENCE = re.compile(r"[ \t]*(?:```|~~~)")
# Block markers at the start of a line, repeated: headings, quotes, bullets, numbered items.
_BLOCK_MARKERS = re.compile(r"(?:[ \t]*(?:#{1,6}|>|[-*+]|\d{1,9}[.)])(?=[ \t]|$))+")
_QUOTES = re.compile(r'^[ \t]*(?:"""|\'\'\')|(?:"""|\'\'\')[ \t]*$')
_INLINE_MARKERS = re.compile(r"`+|\*\*|__|~~")


def meaningful_line(text: str) -> str:
    """Return text's first line that says something, without its markdown markers."""
    for line in split_lines(text):
        if _FENCE.match(line):
            continue
        bare = _QUOTES.sub("", line)
        bare = _BLOCK_MARKERS.sub("", bare, count=1)
        bare = _INLINE_MARKERS.sub("", bare).strip()
        if any(c.isalnum() for c in bare):
            return bare
    return ""


def title_line(request: ChatRequest, focus: int | None, task: str | None) -> str:
    """Return what the title says: the run's task, else the newest message's first line."""
    if task is not None:
        line = meaningful_line(task)
        if line:
            return line
    if focus is None:
        return "(no messages)"
    message = request.messages[focus]
    return meaningful_line(message.content) or f"({message.role} message)"


def render_title(agent: str, line: str, *, step: int | None = None) -> str:
    """Render "agent: line" ("agent, step N: line"), just "line" for an unnamed agent."""
    name = inert_line(agent, limit=_NAME_LIMIT)
    if name in ("", "agent"):
        prefix = "" if step is None else f"Step {step}: "
    else:
        prefix = f"{name}: " if step is None else f"{name}, step {step}: "
    title = prefix + inert_line(line, limit=_LINE_LIMIT)
    return _cut_at_word(title, TITLE_LIMIT)


def _cut_at_word(text: str, limit: int) -> str:
    """Cut text to at most ``limit`` characters at a word boundary, ending in an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:  # a word boundary near enough; else one long word is cut
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"
