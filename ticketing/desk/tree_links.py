"""Runs as trees in the desk: where a child issue is linked, and the root's checklist.

Which step opens as a child and under which parent is decided by :mod:`ticketing.tree`
(pure); this module reads the run from the store and queues the writes: the link (checked
on GitHub before it is sent, so never twice) and the root's checklist (coalesced: a newer
checklist replaces one not yet sent).
"""

from __future__ import annotations

from ticketing.github.write_queue import WriteQueue
from ticketing.store.interface import TicketStore
from ticketing.store.model import Ticket, TicketState
from ticketing.tree import MAX_CHILDREN, ChildLine, child_slot, first_child_step, render_task_list

from .settings import DeskSettings

__all__ = ["child_state", "parent_issue", "queue_checklist"]

_STATES = {
    TicketState.CREATING: "waiting",
    TicketState.OPEN: "waiting",
    TicketState.NEEDS_REVIEW: "waiting for review",
    TicketState.ANSWERED: "answered",
    TicketState.DELIVERED: "answered",
    TicketState.EXPIRED: "expired",
}


def child_state(ticket: Ticket) -> ChildLine:
    """Return how the root's checklist shows a child: its state, checked once closed."""
    assert ticket.issue_number is not None
    closed = ticket.state in (TicketState.DELIVERED, TicketState.EXPIRED)
    return ChildLine(ticket.issue_number, ticket.step, _STATES[ticket.state], closed)


def parent_issue(store: TicketStore, settings: DeskSettings, ticket: Ticket) -> int:
    """Return the issue a child step is linked under: the root, or a child of an earlier block."""
    root = store.get_ticket(ticket.thread_id or ticket.id)
    assert root is not None
    assert root.issue_number is not None
    slot = child_slot(ticket.step, settings.tree_after_steps)
    parent_step = None if slot is None else slot.parent_step(settings.tree_after_steps)
    if parent_step is None:
        return root.issue_number
    parent = store.ticket_at_step(root.id, parent_step)
    if parent is None or parent.issue_number is None or not parent.own_issue:
        # The block's parent never got an issue of its own: the root takes the child.
        return root.issue_number
    return parent.issue_number


def queue_checklist(
    store: TicketStore, followups: WriteQueue, settings: DeskSettings, ticket: Ticket
) -> None:
    """Queue the root's checklist of its direct children again, if ``ticket`` is one."""
    if not ticket.own_issue or ticket.thread_id is None:
        return
    slot = child_slot(ticket.step, settings.tree_after_steps)
    if slot is not None and slot.parent_index is not None:
        return  # a grandchild: the root lists only its own children
    root = store.get_ticket(ticket.thread_id)
    if root is None or root.issue_number is None:
        return
    first = first_child_step(settings.tree_after_steps)
    children = store.own_issue_steps(root.id, first, first + MAX_CHILDREN - 1)
    followups.task_list(
        root.issue_number, render_task_list([child_state(child) for child in children])
    )
