"""A routed ticket's dispatch: queued once, with its notice, for each step of a run."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ticketing.agent_routes import AgentRoute
from ticketing.desk.agents import TICKET_URL_INPUT, dispatch_to_agent
from ticketing.github.write_queue import WriteQueue
from ticketing.request import ChatRequest, Message
from ticketing.store.model import DraftState, Ticket
from ticketing.store.sqlite import SQLiteTicketStore

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ROUTES = (
    AgentRoute(
        editor="alice",
        repository="alice/ticketproxy-agent",
        workflow="agent.yml",
        model="gpt-4-turbo",
    ),
)
URL = "https://github.com/acme/agents/issues/1"


def _setup(tmp_path: Path) -> tuple[SQLiteTicketStore, WriteQueue, Ticket]:
    store = SQLiteTicketStore(tmp_path / "t.sqlite3")
    opened = store.open_ticket("k", request_id="req-1", created=NOW, deadline=NOW)
    store.set_issue(opened.id, number=1, url=URL, now=NOW)
    ticket = store.get_ticket(opened.id)
    assert ticket is not None
    # Never started, so it sends nothing: the writes stay queued for the test to read.
    queue = WriteQueue(store=store, github=None, clock=lambda: NOW)  # type: ignore[arg-type]
    return store, queue, ticket


def _queued(store: SQLiteTicketStore) -> list[tuple[str, dict[str, Any]]]:
    return [(w.kind, json.loads(w.payload)) for w in store.due_writes(now=NOW)]


def _request(model: str = "gpt-4-turbo") -> ChatRequest:
    return ChatRequest(model=model, messages=(Message(role="user", content="hi"),))


def test_a_routed_ticket_queues_one_dispatch_and_the_drafting_notice(tmp_path: Path) -> None:
    """The dispatch carries the ticket's URL; a second call (a retry) queues nothing more."""
    store, queue, ticket = _setup(tmp_path)
    route = dispatch_to_agent(
        ROUTES, ticket, _request(), store=store, followups=queue, clock=lambda: NOW
    )
    assert route == ROUTES[0]
    again = dispatch_to_agent(
        ROUTES, ticket, _request(), store=store, followups=queue, clock=lambda: NOW
    )
    assert again == ROUTES[0]
    [(kind, dispatch), (comment_kind, notice)] = _queued(store)
    assert (kind, comment_kind) == ("dispatch", "comment")
    assert dispatch["repository"] == "alice/ticketproxy-agent"
    assert dispatch["inputs"] == {TICKET_URL_INPUT: URL}
    assert "Drafting by alice" in notice["body"]
    draft = store.draft_for(ticket.id)
    assert draft is not None
    assert draft.state is DraftState.DISPATCHED
    store.close()


def test_an_unrouted_model_dispatches_nothing(tmp_path: Path) -> None:
    """Only tickets for a routed model go to an agent."""
    store, queue, ticket = _setup(tmp_path)
    clock = lambda: NOW  # noqa: E731
    assert (
        dispatch_to_agent(
            ROUTES, ticket, _request("gpt-4o"), store=store, followups=queue, clock=clock
        )
        is None
    )
    assert _queued(store) == []
    assert store.draft_for(ticket.id) is None
    store.close()


def test_a_later_step_is_dispatched_with_its_step_comments_address(tmp_path: Path) -> None:
    """Step 2 of a run goes to the agent too, its ``ticket_url`` naming the step comment."""
    store, queue, ticket = _setup(tmp_path)
    step_url = f"{URL}#issuecomment-77"
    step_two = replace(ticket, step=2, issue_url=step_url)
    route = dispatch_to_agent(
        ROUTES, step_two, _request(), store=store, followups=queue, clock=lambda: NOW
    )
    assert route == ROUTES[0]
    [(_, dispatch), _] = _queued(store)
    assert dispatch["inputs"] == {TICKET_URL_INPUT: step_url}
    store.close()
