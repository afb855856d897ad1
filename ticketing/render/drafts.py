"""Drafts: an upstream model's suggested answer, posted on the ticket for an editor to sign.

Pure: no I/O, no clock. A draft is never an answer. It is posted by the bot as a clearly
marked suggestion that ends with the bot's reply marker, so the answer finder skips it like
every other bot comment; it reaches the agent only when an editor signs its text (unchanged,
or edited) in a comment of their own, which goes through the normal verification and review.

- :func:`draft_answer_text` turns an upstream completion (content and tool calls) into the
  exact answer text an editor signs: the content, then one ```` ```tool_call ```` block per
  call, which :func:`ticketing.release.prepare_release` reads back into the same calls.
- :func:`render_draft_comment` shows that text in a fence it cannot close. Upstream text is
  as untrusted as the agent's: its ``<!--`` and ``-->`` are broken with a word joiner (so
  it forges no trailer or marker), and mentions stay inside the code block, where GitHub
  pings nobody.
- :func:`parse_draft_comment` recovers the exact text from the comment and checks it against
  the sha256 in the comment's draft marker; anything that does not match is refused.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ticketing.release import TOOL_CALL_INFO
from ticketing.render.fences import backtick_fence, fenced_blocks
from ticketing.render.markdown import block_text, escape_inline, neutralise_markers, split_lines
from ticketing.render.replies import REPLY_MARKER_PREFIX, issue_url_of

__all__ = [
    "DRAFT_MARKER_PREFIX",
    "DRAFT_REPLY_KIND",
    "MAX_DRAFT_COMMENT",
    "Draft",
    "DraftCall",
    "draft_answer_text",
    "draft_digest",
    "parse_draft_comment",
    "render_draft_comment",
]

DRAFT_MARKER_PREFIX = "<!-- ticketproxy:draft sha256="
DRAFT_REPLY_KIND = "draft"
# GitHub refuses comment bodies over 65,536 characters; a longer draft is not posted.
MAX_DRAFT_COMMENT = 65_000
# `ticket=` names the ticket (an issue, or a step of an agent run) the draft was made for, so
# that a draft for one step is never signed for another.
_DRAFT_MARKER = re.compile(
    r"<!-- ticketproxy:draft sha256=([0-9a-f]{64})"
    r"(?: ticket=([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+#[1-9][0-9]{0,9}(?:/[1-9][0-9]{0,5})?))? -->"
)
_WJ = "\u2060"
_MODEL_LIMIT = 100


@dataclass(frozen=True)
class DraftCall:
    """One tool call an upstream model proposed: its name and its arguments as sent."""

    name: str
    # A JSON string, as OpenAI sends it; anything else is kept as a string for the editor.
    arguments: str


@dataclass(frozen=True)
class Draft:
    """A draft recovered from its comment: the exact text an editor signs, and its sha256."""

    text: str
    digest: str
    # The reference of the ticket it was drafted for (None in drafts from before steps).
    ticket: str | None = None


def draft_digest(text: str) -> str:
    """Return the hex sha256 of a draft's text (UTF-8), as its marker carries it."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def draft_answer_text(content: str | None, tool_calls: Sequence[DraftCall]) -> str:
    """Return the answer text an editor would sign for this completion: content, then calls.

    The text is normalised as a signature normalises it (LF line ends, no surrounding
    whitespace), with NUL and bidi controls shown as U+FFFD, so what the comment shows and
    what an editor signs are the same characters.
    """
    parts: list[str] = []
    text = block_text(content or "").strip()
    if text:
        parts.append(_close_open_fence(text))
    for call in tool_calls:
        value = {"name": call.name, "arguments": _arguments(call.arguments)}
        shown = json.dumps(value, ensure_ascii=False)
        if block_text(shown) != shown:
            # Bidi controls in a value: escaped, so the call keeps them and shows them.
            shown = json.dumps(value)
        fence = backtick_fence(shown)
        parts.append(f"{fence}{TOOL_CALL_INFO}\n{shown}\n{fence}")
    return "\n\n".join(parts).strip()


