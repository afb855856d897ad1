"""Render a chat request into the GitHub issue a human editor reads and answers.

Pure: no I/O, no clock. Everything the agent sends (messages, names, ``user``, metadata,
tool calls, even the model name) is untrusted, so the renderer guarantees that it:

- never pings anyone or cross-references another issue: outside code fences a word joiner
  (U+2060) follows every ``@``, and every ``#`` or ``GH-`` that precedes a digit;
- never escapes its code fence: each fence is longer than the longest backtick run inside;
- never appears as raw HTML or markdown: outside fences it is backslash-escaped, one line;
- never forges a hidden trailer or marker: ``<!--`` and ``-->`` get a word joiner everywhere,
  fences included, so the only HTML comment in a body is the renderer's own request marker;
- never pushes the body or a comment over GitHub's limit, and never cuts silently.

This module holds the entry points, which put a ticket together. Its parts are in smaller
modules, and it re-exports the names callers need: :mod:`ticketing.render.title` (the
title), :mod:`ticketing.render.header` (the header table), :mod:`ticketing.render.how_to`
(the *How to answer* section), :mod:`ticketing.render.markers` (the marker lines),
:mod:`ticketing.render.snippets` (fences and inline values),
:mod:`ticketing.render.layout` (the conversation's sections),
:mod:`ticketing.render.template_section` (the answer template),
:mod:`ticketing.render.fitting` (fitting the body) and :mod:`ticketing.render.continuations`
(the comments that hold the rest).

:func:`render_step` renders a later step of the same agent run as a *step comment* on the
run's issue, showing only what is new; its ticket reference names the step (``#12/3``).

Values this module refuses (a naive datetime, a key that is not hex, a malformed repo name)
raise ``ValueError``: they are programming errors, not agent input.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ticketing.references import parse_ticket_reference, ticket_reference
from ticketing.render.autogpt_prompt import autogpt_task
from ticketing.render.continuations import collect_overflow, render_continuations
from ticketing.render.fitting import GITHUB_BODY_LIMIT, assemble, fit
from ticketing.render.header import agent_name, render_header, render_step_header
from ticketing.render.how_to import page_line, render_how_to, render_step_how_to
from ticketing.render.layout import Locator, Section, layout, step_layout
from ticketing.render.markdown import escape_inline, format_utc
from ticketing.render.markers import (
    MARKER_PREFIX,
    STEP_MARKER_PREFIX,
    find_request_marker,
    find_step_marker,
    find_step_number,
    request_marker,
    step_marker,
)
from ticketing.render.replies import REPLY_MARKER_PREFIX
from ticketing.render.template_section import Guide, gather_guide, render_guide
from ticketing.render.templates import offers_tools
from ticketing.render.title import TITLE_LIMIT, render_title, title_line
from ticketing.request import ChatRequest, Message

__all__ = [
    "GITHUB_BODY_LIMIT",
    "MARKER_PREFIX",
    "STEP_MARKER_PREFIX",
    "TITLE_LIMIT",
    "RenderedTicket",
    "find_request_marker",
    "find_step_marker",
    "find_step_number",
    "parse_ticket_reference",
    "render_step",
    "render_ticket",
    "request_marker",
    "step_marker",
    "ticket_reference",
]

# A step comment is one of the bot's replies, so the answer finder never reads it as an answer.
_STEP_REPLY_MARKER = f"{REPLY_MARKER_PREFIX}step -->"
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class RenderedTicket:
    """The title and markdown body of a ticket, and the comments that continue its body.

    ``continuations`` are posted in order right after the body; each holds, in full, text
    the body had to shorten or leave out, and ends with a bot-reply marker line.
    """

    title: str
    body: str
    continuations: tuple[str, ...] = ()


def render_ticket(
    request: ChatRequest,
    *,
    request_id: str,
    created: datetime,
    deadline: datetime,
    repo: str,
    notes: Sequence[str] = (),
    answer_page: str | None = None,
    context: str = "",
) -> RenderedTicket:
    """Render a request as an issue a human can answer, within GitHub's body limit.

    ``notes`` are ticketproxy's own remarks (such as what it redacted), shown under the
    header; ``answer_page`` is the address of the answer page the how-to links to;
    ``context`` is markdown ticketproxy rendered (a long run's trimmed context) shown
    after the notes.
    """
    marker = request_marker(request.key)
    _check_times_and_repo(created, deadline, repo)
    agent = agent_name(request)
    focus = _focus_index(request.messages)
    task = autogpt_task(request)
    title = render_title(agent, title_line(request, focus, task))
    top = render_header(
        request, agent=agent, task=task, request_id=request_id, created=created, deadline=deadline
    )
    for note in notes:
        top += f"\n> **Note:** {escape_inline(note, limit=1000)}\n"
    if context:
        top += f"\n{context}"
    tools = offers_tools(request)
    bottom = render_how_to(repo, format_utc(deadline), answer_page, tools=tools) + "\n" + marker
    sections = layout(request.messages, focus)
    body, continuations = _render_body(
        sections, gather_guide(request), top=top, bottom=bottom, focus=focus, request_id=request_id
    )
    return RenderedTicket(title=title, body=body, continuations=continuations)


def render_step(
    request: ChatRequest,
    *,
    step: int,
    new_from: int,
    changed: Sequence[int],
    tools_changed: bool,
    request_id: str,
    created: datetime,
    deadline: datetime,
    repo: str,
    issue_number: int,
    notes: Sequence[str] = (),
    since_step: int | None = None,
    answer_page: str | None = None,
    issue_url: str | None = None,
) -> RenderedTicket:
    """Render a later step of an agent run as a comment on the run's issue.

    ``messages[new_from:]`` are new since step ``since_step`` (default: the step before)
    and shown open; ``changed`` holds the indices, before ``new_from``, of messages that
    differ from that step's request, shown collapsed. The tool table is shown only when
    ``tools_changed``. (A step may follow an earlier step than the one before it: an
    agent's side call can come in between.)
    """
    if isinstance(step, bool) or step < 2:
        raise ValueError(f"step must be 2 or more (step 1 is the issue itself), got {step!r}")
    since = step - 1 if since_step is None else since_step
    if isinstance(since, bool) or not 1 <= since < step:
        raise ValueError(f"since_step must be 1 to {step - 1}, got {since_step!r}")
    reference = ticket_reference(repo, issue_number, step)
    markers = f"{_STEP_REPLY_MARKER}\n{step_marker(request.key, step)}"
    _check_times_and_repo(created, deadline, repo)
    count = len(request.messages)
    if not 0 <= new_from <= count:
        raise ValueError(f"new_from must be within 0..{count}, got {new_from}")
    earlier = sorted(set(changed))
    if any(not 0 <= index < new_from for index in earlier):
        raise ValueError(f"changed must hold indices below new_from {new_from}, got {changed!r}")
    agent = agent_name(request)
    task = autogpt_task(request)
    new = request.messages[new_from:]
    new_focus = _focus_index(new)
    focus = None if new_focus is None else new_from + new_focus
    title = render_title(agent, title_line(request, focus, task), step=step)
    top = render_step_header(
        request,
        agent=agent,
        task=task,
        step=step,
        since=since,
        reference=reference,
        request_id=request_id,
        created=created,
        deadline=deadline,
    )
    for note in notes:
        top += f"\n> **Note:** {escape_inline(note, limit=1000)}\n"
    page = page_line(answer_page, issue_number)
    how_to = render_step_how_to(
        step,
        reference,
        format_utc(deadline),
        page,
        issue_url=issue_url,
        tools=offers_tools(request),
    )
    bottom = how_to + "\n" + markers
    sections = step_layout(
        request.messages, since=since, new_from=new_from, focus=focus, changed=earlier
    )
    guide = gather_guide(request, table_in_first_post=not tools_changed)
    body, continuations = _render_body(
        sections, guide, top=top, bottom=bottom, focus=focus, request_id=request_id
    )
    return RenderedTicket(title=title, body=body, continuations=continuations)


def ticket_title(request: ChatRequest, *, step: int = 1) -> str:
    """Return a ticket's title alone, cheaply: the agent and its newest question (pure).

    For lists of tickets; it is the issue's title for step 1, and close to a step's.
    """
    agent = agent_name(request)
    focus = _focus_index(request.messages)
    line = title_line(request, focus, autogpt_task(request))
    return render_title(agent, line, step=step if step > 1 else None)


def _check_times_and_repo(created: datetime, deadline: datetime, repo: str) -> None:
    """Refuse a naive datetime or a malformed repo before anything is rendered."""
    for moment in (created, deadline):
        format_utc(moment)  # refuse a naive datetime before any arithmetic with it
    if not _REPO.fullmatch(repo):
        raise ValueError(f"repo must look like owner/name, got {repo!r}")


def _focus_index(messages: Sequence[Message]) -> int | None:
    """Return the index of the newest user message, else of the last message."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return index
    return len(messages) - 1 if messages else None


# --- the body and its continuations -------------------------------------------------------


def _render_body(
    sections: Sequence[Section],
    guide: Guide | None,
    *,
    top: str,
    bottom: str,
    focus: int | None,
    request_id: str,
) -> tuple[str, tuple[str, ...]]:
    """Return the body within GitHub's limit and the continuation comments for its rest."""
    plan, cut = fit(sections, guide, top=top, bottom=bottom, focus=focus)
    overflow = collect_overflow(sections, plan, guide, cut)
    comments, spans = render_continuations(overflow, request_id=request_id)
    # The real continuation numbers are never wider than the placeholder the plan was
    # sized with, so the body only gets shorter here.
    where = Locator(spans)
    guide_text = render_guide(guide, cut, where)
    body = assemble(sections, plan, top=top, bottom=guide_text + bottom, where=where)
    if len(body) > GITHUB_BODY_LIMIT:
        # The header, guide notes and how-to are bounded (every agent value in them is
        # capped), so this means a bug in the renderer, not an unlucky request.
        raise RuntimeError(f"ticket body is {len(body)} characters even after shortening")
    return body, comments
