"""Runs as trees in the desk: where a child is linked, the root's checklist, a child's context.

Which step opens as a child and under which parent is decided by :mod:`ticketing.tree`
(pure); this module reads the run from the store and queues the writes: the link (checked
on GitHub before it is sent, so never twice) and the root's checklist (coalesced: a newer
checklist replaces one not yet sent).
"""

from __future__ import annotations

from ticketing.github.write_kinds import WriteKind
from ticketing.github.write_queue import WriteQueue
from ticketing.render.redact import redact_request
from ticketing.render.tree_context import PathStep, Subtree, render_tree_context
from ticketing.request import ChatRequest
from ticketing.store.interface import TicketStore
from ticketing.store.model import Ticket, TicketState
from ticketing.tree import MAX_CHILDREN, ChildLine, child_slot, first_child_step, render_task_list

from .settings import DeskSettings

__all__ = ["child_state", "parent_issue", "queue_checklist", "tree_context"]

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
    # The newest checklist replaces any not yet sent.
    followups.drop_unsent(WriteKind.TASK_LIST, root.issue_number, "superseded")
    section = render_task_list([child_state(child) for child in children])
    followups.enqueue(WriteKind.TASK_LIST, root.issue_number, {"section": section}, None, None)


def _question(store: TicketStore, ticket: Ticket) -> str:
    """Return the newest user message of a step's stored request (what the step asked)."""
    stored = store.request_for(ticket.id)
    if stored is None:
        return ""
    # Shown as posted: what the step's own issue showed, secrets redacted.
    request, _ = redact_request(ChatRequest.from_json(stored))
    users = [m.content for m in request.messages if m.role == "user"]
    return users[-1] if users else (request.messages[-1].content if request.messages else "")


def _subtree(store: TicketStore, ticket: Ticket) -> Subtree:
    assert ticket.issue_number is not None
    title = _question(store, ticket).strip().split("\n", 1)[0]
    answer = store.answer_for(ticket.id)
    if ticket.state is TicketState.EXPIRED:
        return Subtree(ticket.issue_number, ticket.step, title, "expired")
    if answer is None:
        return Subtree(ticket.issue_number, ticket.step, title, _STATES[ticket.state])
    return Subtree(
        ticket.issue_number,
        ticket.step,
        title,
        "answered",
        signer=answer.signer,
        digest=answer.digest,
        answer_url=answer.comment_url,
    )


def tree_context(store: TicketStore, settings: DeskSettings, ticket: Ticket) -> str:
    """Return a child's trimmed context: its open path in full, other subtrees in lines."""
    after = settings.tree_after_steps
    slot = child_slot(ticket.step, after)
    root = store.get_ticket(ticket.thread_id or ticket.id)
    if slot is None or root is None or root.issue_number is None:
        return ""
    chain: list[int] = []
    parent_step = slot.parent_step(after)
    while parent_step is not None:
        chain.insert(0, parent_step)
        above = child_slot(parent_step, after)
        parent_step = None if above is None else above.parent_step(after)
    path: list[PathStep] = []
    for node in [root, *(store.ticket_at_step(root.id, step) for step in chain)]:
        if node is None or node.issue_number is None:
            continue
        answer = store.answer_for(node.id)
        path.append(
            PathStep(
                node.issue_number,
                node.step,
                _question(store, node),
                None if answer is None else answer.text,
                None if answer is None else answer.signer,
            )
        )
    first = first_child_step(after)
    off_path = [
        child
        for child in store.own_issue_steps(root.id, first, ticket.step - 1)
        if child.step not in chain
    ]
    return render_tree_context(path, [_subtree(store, child) for child in off_path])
