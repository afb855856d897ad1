"""Agent runs in the store: which run a request continues, and the reply that links it.

The recognition itself is pure (:mod:`ticketing.threads`); this module looks up what it
needs in the store: the ticket the client said it follows, the ticket that gave a reply the
request repeats, a client's named run, its latest run for a side call.
"""

from __future__ import annotations

from ticketing.release import Release
from ticketing.request import ChatRequest
from ticketing.store.interface import TicketStore
from ticketing.store.model import ThreadStart, Ticket
from ticketing.threads import (
    continuation_fingerprints,
    is_side_call,
    named_thread_key,
    reply_fingerprint,
)

from .outcome import Outcome

__all__ = ["Runs"]


class Runs:
    """Find the run a request continues, and remember each reply so the next step finds it."""

    def __init__(self, store: TicketStore) -> None:
        self._store = store

    def thread_for(
        self, request: ChatRequest, name: str | None, *, continues: int | None = None
    ) -> ThreadStart | None:
        """Return the agent run this request continues, or None to open an issue of its own.

        ``continues`` is the ticket the client said this request follows (a Responses API
        ``previous_response_id``): its run is continued after it, whatever the messages say.
        """
        if continues is not None:
            parent = self._store.get_ticket(continues)
            if parent is not None and parent.thread_id is not None:
                return self._continue(parent.thread_id, parent)
        if name is not None:
            thread_id = self._store.thread_for_name(named_thread_key(request.client, name))
            return None if thread_id is None else self._continue(thread_id, None)
        for _, fingerprint in continuation_fingerprints(request):
            parent = self._store.ticket_for_reply(fingerprint)
            if parent is not None and parent.thread_id is not None:
                return self._continue(parent.thread_id, parent)
        if is_side_call(request):
            thread_id = self._store.latest_thread_of_client(request.client)
            return None if thread_id is None else self._continue(thread_id, None)
        return None

    def name_run(self, client: str, name: str, ticket: Ticket) -> None:
        """Point a client's thread name at the run this ticket belongs to, if it has none.

        A name already on a live run stays there: a request that could not join it (its run
        had a step waiting) opened an issue of its own, which must not take the name over.
        """
        key = named_thread_key(client, name)
        named = self._store.thread_for_name(key)
        if named is None or self._continue(named, None) is None:
            assert ticket.thread_id is not None
            self._store.name_thread(key, ticket.thread_id)

    def echoed(self, parent: Ticket, previous: ChatRequest, request: ChatRequest) -> int | None:
        """Return the index of the assistant message repeating the parent's reply, if any."""
        release = Outcome(parent, self._store.answer_for(parent.id)).release
        if release is None:
            return None
        wanted = reply_fingerprint(previous, release.content, release.tool_calls)
        for index, fingerprint in continuation_fingerprints(request):
            if fingerprint == wanted:
                return index
        return None

    def link_reply(
        self, ticket: Ticket, release: Release, request: ChatRequest | None = None
    ) -> None:
        """Remember the reply this ticket gives, so the agent's next step finds its run.

        ``request`` is the ticket's stored request when the caller has already read it.
        """
        if request is None:
            stored = self._store.request_for(ticket.id)
            if stored is None:
                return
            request = ChatRequest.from_json(stored)
        fingerprint = reply_fingerprint(request, release.content, release.tool_calls)
        self._store.link_reply(fingerprint, ticket.id)

    def _continue(self, thread_id: int, parent: Ticket | None) -> ThreadStart | None:
        """Continue the run after ``parent`` (default: its newest step), if its issue exists."""
        root = self._store.get_ticket(thread_id)
        if root is None or root.issue_number is None:
            return None
        parent = parent or self._store.newest_in_thread(thread_id)
        if parent is None:
            return None
        return ThreadStart(thread_id=thread_id, parent_id=parent.id)
