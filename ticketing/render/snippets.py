"""The two ways the renderer shows a value: a code fence it cannot close, or inline.

Pure: no I/O. The escaping is :mod:`ticketing.render.markdown`'s, which the bot's replies share;
fence lengths come from :mod:`ticketing.render.fences`. ``<!--`` and ``-->`` get a word joiner
inside fences too, so agent text never forges a hidden marker. Internal to the renderer:
:mod:`ticketing.render.ticket` re-exports what callers use.
"""

from __future__ import annotations

import re

from ticketing.render.fences import backtick_fence
from ticketing.render.markdown import escape_inline, neutralise_markers

# A code span is kept for values that need no escaping at all (model ids, request ids).
_PLAIN_CODE = re.compile(r"[A-Za-z0-9._:+/=-]{1,100}")

CELL_LIMIT = 300  # one value in the header table


def fence(text: str, info: str = "text") -> str:
    """Wrap text in a code fence it cannot close: longer than any backtick run inside."""
    text = neutralise_markers(text)
    ticks = backtick_fence(text)
    return f"{ticks}{info}\n{text}\n{ticks}\n"


def code(value: str) -> str:
    """Show a value as inline code when it is plainly safe, else as escaped text."""
    if _PLAIN_CODE.fullmatch(value):
        return f"`{value}`"
    return escape_inline(value, limit=CELL_LIMIT)
