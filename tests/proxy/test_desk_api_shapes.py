"""The desk API's pure shapes: filters, who a ticket is for, signing terms, list entries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from auth.roles import Role
from proxy.desk_api.shapes import (
    ListedTicket,
    ListFilter,
    is_mine,
    kept,
    list_entry,
    parse_filter,
    signing_shape,
)
from ticketing.store.model import Candidate, Ticket, TicketState

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _ticket(state: TicketState, *, step: int = 1, thread: int | None = None) -> Ticket:
    return Ticket(
        id=5,
        request_key="k",
        request_id="r",
        state=state,
        issue_number=12,
        issue_url="https://github.com/acme/agents/issues/12",
        created_at=NOW - timedelta(seconds=90),
        deadline=NOW + timedelta(hours=1),
        step=step,
        thread_id=thread,
    )


def _held(signer: str = "alice") -> Candidate:
    return Candidate(
        ticket_id=5,
        comment_id=1,
        comment_url="u",
        text="t",
        signer=signer,
        kid="k",
        jti="j",
        digest="a" * 64,
        release="{}",
        required=1,
        posted_at=NOW,
        proposed_at=NOW,
    )


def test_unknown_filters_are_refused_with_the_values_allowed() -> None:
    """A state or flag the list does not know is an error naming what it takes."""
    assert "open, needs-review, expired" in str(parse_filter({"state": "delivered"}))
    assert "true or false" in str(parse_filter({"needs_review": "yes"}))
    assert parse_filter({"state": "needs-review", "mine": "bob"}) == ListFilter(
        state=TicketState.NEEDS_REVIEW, mine="bob"
    )


def test_nobody_may_approve_an_answer_they_signed() -> None:
    """A held answer is a reviewer's to judge, unless that reviewer signed it."""
    entry = ListedTicket(_ticket(TicketState.NEEDS_REVIEW), "acme/agents#12", "t", held_by="Bob")
    assert not is_mine(entry, "bob", frozenset({Role.REVIEWER}))
    assert is_mine(entry, "carol", frozenset({Role.REVIEWER}))
    assert not is_mine(entry, "carol", frozenset({Role.EDITOR}))
    open_entry = ListedTicket(_ticket(TicketState.OPEN), "acme/agents#12", "t")
    assert is_mine(open_entry, "alice", frozenset({Role.EDITOR}))
    assert not kept(open_entry, ListFilter(needs_review=True), frozenset())


def test_a_lone_request_has_no_run_and_a_later_step_has_both() -> None:
    """``run`` and ``step`` are null for a lone request, set for a step of an agent run."""
    lone = list_entry(ListedTicket(_ticket(TicketState.OPEN, thread=5), "r", "t"), now=NOW)
    assert (lone["run"], lone["step"], lone["age"]) == (None, None, 90)
    step = list_entry(
        ListedTicket(_ticket(TicketState.OPEN, step=2, thread=3), "r#12/2", "t"), now=NOW
    )
    assert (step["run"], step["step"]) == (3, 2)


def test_signing_terms_follow_the_state() -> None:
    """Open: sign an answer; held: approve or reject the held digest; otherwise nothing."""
    assert signing_shape(_ticket(TicketState.OPEN), "r", None)["acts"] == ["answer"]
    held = signing_shape(_ticket(TicketState.NEEDS_REVIEW), "r", _held())
    assert held == {"ticket": "r", "acts": ["approve", "reject"], "answer_sha256": "a" * 64}
    assert signing_shape(_ticket(TicketState.DELIVERED), "r", None)["acts"] == []
