"""**Pure**: tickets, requests and held answers as the desk API's JSON (``/desk/api/v1``).

Values in, dictionaries out: no store, no clock, no network. The handlers in
:mod:`proxy.desk_api.routes` read what these need and hand it over; the shapes are those
of the OpenAPI description (``openapi.json`` beside this module), which the tests check
every response against.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from auth.review_decision import ReviewDecision
from auth.roles import Act, Role
from ticketing.request import ChatRequest, Message
from ticketing.store.model import Candidate, DraftState, StoredDraft, Ticket, TicketState

# The states the list shows: waiting for an answer, or for reviewers.
LISTED = frozenset({TicketState.OPEN, TicketState.NEEDS_REVIEW})
# What ``state=`` may ask for: those, and the tickets that expired in the last hour.
FILTERABLE = (TicketState.OPEN, TicketState.NEEDS_REVIEW, TicketState.EXPIRED)
Markdown = Callable[[str], str]


@dataclass(frozen=True)
class ListFilter:
    """What ``GET /desk/api/v1/tickets`` keeps: a state, held-for-review or not, someone's."""

    state: TicketState | None = None
    needs_review: bool | None = None
    # The login whose tickets these are: those it may act on now (see ``mine``).
    mine: str | None = None


@dataclass(frozen=True)
class ListedTicket:
    """One ticket of the list with what its entry shows beside the ticket itself."""

    ticket: Ticket
    reference: str
    title: str
    # Who signed the answer it holds for review, if any (they cannot judge it themselves).
    held_by: str | None = None


def parse_filter(query: dict[str, str]) -> ListFilter | str:
    """Read the list's query (``state``, ``needs_review``, ``mine``); a string is an error."""
    state = None
    if query.get("state"):
        state = next((s for s in FILTERABLE if s.value == query["state"]), None)
        if state is None:
            return "state must be one of: " + ", ".join(s.value for s in FILTERABLE)
    needs_review = None
    if query.get("needs_review"):
        flag = query["needs_review"].lower()
        if flag not in {"true", "false"}:
            return "needs_review must be true or false"
        needs_review = flag == "true"
    return ListFilter(state=state, needs_review=needs_review, mine=query.get("mine") or None)


def is_mine(entry: ListedTicket, login: str, roles: frozenset[Role]) -> bool:
    """Say whether ``login`` (with ``roles``) may act on the ticket now.

    An open ticket is an editor's to answer; a held one a reviewer's to judge, unless they
    signed the answer held (nobody approves their own answer).
    """
    state = entry.ticket.state
    if state is TicketState.OPEN:
        return Role.EDITOR in roles
    if state is TicketState.NEEDS_REVIEW:
        held_by = (entry.held_by or "").lower()
        return Role.REVIEWER in roles and held_by != login.lower()
    return False


def kept(entry: ListedTicket, chosen: ListFilter, roles: frozenset[Role]) -> bool:
    """Say whether a listed ticket passes the filter (``roles``: those of ``chosen.mine``)."""
    state = entry.ticket.state
    if chosen.state is not None and state is not chosen.state:
        return False
    if chosen.needs_review is not None and (state is TicketState.NEEDS_REVIEW) != (
        chosen.needs_review
    ):
        return False
    return chosen.mine is None or is_mine(entry, chosen.mine, roles)


def list_entry(entry: ListedTicket, *, now: datetime) -> dict[str, Any]:
    """Describe a ticket for the list: number, reference, title, state, age, deadline, run."""
    ticket = entry.ticket
    in_run = ticket.thread_id is not None and (ticket.step > 1 or ticket.thread_id != ticket.id)
    return {
        "number": ticket.issue_number,
        "reference": entry.reference,
        "title": entry.title,
        "url": ticket.issue_url,
        "state": ticket.state.value,
        "needs_review": ticket.state is TicketState.NEEDS_REVIEW,
        "age": max(0, int((now - ticket.created_at).total_seconds())),
        "created_at": ticket.created_at.isoformat(),
        "deadline": ticket.deadline.isoformat() if ticket.state in LISTED else None,
        "run": ticket.thread_id if in_run or ticket.step > 1 else None,
        "step": ticket.step if in_run or ticket.step > 1 else None,
    }


def message_shape(message: Message, markdown: Markdown) -> dict[str, Any]:
    """Describe one message: role, text, the text rendered (sanitised HTML), tool calls."""
    return {
        "role": message.role,
        "name": message.name,
        "content": message.content,
        "content_html": markdown(message.content) if message.content else "",
        "tool_calls": [
            {"id": call.id, "name": call.name, "arguments": call.arguments}
            for call in message.tool_calls
        ],
        "tool_call_id": message.tool_call_id,
    }


def request_parts(request: ChatRequest | None, markdown: Markdown) -> dict[str, Any]:
    """Return the request's parts apart: the newest message, the ones before it, the tools."""
    if request is None:
        return {"newest_message": None, "conversation": [], "tools": [], "response_format": None}
    messages = [message_shape(message, markdown) for message in request.messages]
    fmt = request.response_format
    return {
        "newest_message": messages[-1] if messages else None,
        "conversation": messages[:-1],
        "tools": [
            {
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.parameters),
                "strict": tool.strict,
            }
            for tool in request.tools
        ],
        "response_format": None
        if fmt is None
        else {
            "type": fmt.type,
            "name": fmt.name,
            "schema": None if fmt.schema is None else dict(fmt.schema),
        },
    }


def review_shape(
    candidate: Candidate,
    decision: ReviewDecision,
    commands: Sequence[str],
    approvers: Iterable[str],
    markdown: Markdown,
) -> dict[str, Any]:
    """Describe an answer held for review: its text, signer, commands and the rules matched."""
    return {
        "answer_sha256": candidate.digest,
        "text": candidate.text,
        "text_html": markdown(candidate.text),
        "signer": candidate.signer,
        "comment_url": candidate.comment_url,
        "required_approvals": candidate.required,
        "approvals": sorted(approvers),
        "commands": list(commands),
        "findings": [
            {
                "rule": finding.rule,
                "command": finding.command,
                "argument": finding.argument,
                "detail": finding.detail,
            }
            for finding in decision.findings
        ],
    }


def draft_shape(draft: StoredDraft | None) -> dict[str, Any] | None:
    """Describe a posted draft (exact text to sign, unchanged or edited), or None.

    ``agent`` is the editor whose personal agent drafted it (null for the upstream model's
    draft), and ``comment_url`` the agent's draft comment.
    """
    if draft is None or draft.state is not DraftState.POSTED:
        return None
    return {
        "text": draft.text,
        "model": draft.model,
        "sha256": draft.digest,
        "agent": draft.agent,
        "comment_url": draft.comment_url,
    }


def signing_shape(ticket: Ticket, reference: str, held: Candidate | None) -> dict[str, Any]:
    """Say what a client signs here: the reference (``aud``), the acts, the judged digest."""
    if ticket.state is TicketState.OPEN:
        acts = [Act.ANSWER.value]
    elif ticket.state is TicketState.NEEDS_REVIEW and held is not None:
        acts = [Act.APPROVE.value, Act.REJECT.value]
    else:
        acts = []
    return {
        "ticket": reference,
        "acts": acts,
        "answer_sha256": None if held is None or not acts else held.digest,
    }
