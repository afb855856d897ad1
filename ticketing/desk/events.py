"""What happened to tickets, told in-process to whoever listens (the desk API's event stream).

The desk already tells its own waiters and the other replicas that a ticket changed; this
is the seam beside those wake-ups for views: :meth:`DeskEvents.changed` reads the ticket's
state afresh and hands a :class:`DeskEvent` to every listener, once per state. A ticket
opened, answered, held for review, delivered or expired, here or on another replica (the
:class:`~ticketing.desk.wakeups.Listener` feeds the same call), reaches every listener
without anyone polling the store. A listener must be quick and must not raise; one that
does is logged and kept.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from ticketing.store.interface import TicketStore
from ticketing.store.model import Ticket, TicketState

__all__ = ["DeskEvent", "DeskEvents", "EventKind", "event_kind"]

log = logging.getLogger(__name__)

# How many tickets' last told states are remembered, so a repeat is not told twice.
_REMEMBERED = 4096


class EventKind(StrEnum):
    """The SSE event names of the desk API: what happened to a ticket."""

    OPENED = "ticket.opened"
    ANSWERED = "ticket.answered"
    HELD = "ticket.held_for_review"
    DELIVERED = "ticket.delivered"
    EXPIRED = "ticket.expired"


_KINDS = {
    TicketState.OPEN: EventKind.OPENED,
    TicketState.ANSWERED: EventKind.ANSWERED,
    TicketState.NEEDS_REVIEW: EventKind.HELD,
    TicketState.DELIVERED: EventKind.DELIVERED,
    TicketState.EXPIRED: EventKind.EXPIRED,
}


def event_kind(state: TicketState) -> EventKind | None:
    """Return the event a ticket reaching ``state`` makes; None while it is being created."""
    return _KINDS.get(state)


@dataclass(frozen=True)
class DeskEvent:
    """One ticket reaching a state: which ticket, its issue and step, and what happened."""

    kind: EventKind
    ticket: Ticket


Listener = Callable[[DeskEvent], None]


class DeskEvents:
    """Listeners of ticket changes, told once per state a ticket reaches."""

    def __init__(self, store: TicketStore) -> None:
        self._store = store
        self._listeners: list[Listener] = []
        self._told: OrderedDict[int, TicketState] = OrderedDict()

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Add a listener; return the call that removes it."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    def changed(self, ticket_id: int) -> None:
        """Tell the listeners what ticket ``ticket_id`` became, unless told before."""
        if not self._listeners:
            return
        try:
            ticket = self._store.get_ticket(ticket_id)
        except Exception:
            # A view misses one refresh; the life cycle that called us must not fail for it.
            log.exception("could not read ticket %d for the desk's event stream", ticket_id)
            return
        if ticket is None or ticket.issue_number is None:
            return
        kind = event_kind(ticket.state)
        if kind is None or self._told.get(ticket_id) is ticket.state:
            return
        self._told[ticket_id] = ticket.state
        self._told.move_to_end(ticket_id)
        while len(self._told) > _REMEMBERED:
            self._told.popitem(last=False)
        event = DeskEvent(kind, ticket)
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                log.exception("a listener of the desk's events failed")