def render_draft_comment(
    text: str,
    *,
    model: str,
    digest: str,
    answer_page: str | None = None,
    ticket: str | None = None,
    issue_url: str | None = None,
    agent: str | None = None,
) -> str:
    """Return the bot comment that shows a draft as a clearly marked suggestion.

    ``digest`` must be :func:`draft_digest` of ``text``; ``answer_page`` is the desk page's
    address, when the operator gave one; ``ticket`` the reference it was drafted for;
    ``issue_url`` the address of the issue it is posted on; ``agent`` whose personal agent
    drafted it ("alice's agent"), when one did.
    """
    if digest != draft_digest(text):
        raise ValueError("the digest is not the sha256 of the draft text")
    named = "" if ticket is None else f" ticket={ticket}"
    if _DRAFT_MARKER.fullmatch(f"{DRAFT_MARKER_PREFIX}{digest}{named} -->") is None:
        raise ValueError(f"ticket must be a reference like owner/repo#12/3, got {ticket!r}")
    shown = neutralise_markers(text)
    fence = backtick_fence(shown)
    page = (
        f"the answer page ({escape_inline(answer_page, limit=300)})"
        if answer_page
        else "the answer page (`/desk/` on ticketproxy)"
    )
    issue = "<this issue's URL>" if issue_url is None else issue_url_of(issue_url)
    by = f"model **{escape_inline(model, limit=_MODEL_LIMIT)}**"
    release = (
        f"- To release it unchanged: on {page} click **Sign the draft unchanged**, or run"
        f" `ticketproxy answer {issue} --draft --key <your key>`.\n"
        f"- To edit it first: on the answer page click **Edit the draft**, or copy the text"
    )
    if agent is not None:
        by = f"**{escape_inline(agent, limit=_MODEL_LIMIT)}** with {by}"
        # Posted by the agent, not the bot: the editor names whose drafts they sign. The
        # answer page shows it too, once ticketproxy has seen it from the routed login.
        release = (
            f"- To release it unchanged: on {page} click **Sign the draft unchanged**, or run"
            f" `ticketproxy answer {issue} --draft --draft-by"
            " <the login that posted this comment> --key <your key>`.\n"
            "- To edit it first: copy the text"
        )
    return (
        f"**Suggested answer** drafted by {by}."
        " It is **NOT** an answer: nothing reaches the agent until an editor signs it, and"
        " a draft is never released without a signature.\n\n"
        f"{release}"
        f" below into a file, change it, and run `ticketproxy answer {issue}"
        " --file <file> --key <your key>`.\n\n"
        f"{fence}text\n{shown}\n{fence}\n\n"
        f"{DRAFT_MARKER_PREFIX}{digest}{named} -->\n"
        f"{REPLY_MARKER_PREFIX}{DRAFT_REPLY_KIND} -->"
    )


def parse_draft_comment(body: str) -> Draft | None:
    """Recover a draft's exact text from its comment, or None if it is not one or was altered."""
    # GitHub may give the body back with CRLF line ends or a final line break.
    lines = split_lines(body.rstrip())
    if not lines or lines[-1] != f"{REPLY_MARKER_PREFIX}{DRAFT_REPLY_KIND} -->":
        return None
    markers = [m for line in lines if (m := _DRAFT_MARKER.fullmatch(line)) is not None]
    if len(markers) != 1 or len(lines) < 2 or _DRAFT_MARKER.fullmatch(lines[-2]) is None:
        return None
    blocks = list(fenced_blocks(lines[:-2]))
    # The header holds no fence, so the draft's block is the only top-level one.
    if len(blocks) != 1 or not blocks[0].closed or blocks[0].info != "text":
        return None
    text = _restore_markers(blocks[0].body)
    digest = markers[0][1]
    if draft_digest(text) != digest:
        return None
    return Draft(text=text, digest=digest, ticket=markers[0][2])


def _restore_markers(shown: str) -> str:
    """Undo :func:`neutralise_markers`, which only ever puts a word joiner between two dashes."""
    while f"-{_WJ}-" in shown:
        shown = shown.replace(f"-{_WJ}-", "--")
    return shown


def _arguments(raw: str) -> Any:
    """Return a call's arguments as a JSON object when they are one, else the string as sent."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return raw
    # A string that is not a JSON object stays a string, and prepare_release names the problem.
    return value if isinstance(value, dict) else raw


def _close_open_fence(text: str) -> str:
    """Close a fence the model left open, so the tool calls after it stay tool calls."""
    lines = split_lines(text)
    blocks = list(fenced_blocks(lines))
    if not blocks or blocks[-1].closed:
        return text
    opening = lines[blocks[-1].line].lstrip(" ")
    fence = opening[: len(opening) - len(opening.lstrip(opening[0]))]
    return f"{text}\n{fence}"
