"""The decision table's delegate row: values in, values out, no network."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from auth.delegation import Delegation
from auth.roles import Act
from auth.verify import Accepted, Rejected, RejectReason
from ticketing.desk import decisions as d
from ticketing.store.model import Candidate, TicketState

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
OPEN = d.CommentFacts(from_bot=False, signed=True, state=TicketState.OPEN)
DELEGATION = Accepted(
    text="Delegated: …",
    act=Act.DELEGATE,
    signer="alice",
    kid="k1",
    jti="j1",
    digest="d" * 64,
    issued_at=NOW,
    expires_at=NOW,
    delegations=(Delegation("Index still used?", to="carol"), Delegation("Secrets?", to="dave")),
)


def test_an_open_ticket_takes_a_delegation_as_well_as_an_answer() -> None:
    """A signed comment on an open ticket is verified as an answer or a delegation."""
    step = d.decide(OPEN)
    assert isinstance(step, d.Verify)
    assert Act.DELEGATE in step.acts
    assert Act.ANSWER in step.acts


def test_a_verified_delegation_claims_its_jti_before_anything_is_split() -> None:
    """Single-use like any act: the jti is claimed first."""
    assert d.decide(replace(OPEN, verdict=DELEGATION)) == d.ClaimJti()


def test_a_fresh_delegation_splits_the_ticket_without_checking_a_release() -> None:
    """With its jti spent, a delegation delegates: no release, no review of an answer."""
    assert d.decide(replace(OPEN, verdict=DELEGATION, jti_fresh=True)) == d.Delegate(DELEGATION)


def test_replayed_delegate_is_refused_by_the_table() -> None:
    """A delegation whose jti another comment claimed first is refused as replayed."""
    action = d.decide(replace(OPEN, verdict=DELEGATION, jti_fresh=False))
    assert action == d.Refuse("replayed", "rejected:replayed", d.Reply.REJECTION, d.REPLAYED)


@pytest.mark.parametrize(
    "reason",
    [RejectReason.ROLE_MISSING, RejectReason.WRONG_TICKET, RejectReason.UNKNOWN_ADDRESSEE],
)
def test_delegate_that_does_not_verify_is_refused_with_its_reason(reason: RejectReason) -> None:
    """A reviewer's, misdirected or mis-addressed delegation is refused, telling why."""
    action = d.decide(replace(OPEN, verdict=Rejected(reason, "what to fix")))
    assert action == d.Refuse(
        reason.value, f"rejected:{reason.value}", d.Reply.REJECTION, "what to fix"
    )


@pytest.mark.parametrize(
    "state", [TicketState.ANSWERED, TicketState.DELIVERED, TicketState.EXPIRED]
)
def test_delegate_on_a_ticket_no_longer_open_is_refused_as_late(state: TicketState) -> None:
    """Only an open ticket can be split: on any other a delegation is late."""
    action = d.decide(replace(OPEN, state=state, verdict=DELEGATION, jti_fresh=True))
    assert action == d.Refuse("late", "late", d.Reply.LATE)


def test_delegate_on_a_ticket_under_review_is_verified_as_a_judgement_only() -> None:
    """Under review, the ticket takes approvals and rejections, never a delegation."""
    candidate = Candidate(
        ticket_id=1,
        comment_id=10,
        comment_url="https://github.example/acme/agents/issues/1#issuecomment-10",
        text="rm -rf build",
        signer="alice",
        kid="k1",
        jti="j0",
        digest="c" * 64,
        release="{}",
        required=1,
        posted_at=NOW,
        proposed_at=NOW,
    )
    facts = replace(OPEN, state=TicketState.NEEDS_REVIEW, candidate=candidate)
    step = d.decide(facts)
    assert isinstance(step, d.Verify)
    assert Act.DELEGATE not in step.acts


def test_a_delegation_carried_out_seen_again_is_ignored() -> None:
    """The delegate comment found again by a later poll (or after a restart) changes nothing."""
    assert d.decide(replace(OPEN, delegated=True)) == d.Ignore("the delegation, seen again")
