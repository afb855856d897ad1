"""The top of a ticket and of a step comment: the title, the introduction and the header table.

Pure: no I/O, no clock. The title says which model and agent ask and what about (the run's
task for AutoGPT, else the newest user message's first line); the header table says who
asks, with which model, until when. Every agent value in them is one inert line, capped
(:func:`ticketing.render.markdown.inert_line`, :func:`ticketing.render.snippets.code`), so
the header stays small whatever the request holds.
"""

from __future__ import annotations

import re
from datetime import datetime

from ticketing.render.markdown import escape_inline, format_span, format_utc, inert_line
from ticketing.render.snippets import CELL_LIMIT, code
from ticketing.request import ChatRequest

__all__ = [
    "TITLE_LIMIT",
    "agent_name",
    "render_header",
    "render_step_header",
    "render_title",
    "title_line",
]

TITLE_LIMIT = 120

_AGENT_NAME = re.compile(r"\bYou are ([^\W\d_][\w-]*(?: [^\W\d_][\w-]*){0,3})[,.]")

_METADATA_ROWS = 16  # what the OpenAI API allows; more is shown as a count
_TITLE_PART_LIMIT = 40  # model and agent in the title, so the message keeps most of it


# Metadata keys an agent may name itself under (the OpenAI API allows any 16 keys).
_AGENT_METADATA_KEYS = ("agent", "agent_name", "agent_id")


def agent_name(request: ChatRequest) -> str:
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


def _first_line(text: str) -> str:
    """Return the first line of text that holds something other than whitespace."""
    for line in text.splitlines():
        if line.strip():
            return line
    return ""


def _title_text(text: str, limit: int) -> str:
    """Return a single-line, mention-free piece of title of at most ``limit`` characters."""
    return inert_line(text, limit=limit)


def title_line(request: ChatRequest, focus: int | None, task: str | None) -> str:
    """Return what the title says: the task when the newest message is boilerplate, else it."""
    if task is not None:
        # The step instruction AutoGPT repeats says nothing; the task says what the run does.
        return _title_text(task, TITLE_LIMIT)
    if focus is None:
        return "(no messages)"
    message = request.messages[focus]
    line = _title_text(_first_line(message.content), TITLE_LIMIT)
    return line or f"({_title_text(message.role, _TITLE_PART_LIMIT)} message)"


def render_title(model: str, agent: str, line: str, *, step: int | None = None) -> str:
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


def render_header(
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


def render_step_header(
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
