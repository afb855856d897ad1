"""Drafts from an upstream model: claim the one draft a ticket may get, post it, or fail it.

A draft is a marked suggestion on the ticket's issue, never an answer: the bot's own
comments are skipped by the finder, and a draft reaches the agent only when an editor
signs its text. Rendering the draft comment is pure (:mod:`ticketing.render.drafts`).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from ticketing.clock import Clock
from ticketing.github.write_kinds import Guard
from ticketing.github.write_queue import WriteQueue
from ticketing.render.drafts import MAX_DRAFT_COMMENT, draft_digest, render_draft_comment
from ticketing.store.interface import DraftStore
from ticketing.store.model import DraftState, Ticket, TicketState

from .settings import DeskSettings

__all__ = ["Drafts"]

log = logging.getLogger(__name__)


class Drafts:
    """Keep each ticket's one draft in the store, and queue it on GitHub."""

    def __init__(
        self,
        *,
        store: DraftStore,
        followups: WriteQueue,
        settings: DeskSettings,
        clock: Clock,
    ) -> None:
        self._store = store
        self._followups = followups
        self.settings = settings
        self._clock = clock

    def claim(self, ticket: Ticket, *, stale_after: timedelta | None = None) -> bool:
        """Reserve the one draft this ticket may get; False if it has one or cannot get one.

        With ``stale_after``, a claim older than that (its process stopped mid-draft) is
        taken over.
        """
        if ticket.issue_number is None or not ticket.state.pending:
            return False
        now = self._clock()
        # In the shared store: a retry, or the same request on another replica, loses here.
        stale_before = None if stale_after is None else now - stale_after
        return self._store.claim_draft(ticket.id, now=now, stale_before=stale_before)

    def post(self, ticket: Ticket, text: str, *, model: str) -> bool:
        """Keep a claimed draft and queue it as a marked suggestion on the ticket's issue.

        The comment is sent only while the ticket still waits for an answer; a draft that is
        empty or too long for a GitHub comment is recorded as failed. Return whether it was
        queued.
        """
        number = ticket.issue_number
        if number is None:
            raise ValueError("a draft goes on the ticket's issue, and this ticket has none")
        digest = draft_digest(text)
        body = (
            render_draft_comment(
                text,
                model=model,
                digest=digest,
                ticket=self.settings.ticket_ref(ticket),
                answer_page=self.settings.page_of(ticket),
                issue_url=ticket.issue_url,
            )
            if text
            else ""
        )
        problem = (
            "the model returned no text and no tool call"
            if not text
            else f"the draft comment would have {len(body)} characters, more than GitHub takes"
            if len(body) > MAX_DRAFT_COMMENT
            else None
        )
        if problem is not None:
            self.fail(ticket, problem, model=model)
            return False
        write = self._followups.comment(
            number,
            body,
            request_id=ticket.request_id,
            only_if=Guard.ticket_in(ticket.id, {state for state in TicketState if state.pending}),
        )
        if not self._store.finish_draft(
            ticket.id,
            state=DraftState.POSTED,
            now=self._clock(),
            model=model,
            text=text,
            digest=digest,
        ):
            self._followups.cancel(write, "the draft was not claimed")
            return False
        log.info(
            "request_id=%s ticket %d: draft by model %s queued (sha256 %s)",
            ticket.request_id,
            ticket.id,
            model,
            digest,
        )
        return True

    def fail(self, ticket: Ticket, detail: str, *, model: str) -> None:
        """Record that no draft came for this ticket; it goes on waiting for people."""
        self._store.finish_draft(
            ticket.id, state=DraftState.FAILED, now=self._clock(), model=model, detail=detail
        )
