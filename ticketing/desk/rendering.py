"""A ticket as GitHub shows it: what rendering needs is read here, the rendering is pure.

The issue (step 1) or a later step's comment is rendered by :mod:`ticketing.render`; this
module reads the step's parent and run from the store first, and runs a large prompt's
rendering in a worker thread so waiting clients keep going.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ticketing.render.redact import describe_redactions, redact_request
from ticketing.render.ticket import RenderedTicket, render_step, render_ticket
from ticketing.render.tree_context import render_child_ticket
from ticketing.request import ChatRequest
from ticketing.store.interface import TicketStore
from ticketing.store.model import Ticket
from ticketing.threads import step_delta, tools_changed
from ticketing.tree import child_note

from .runs import Runs
from .settings import DeskSettings
from .tree_links import tree_context

__all__ = ["RENDER_IN_THREAD_FROM", "TicketRenderer"]

# Prompts at least this long (characters of message text) are rendered in a worker thread:
# a multi-megabyte prompt takes a fraction of a second to fence and split.
RENDER_IN_THREAD_FROM = 200_000


def _render_step_of(shown: ChatRequest, notes: tuple[str, ...], **fields: Any) -> RenderedTicket:
    """Render a step comment (a partial of this is run off the event loop for big prompts)."""
    return render_step(shown, notes=notes, **fields)


def _render_child_of(shown: ChatRequest, notes: tuple[str, ...], **fields: Any) -> RenderedTicket:
    """Render a child issue of a long run (a partial of this is run like a step's)."""
    return render_child_ticket(shown, notes=notes, **fields)


class TicketRenderer:
    """Render tickets for GitHub from the store's view of their run."""

    def __init__(self, *, store: TicketStore, runs: Runs, settings: DeskSettings) -> None:
        self._store = store
        self._runs = runs
        self.settings = settings

    def render(self, ticket: Ticket, request: ChatRequest) -> RenderedTicket:
        """Render a ticket as GitHub shows it: the issue (step 1) or its step comment."""
        return self._renderer(ticket, request)()

    async def render_off_loop(self, ticket: Ticket, request: ChatRequest) -> RenderedTicket:
        """Render a ticket; a large prompt in a worker thread, so waiting clients keep going."""
        job = self._renderer(ticket, request)
        size = sum(
            len(m.content) + sum(len(c.arguments) for c in m.tool_calls) for m in request.messages
        ) + sum(len(json.dumps(t.parameters)) + len(t.description) for t in request.tools)
        if size < RENDER_IN_THREAD_FROM:
            return job()
        # Pure work (redaction, fencing, continuations) on values read from the store here.
        return await asyncio.to_thread(job)

    def _renderer(self, ticket: Ticket, request: ChatRequest) -> Callable[[], RenderedTicket]:
        """Read what rendering needs from the store, and return the pure rendering to run."""
        # One marker per ticket, not per request: after an expiry the same request opens a
        # new ticket, which must never be matched to the old, expired issue.
        marked = replace(request, key=f"{request.key}{ticket.id:08x}")
        store = self._store
        parent = None if ticket.parent_id is None else store.get_ticket(ticket.parent_id)
        root = None if ticket.thread_id is None else store.get_ticket(ticket.thread_id)
        stored = None if parent is None else store.request_for(parent.id)
        repo = self.settings.repo
        answer_page = self.settings.answer_page
        step: Callable[[ChatRequest, tuple[str, ...]], RenderedTicket] | None = None
        # A step on an issue of its own (a child in the run's tree) is rendered as an issue:
        # the run's trimmed context, then what is new since the step it continues.
        own = ticket.own_issue
        child: Callable[[ChatRequest, tuple[str, ...]], RenderedTicket] | None = None
        if own and parent is not None and stored:
            previous = ChatRequest.from_json(stored)
            echoed = self._runs.echoed(parent, previous, request)
            child = functools.partial(
                _render_child_of,
                context=tree_context(store, self.settings, ticket),
                new_from=step_delta(previous, request, echoed=echoed).new_from,
                request_id=ticket.request_id,
                created=ticket.created_at,
                deadline=ticket.deadline,
                repo=repo,
                answer_page=answer_page,
            )
        if not own and ticket.step > 1 and parent is not None and root is not None and stored:
            assert root.issue_number is not None
            previous = ChatRequest.from_json(stored)
            echoed = self._runs.echoed(parent, previous, request)
            delta = step_delta(previous, request, echoed=echoed)
            step = functools.partial(
                _render_step_of,
                step=ticket.step,
                new_from=delta.new_from,
                changed=delta.changed,
                tools_changed=tools_changed(previous, request),
                request_id=ticket.request_id,
                created=ticket.created_at,
                deadline=ticket.deadline,
                repo=repo,
                issue_number=root.issue_number,
                since_step=parent.step,
                answer_page=answer_page,
                issue_url=root.issue_url,
            )

        def job() -> RenderedTicket:
            # Secrets in the prompt are not posted; the stored request keeps them, since
            # answers are checked against what the agent really sent.
            shown, redactions = redact_request(marked)
            note = describe_redactions(redactions)
            notes = (note,) if note else ()
            if own and root is not None:
                notes = (child_note(ticket.step, root.issue_number), *notes)
            if step is not None:
                return step(shown, notes)
            if child is not None:
                return child(shown, notes)
            return render_ticket(
                shown,
                request_id=ticket.request_id,
                created=ticket.created_at,
                deadline=ticket.deadline,
                repo=repo,
                notes=notes,
                answer_page=answer_page,
            )

        return job
