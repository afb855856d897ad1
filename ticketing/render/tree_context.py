"""Trimmed context for a ticket deep in a long run: the open path in full, the rest in lines.

Pure: no I/O, no clock. A child issue of a long run (see :mod:`ticketing.tree`) does not
repeat the whole conversation. Its body shows, above the step's own new messages:

- the **open path** from the run's root to it: each step on it with its question and its
  signed answer, in full (each capped);
- every **closed** subtree off that path collapsed to one line: its issue, title, who
  answered, and the digest of the signed answer linked to the answer;
- every **overdue** subtree (expired unanswered) marked stale, not inlined.

However long the run, the body stays small: only the newest ``MAX_LINES`` collapsed lines
are listed, the older ones counted in one line (the root's checklist lists every child).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from ticketing.render.fences import backtick_fence
from ticketing.render.markdown import escape_inline
from ticketing.render.ticket import RenderedTicket, render_ticket
from ticketing.request import ChatRequest

__all__ = [
    "MAX_LINES",
    "PathStep",
    "Subtree",
    "render_child_ticket",
    "render_tree_context",
]

MAX_LINES = 60
# Each question and answer on the open path is cut beyond this many characters.
_PATH_TEXT_LIMIT = 2_000
_TITLE_LIMIT = 48


@dataclass(frozen=True)
class PathStep:
    """A step on the open path from the run's root to the ticket: shown in full."""

    number: int
    step: int
    question: str
    answer: str | None
    signer: str | None


@dataclass(frozen=True)
class Subtree:
    """A child off the open path, collapsed to one line."""

    number: int
    step: int
    title: str
    state: str  # answered, expired or waiting
    signer: str | None = None
    digest: str | None = None
    answer_url: str | None = None


def _capped(text: str) -> str:
    if len(text) <= _PATH_TEXT_LIMIT:
        return text
    return text[:_PATH_TEXT_LIMIT] + f"\n… ({len(text) - _PATH_TEXT_LIMIT} more characters)"


def _fenced(text: str) -> str:
    fence = backtick_fence(text)
    return f"{fence}text\n{_capped(text)}\n{fence}"


def _path_lines(path: Sequence[PathStep]) -> list[str]:
    lines = ["**The open path from the run's root:**", ""]
    for node in path:
        lines += [f"**#{node.number}, step {node.step}**, asked:", "", _fenced(node.question), ""]
        if node.answer is not None:
            who = escape_inline(node.signer or "an editor")
            lines += [f"answered by {who}:", "", _fenced(node.answer), ""]
    return lines


def _collapsed(subtree: Subtree) -> str:
    title = escape_inline(subtree.title, limit=_TITLE_LIMIT)
    head = f"- #{subtree.number} step {subtree.step}: {title}"
    if subtree.state == "expired":
        return f"{head} · **stale** (expired unanswered)"
    if subtree.state != "answered" or subtree.digest is None:
        return f"{head} · {subtree.state}"
    who = escape_inline(subtree.signer or "an editor")
    digest = f"`sha256:{subtree.digest[:12]}`"
    linked = digest if subtree.answer_url is None else f"[{digest}](<{subtree.answer_url}>)"
    return f"{head} · {who} · {linked}"


def render_tree_context(path: Sequence[PathStep], subtrees: Sequence[Subtree]) -> str:
    """Return the trimmed context section: the open path, then the collapsed subtrees."""
    lines = ["### The run so far (trimmed)", ""]
    lines += _path_lines(path)
    if subtrees:
        shown = sorted(subtrees, key=lambda s: s.step)
        older = shown[:-MAX_LINES] if len(shown) > MAX_LINES else []
        shown = shown[len(older) :]
        lines += ["**Other sub-issues of this run, closed or stale (one line each):**", ""]
        if older:
            lines.append(
                f"- {len(older)} earlier sub-issues (#{older[0].number} to #{older[-1].number})"
                " are not listed: the root's checklist links them all"
            )
        lines += [_collapsed(subtree) for subtree in shown]
    return "\n".join(lines) + "\n"


def render_child_ticket(
    request: ChatRequest,
    *,
    context: str,
    new_from: int,
    request_id: str,
    created: datetime,
    deadline: datetime,
    repo: str,
    notes: Sequence[str] = (),
    answer_page: str | None = None,
) -> RenderedTicket:
    """Render a child issue: the trimmed context, then only the step's new messages.

    The leading system messages are kept (they say who the agent is); the messages before
    ``new_from`` are what the context stands for. The stored request keeps them all.
    """
    messages = request.messages
    system = 0
    while system < len(messages) and messages[system].role in ("system", "developer"):
        system += 1
    kept = (*messages[:system], *messages[max(new_from, system) :])
    return render_ticket(
        replace(request, messages=kept),
        request_id=request_id,
        created=created,
        deadline=deadline,
        repo=repo,
        notes=notes,
        answer_page=answer_page,
        context=context,
    )
