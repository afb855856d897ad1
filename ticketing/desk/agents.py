"""Personal agents: hand a new ticket to the editor's agent that its route names.

When a ticket's request (an issue, or a later step of an agent run) matches a route
(:mod:`ticketing.agent_routes`), the ticket's one draft is the agent's: the draft is claimed
(so the upstream drafter, a retry or another replica never drafts it too), and two writes
are queued in the durable write queue, within its budget: the ``workflow_dispatch`` of the
editor's workflow with the ticket's URL as its input, and the notice "drafting by alice's
agent…" on the ticket. Both are sent only while the ticket still waits. GitHub refusing the
dispatch is tried again, then given up, and the ticket says so
(:func:`ticketing.github.write_kinds.abandon_notice`).

The agent posts its draft on the ticket itself, as a marked suggestion naming whose agent
drafted it; it is never an answer until an editor signs it. When the finder sees that
comment (poll or webhook), :func:`take_agent_draft` keeps its exact text as the ticket's
draft, so the desk API shows it for one-click signing: only a draft comment whose marker
verifies, made for this ticket, posted by the login the route names (the editor the ticket
was dispatched to), while the ticket waits (:func:`agent_draft_of` decides, pure).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from auth.logins import same_login
from ticketing.agent_routes import AgentRoute, request_labels, route_for
from ticketing.clock import Clock
from ticketing.github.interface import Comment
from ticketing.github.write_kinds import Guard, WriteKind
from ticketing.github.write_queue import WriteQueue
from ticketing.render.agent_notices import render_drafting_notice
from ticketing.render.drafts import DRAFT_MARKER_PREFIX, Draft, parse_draft_comment
from ticketing.request import ChatRequest
from ticketing.store.interface import DraftStore, TicketStore
from ticketing.store.model import DraftState, StoredDraft, Ticket, TicketState

__all__ = ["TICKET_URL_INPUT", "agent_draft_of", "dispatch_to_agent", "take_agent_draft"]

log = logging.getLogger(__name__)

# The one input the template's workflow declares: the address of the ticket to draft for.
TICKET_URL_INPUT = "ticket_url"


def dispatch_to_agent(
    routes: Sequence[AgentRoute],
    ticket: Ticket,
    request: ChatRequest,
    *,
    store: DraftStore,
    followups: WriteQueue,
    clock: Clock,
) -> AgentRoute | None:
    """Queue the dispatch of the agent this ticket is routed to; return its route, or None.

    A ticket with no route gets None (the upstream drafter may draft it). Each step of an
    agent run is routed by its own request, and dispatched with its own address: the issue
    for step 1, the step comment (``…/issues/12#issuecomment-N``) for a later step, so the
    agent drafts for that step's reference. A routed ticket whose draft was claimed already
    (a retry, another replica) gets its route and nothing is queued again.
    """
    labels = request_labels(request.metadata)
    route = route_for(routes, model=request.model, client=request.client, labels=labels)
    if route is None:
        return None
    if ticket.issue_number is None or ticket.issue_url is None or not ticket.state.pending:
        return route
    now = clock()
    if not store.claim_draft(ticket.id, now=now):
        return route
    waiting = Guard.ticket_in(ticket.id, {state for state in TicketState if state.pending})
    payload = {
        "repository": route.repository,
        "workflow": route.workflow,
        "ref": route.ref,
        "inputs": {TICKET_URL_INPUT: ticket.issue_url},
        "agent": route.name,
    }
    number = ticket.issue_number
    followups.enqueue(WriteKind.DISPATCH, number, payload, ticket.request_id, waiting)
    notice = render_drafting_notice(
        agent=route.name, repository=route.repository, workflow=route.workflow
    )
    followups.comment(number, notice, request_id=ticket.request_id, only_if=waiting)
    store.finish_draft(
        ticket.id,
        state=DraftState.DISPATCHED,
        now=now,
        model=route.name,
        detail=f"{route.repository} {route.workflow}@{route.ref}",
        agent=route.editor,
    )
    log.info(
        "request_id=%s ticket %d: %s (%s, workflow %s) asked to draft",
        ticket.request_id,
        ticket.id,
        route.name,
        route.repository,
        route.workflow,
    )
    return route


def agent_draft_of(
    comment: Comment, *, ticket: Ticket | None, reference: str, draft: StoredDraft | None
) -> Draft | None:
    """Return the draft a comment carries for this ticket's dispatched agent, or None. Pure.

    ``reference`` is the ticket's (what the draft marker must name); ``draft`` its stored
    draft, which names the editor whose agent was dispatched.
    """
    if ticket is None or draft is None or draft.agent is None or not ticket.state.pending:
        return None
    if draft.state not in {DraftState.DISPATCHED, DraftState.POSTED}:
        return None
    # Only the routed editor's login: anyone else's "draft" would be text they chose.
    if not same_login(comment.author_login, draft.agent):
        return None
    parsed = parse_draft_comment(comment.body)
    if parsed is None or parsed.ticket != reference:
        return None
    return parsed


def take_agent_draft(
    comment: Comment, *, store: TicketStore, reference: Callable[[Ticket], str], clock: Clock
) -> bool:
    """Keep a dispatched agent's draft comment as its ticket's draft; return whether taken."""
    if DRAFT_MARKER_PREFIX not in comment.body:
        return False
    ticket = store.ticket_for_issue(comment.issue_number)
    draft = None if ticket is None else store.draft_for(ticket.id)
    ref = "" if ticket is None else reference(ticket)
    found = agent_draft_of(comment, ticket=ticket, reference=ref, draft=draft)
    if found is None or ticket is None or draft is None or draft.agent is None:
        return False
    taken = store.take_agent_draft(
        ticket.id,
        agent=draft.agent,
        now=clock(),
        text=found.text,
        digest=found.digest,
        comment_url=comment.url,
    )
    if taken:
        log.info(
            "request_id=%s ticket %d: draft by %s's agent taken from comment %d (sha256 %s)",
            ticket.request_id,
            ticket.id,
            draft.agent,
            comment.id,
            found.digest,
        )
    return taken
