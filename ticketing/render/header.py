"""The top of a ticket and of a step comment: the agent's name, the introduction, the table.

Pure: no I/O, no clock. The header table says who asks, with which model, until when (the
title, :mod:`ticketing.render.title`, says what about). Every agent value in it is one inert
line, capped (:func:`ticketing.render.markdown.inert_line`,
:func:`ticketing.render.snippets.code`), so the header stays small whatever the request holds.
"""

from __future__ import annotations

import re
from datetime import datetime

from auth.logins import is_valid_login
from ticketing.render.markdown import escape_inline, format_span, format_utc
from ticketing.render.snippets import CELL_LIMIT, code
from ticketing.request import ChatRequest

__all__ = ["agent_name", "render_header", "render_step_header"]

_AGENT_NAME = re.compile(r"\bYou are ([^\W\d_][\w-]*(?: [^\W\d_][\w-]*){0,3})[,.]")

_METADATA_ROWS = 16  # what the OpenAI API allows; more is shown as a count


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
    asked = [f"@{login}" for login in request.addressed if is_valid_login(login)]
    if asked:
        # Keyring logins the front resolved (never agent text): mentioning them is the point.
        rows.append(("Asked of", " ".join(asked)))
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
