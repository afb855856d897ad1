"""What GitHub would make of rendered markdown: text outside fences, raw HTML, and pings.

The renderer's promise is that agent text can neither escape its fence, add HTML of its own,
nor mention anyone; these find any of that in a rendered body.
"""

from __future__ import annotations

import re

from ticketing.render.ticket import MARKER_PREFIX

WJ = "\u2060"  # WORD JOINER: how the renderer breaks mentions, references and "<!--"
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_OUR_TAGS = {"<details>", "</details>", "<summary>", "</summary>", MARKER_PREFIX}


def outside_fences(body: str) -> str:
    """Return the lines of a markdown body that are not inside a fenced code block."""
    kept: list[str] = []
    fence: str | None = None
    for line in body.split("\n"):
        if fence is None:
            match = _FENCE_OPEN.fullmatch(line)
            if match and (match.group(1)[0] == "~" or "`" not in match.group(2)):
                fence = match.group(1)
                continue
            kept.append(line)
        elif re.fullmatch(rf" {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*", line):
            fence = None
    return "\n".join(kept)


def raw_html(text: str) -> list[str]:
    """Return each unescaped HTML-looking tag start in text, other than the renderer's own."""
    found = []
    for match in re.finditer(r"<[A-Za-z/!?]", text):
        backslashes = len(text[: match.start()]) - len(text[: match.start()].rstrip("\\"))
        tag = text[match.start() :].split(">")[0] + ">"
        if backslashes % 2 == 0 and tag not in _OUR_TAGS and not tag.startswith(MARKER_PREFIX):
            found.append(tag)
    return found


def pings(text: str) -> list[str]:
    """Return each @mention or issue reference in text that GitHub would link."""
    return re.findall(r"@[A-Za-z0-9_-]|#\d|GH-\d", text, flags=re.IGNORECASE)
