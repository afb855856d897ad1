"""The GitHub writes the queue holds: their kinds and guards, and how each is stored and sent.

A queued write is a row whose ``payload`` is JSON: the write's own data, the request it is
about (for log lines) and, for a write that follows a change of ticket state, its
:class:`Guard`. The queue's worker reads it back with :func:`guard_failure` and
:func:`perform_write`.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ticketing.github.interface import GitHubWrites
from ticketing.render.agent_notices import render_dispatch_failed_notice
from ticketing.store.interface import TicketStore
from ticketing.store.model import QueuedWrite, TicketState


class WriteKind(StrEnum):
    """What a queued write does on GitHub."""

    COMMENT = "comment"
    SET_LABELS = "set_labels"
    CLOSE = "close"
    LOCK = "lock"
    REACT = "react"
    REOPEN = "reopen"
    # Runs as trees (ticketing.tree): a child issue linked under its parent, and the root's
    # checklist of its children rewritten in its body.
    LINK_SUB_ISSUE = "link_sub_issue"
    TASK_LIST = "task_list"
    # Start an editor's personal agent: a workflow_dispatch on another repository (its fork).
    DISPATCH = "dispatch"


# A refusal (a 404: the fork's workflow not pushed yet, or Actions not enabled on it yet) is
# tried this many times in all before it is given up; other kinds give up at the first.
DISPATCH_REFUSED_ATTEMPTS = 3


@dataclass(frozen=True)
class Guard:
    """Send a write only if, when its turn comes, its ticket is in one of ``states``."""

    ticket_id: int
    states: frozenset[TicketState]
    # Also require that no later step of the agent run has been opened since: an issue's
    # labels and open/closed state belong to its newest step.
    newest_step: bool = False

    @classmethod
    def ticket_in(
        cls, ticket_id: int, states: Collection[TicketState], *, newest_step: bool = False
    ) -> Guard:
        """Return a guard on ticket ``ticket_id`` being in one of ``states``."""
        return cls(ticket_id=ticket_id, states=frozenset(states), newest_step=newest_step)


class Unsendable(Exception):
    """A queued row this version cannot send (unknown kind, malformed payload)."""


def encode_write(data: dict[str, Any], request_id: str | None, only_if: Guard | None) -> str:
    """Serialise a write's data with the request it is about and its guard."""
    if request_id is not None:
        # Only for log lines: a write about a request names it.
        data = {**data, "request_id": request_id}
    if only_if is not None:
        data = {
            **data,
            "only_if": {
                "ticket_id": only_if.ticket_id,
                "states": sorted(only_if.states),
                "newest_step": only_if.newest_step,
            },
        }
    return json.dumps(data, ensure_ascii=False, sort_keys=True)


def describe_write(write: QueuedWrite) -> str:
    """Name a queued write for log lines, with the request it is about."""
    try:
        request_id = json.loads(write.payload).get("request_id")
    except (ValueError, AttributeError):
        request_id = None
    prefix = f"request_id={request_id} " if request_id else ""
    return f"{prefix}GitHub write {write.id} ({write.kind} on issue #{write.issue_number})"


def guard_failure(store: TicketStore, guard: Any) -> str | None:
    """Return why a write with this stored guard must not be sent, or None to send it."""
    if guard is None:
        return None
    ticket_id = int(guard["ticket_id"])
    ticket = store.get_ticket(ticket_id)
    if ticket is None:
        return f"ticket {ticket_id} does not exist"
    if ticket.state.value not in guard["states"]:
        return f"ticket {ticket_id} is {ticket.state.value}, not {'/'.join(guard['states'])}"
    # A child issue holds one step only: later steps are on other issues.
    if guard.get("newest_step") and ticket.thread_id is not None and not ticket.own_issue:
        newest = store.newest_in_thread(ticket.thread_id)
        # A newer step on a child issue of its own leaves this issue's state to this step.
        if newest is not None and newest.id != ticket.id and not newest.own_issue:
            return f"ticket {ticket_id} is step {ticket.step}; step {newest.step} came since"
    return None


def _labels(data: dict[str, Any]) -> list[str] | None:
    """Return the labels a close or reopen also sets (None: rows queued without any)."""
    labels = data.get("labels")
    return None if labels is None else [str(label) for label in labels]


async def perform_write(
    github: GitHubWrites, write: QueuedWrite, data: dict[str, Any], *, might_have_sent: bool
) -> None:
    """Send one queued write to GitHub; raise Unsendable if this version cannot."""
    try:
        number = write.issue_number
        if write.kind == WriteKind.COMMENT:
            body = str(data["body"])
            await github.post_comment(number, body, might_have_sent=might_have_sent)
        elif write.kind == WriteKind.SET_LABELS:
            await github.set_labels(number, [str(label) for label in data["labels"]])
        elif write.kind == WriteKind.CLOSE:
            await github.close_issue(number, labels=_labels(data))
        elif write.kind == WriteKind.LOCK:
            await github.lock_issue(number)
        elif write.kind == WriteKind.REACT:
            await github.react(int(data["comment_id"]), str(data["content"]))
        elif write.kind == WriteKind.REOPEN:
            await github.reopen_issue(number, labels=_labels(data))
        elif write.kind == WriteKind.DISPATCH:
            inputs = {str(name): str(value) for name, value in dict(data["inputs"]).items()}
            await github.dispatch_workflow(
                str(data["repository"]), str(data["workflow"]), ref=str(data["ref"]), inputs=inputs
            )
        elif write.kind == WriteKind.LINK_SUB_ISSUE:
            await github.link_sub_issue(number, int(data["child"]))
        elif write.kind == WriteKind.TASK_LIST:
            await github.replace_issue_section(number, str(data["section"]))
        else:
            raise Unsendable(f"unknown write kind {write.kind!r} (from a newer ticketproxy?)")
    except (ValueError, KeyError, TypeError) as exc:
        raise Unsendable(f"malformed queued write: {type(exc).__name__}: {exc}") from exc


def refused_attempts(kind: str) -> int:
    """Return how many times a write of ``kind`` is tried when GitHub refuses it outright."""
    return DISPATCH_REFUSED_ATTEMPTS if kind == WriteKind.DISPATCH else 1


def abandon_notice(
    write: QueuedWrite, reason: str
) -> tuple[dict[str, Any], str | None, Guard | None] | None:
    """Return the comment that tells a ticket a write was given up, if its kind has one.

    A dispatch given up means no draft will come from the editor's agent: the ticket says
    so (while it still waits), as the log does. Other writes are bookkeeping: logged only.
    """
    if write.kind != WriteKind.DISPATCH:
        return None
    try:
        data = json.loads(write.payload)
        agent = str(data["agent"])
        guard = data.get("only_if")
        only_if = (
            None
            if guard is None
            else Guard.ticket_in(int(guard["ticket_id"]), [TicketState(s) for s in guard["states"]])
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    body = render_dispatch_failed_notice(agent=agent, reason=reason)
    return {"body": body}, data.get("request_id"), only_if
