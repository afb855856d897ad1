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

This module holds the entry points and what every ticket has: the title, the header table
and the how-to. The rest is in smaller modules, whose public names it re-exports:
:mod:`ticketing.render.markers` (the marker lines), :mod:`ticketing.render.snippets` (fences
and inline values), :mod:`ticketing.render.layout` (the conversation's sections),
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
from dataclasses import dataclass, replace
from datetime import datetime

from ticketing.references import parse_ticket_reference, ticket_reference
from ticketing.render.autogpt_prompt import autogpt_task
from ticketing.render.continuations import collect_overflow, render_continuations
from ticketing.render.fitting import GITHUB_BODY_LIMIT, assemble, fit
from ticketing.render.layout import Locator, Section, layout, step_layout
from ticketing.render.markdown import escape_inline, format_span, format_utc, inert_line
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
from ticketing.render.snippets import CELL_LIMIT, code
from ticketing.render.template_section import Guide, gather_guide, render_guide
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

TITLE_LIMIT = 120
# A step comment is one of the bot's replies, so the answer finder never reads it as an answer.
_STEP_REPLY_MARKER = f"{REPLY_MARKER_PREFIX}step -->"
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")

_AGENT_NAME = re.compile(r"\bYou are ([^\W\d_][\w-]*(?: [^\W\d_][\w-]*){0,3})[,.]")

_METADATA_ROWS = 16  # what the OpenAI API allows; more is shown as a count
_TITLE_PART_LIMIT = 40  # model and agent in the title, so the message keeps most of it


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
) -> RenderedTicket:
    """Render a request as an issue a human can answer, within GitHub's body limit.

    ``notes`` are ticketproxy's own remarks (such as what it redacted), shown under the
    header; ``answer_page`` is the address of the answer page the how-to links to.
    """
    marker = request_marker(request.key)
    _check_times_and_repo(created, deadline, repo)
    agent = _agent_name(request)
    focus = _focus_index(request.messages)
    task = autogpt_task(request)
    title = _render_title(request.model, agent, _title_line(request, focus, task))
    top = _render_header(
        request, agent=agent, task=task, request_id=request_id, created=created, deadline=deadline
    )
    for note in notes:
        top += f"\n> **Note:** {escape_inline(note, limit=1000)}\n"
    bottom = _render_how_to(repo, format_utc(deadline), answer_page) + "\n" + marker
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
    agent = _agent_name(request)
    task = autogpt_task(request)
    new = request.messages[new_from:]
    new_focus = _focus_index(new)
    focus = None if new_focus is None else new_from + new_focus
    title = _render_title(request.model, agent, _title_line(request, focus, task), step=step)
    top = _render_step_header(
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
    page = _page_line(answer_page, issue_number)
    bottom = _render_step_how_to(step, reference, format_utc(deadline), page) + "\n" + markers
    sections = step_layout(
        request.messages, since=since, new_from=new_from, focus=focus, changed=earlier
    )
    guide = gather_guide(request)
    if guide is not None and not tools_changed and guide.table_head:
        guide = replace(guide, table_head="", rows=(), unchanged=True)
    body, continuations = _render_body(
        sections, guide, top=top, bottom=bottom, focus=focus, request_id=request_id
    )
    return RenderedTicket(title=title, body=body, continuations=continuations)


def _check_times_and_repo(created: datetime, deadline: datetime, repo: str) -> None:
    """Refuse a naive datetime or a malformed repo before anything is rendered."""
    for moment in (created, deadline):
        format_utc(moment)  # refuse a naive datetime before any arithmetic with it
    if not _REPO.fullmatch(repo):
        raise ValueError(f"repo must look like owner/name, got {repo!r}")


# --- text helpers -------------------------------------------------------------------------


def _first_line(text: str) -> str:
    """Return the first line of text that holds something other than whitespace."""
    for line in text.splitlines():
        if line.strip():
            return line
    return ""


# --- title and header ---------------------------------------------------------------------


# Metadata keys an agent may name itself under (the OpenAI API allows any 16 keys).
_AGENT_METADATA_KEYS = ("agent", "agent_name", "agent_id")


def _agent_name(request: ChatRequest) -> str:
    """Name the agent: its system prompt ("You are NAME,"), metadata, ``user``, or "agent"."""
    for match in _AGENT_NAME.finditer(request.system_prompt):
        name = match.group(1)
        if all(word[0].isupper() for word in name.split(" ")):
            return name
    for key in _AGENT_METADATA_KEYS:
        value = request.metadata.get(key, "").strip()
        if value:
            return value
    if request.user and request.user.strip():
        return request.user
    return "agent"


def _focus_index(messages: Sequence[Message]) -> int | None:
    """Return the index of the newest user message, else of the last message."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return index
    return len(messages) - 1 if messages else None


def _title_text(text: str, limit: int) -> str:
    """Return a single-line, mention-free piece of title of at most ``limit`` characters."""
    return inert_line(text, limit=limit)


def _title_line(request: ChatRequest, focus: int | None, task: str | None) -> str:
    """Return what the title says: the task when the newest message is boilerplate, else it."""
    if task is not None:
        # The step instruction AutoGPT repeats says nothing; the task says what the run does.
        return _title_text(task, TITLE_LIMIT)
    if focus is None:
        return "(no messages)"
    message = request.messages[focus]
    line = _title_text(_first_line(message.content), TITLE_LIMIT)
    return line or f"({_title_text(message.role, _TITLE_PART_LIMIT)} message)"


def _render_title(model: str, agent: str, line: str, *, step: int | None = None) -> str:
    """Render "[model] agent: line" (with ", step N" after the agent), at most 120 chars."""
    model_part = _title_text(model, _TITLE_PART_LIMIT) or "model"
    agent_part = _title_text(agent, _TITLE_PART_LIMIT) or "agent"
    if step is not None:
        agent_part += f", step {step}"
    title = f"[{model_part}] {agent_part}: {line}"
    if len(title) <= TITLE_LIMIT:
        return title
    # Cut at a word boundary when one is near, so the title does not end mid-word.
    cut = title[: TITLE_LIMIT - 1]
    space = cut.rfind(" ")
    if space >= TITLE_LIMIT * 3 // 4:
        cut = cut[:space]
    return cut.rstrip() + "…"


def _render_header(
    request: ChatRequest,
    *,
    agent: str,
    task: str | None,
    request_id: str,
    created: datetime,
    deadline: datetime,
) -> str:
    """Render the introduction and the table of who asks, with which model, until when."""
    rows: list[tuple[str, str]] = [
        ("Request id", code(request_id)),
        ("Model", code(request.model)),
        ("Agent", code(agent)),
    ]
    if task is not None:
        rows.append(("Task", escape_inline(task, limit=CELL_LIMIT)))
    rows.append(("Client", code(request.client)))
    if request.user is not None:
        rows.append(("User", code(request.user)))
    metadata = list(request.metadata.items())
    for key, value in metadata[:_METADATA_ROWS]:
        rows.append((f"Metadata {code(key)}", code(value)))
    if len(metadata) > _METADATA_ROWS:
        rows.append(("Metadata", f"{len(metadata) - _METADATA_ROWS} more entries not shown"))
    if request.max_tokens is not None:
        rows.append(("Max tokens", str(request.max_tokens)))
    waited = deadline - created
    rows.append(("Created", format_utc(created)))
    rows.append(("Deadline", f"{format_utc(deadline)} ({format_span(waited)} after creation)"))
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    who = "An agent" if agent == "agent" else f"An agent, **{escape_inline(agent)}**,"
    return (
        f"{who} is waiting for a person"
        " to answer its chat completion request. Read the newest message, then answer with a"
        " signed comment before the deadline (see *How to answer* below).\n\n"
        f"| Field | Value |\n|---|---|\n{table}\n\n"
    )


# An operator's address is linked only when it is plainly a URL (see replies._link).
_LINKABLE = re.compile(r"https?://[^\s<>()\[\]`\\]{1,300}")


def _page_line(answer_page: str | None, issue_number: int | None) -> str:
    """Say where the answer page is, which signs in the browser with the editor's own key."""
    where = "the answer page (`/desk/` on the ticketproxy server)"
    if answer_page is not None and _LINKABLE.fullmatch(answer_page):
        target = answer_page if issue_number is None else f"{answer_page}?ticket={issue_number}"
        where = f"[the answer page](<{target}>)"
    return (
        f"Or open {where}: it shows this ticket with its template filled in, signs in your"
        " browser with your own key (imported once, never sent anywhere) and posts with your"
        " own GitHub token.\n\n"
    )


def _render_how_to(repo: str, deadline: str, answer_page: str | None = None) -> str:
    """Render the instructions for answering, signing and the deadline."""
    return (
        "## How to answer\n\n"
        "Write your answer in a file, for example `answer.md`. To make a tool call instead"
        " of answering with text, the file holds one fenced block:\n\n"
        "````\n"
        "```tool_call\n"
        '{"name": "execute_shell", "arguments": {"command": "ls"}}\n'
        "```\n"
        "````\n\n"
        "Sign it with your own key and post it here in one step:\n\n"
        "```sh\n"
        "ticketproxy answer <this issue's URL> --key ~/.ticketproxy/<you>.key --file answer.md\n"
        "```\n\n"
        "or sign it, then paste the whole output as a new comment on this issue:\n\n"
        "```sh\n"
        f"ticketproxy sign --ticket {repo}#<this issue's number> --key ~/.ticketproxy/<you>.key"
        " answer.md\n"
        "```\n\n"
        f"{_page_line(answer_page, None)}"
        "Only comments signed by an editor whose key is in the keyring count; anything else"
        " here is ignored. A signed comment that is edited afterwards no longer counts: post"
        " a new signed comment instead of editing.\n\n"
        "Later steps of the same agent run arrive as *step comments* on this issue, each"
        " answered with its own `--step` (`--step 2` for step 2, and so on; each step comment"
        " gives its exact commands). This post is step 1: it needs no `--step` until a later"
        " step exists, then `--step 1`.\n\n"
        f"Answer before **{deadline}** (UTC). After the deadline the ticket expires, the agent"
        " is told that nobody answered, and later answers are refused.\n"
    )


def _render_step_header(
    request: ChatRequest,
    *,
    agent: str,
    task: str | None,
    step: int,
    since: int,
    reference: str,
    request_id: str,
    created: datetime,
    deadline: datetime,
) -> str:
    """Render the step's heading, its one-sentence introduction and its small table."""
    rows: list[tuple[str, str]] = [
        ("Ticket reference", f"`{reference}`"),
        ("Request id", code(request_id)),
        ("Model", code(request.model)),
    ]
    if task is not None:
        rows.append(("Task", escape_inline(task, limit=CELL_LIMIT)))
    rows.append(("Created", format_utc(created)))
    waited = deadline - created
    rows.append(("Deadline", f"{format_utc(deadline)} ({format_span(waited)} after creation)"))
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    who = "The agent" if agent == "agent" else f"The agent, **{escape_inline(agent)}**,"
    return (
        f"## Step {step}\n\n"
        f"{who} continues its run: read what is new since step {since}, then answer this"
        f" step with a signed comment before the deadline (see *How to answer step {step}*"
        " below).\n\n"
        f"| Field | Value |\n|---|---|\n{table}\n\n"
    )


def _render_step_how_to(step: int, reference: str, deadline: str, page: str = "") -> str:
    """Render the instructions for answering one step, whose reference names the step."""
    return (
        f"## How to answer step {step}\n\n"
        "Write your answer in `answer.md` (start from the answer template; a tool call is one"
        " `tool_call` block, as the issue's first post shows), then sign it for this step and"
        " post it on this issue in one step:\n\n"
        "```sh\n"
        f"ticketproxy answer <this issue's URL> --step {step}"
        " --key ~/.ticketproxy/<you>.key --file answer.md\n"
        "```\n\n"
        "or sign it, then paste the whole output as a new comment on this issue:\n\n"
        "```sh\n"
        f"ticketproxy sign --ticket {reference} --key ~/.ticketproxy/<you>.key answer.md\n"
        "```\n\n"
        f"{page}"
        f"The signature names step {step} (`{reference}`): an answer signed for another step"
        " does not count here. Only comments signed by an editor whose key is in the keyring"
        " count, and a signed comment edited afterwards no longer counts.\n\n"
        f"Answer before **{deadline}** (UTC). After the deadline this step expires and the"
        " agent is told that nobody answered.\n"
    )


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
