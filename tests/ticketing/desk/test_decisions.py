"""Tests for ticketing.desk.decisions: every row of the decision table, values in and out.

No server, store or clock: each test builds the facts a comment has gathered so far and
checks the next step or the action.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from auth.review_decision import ReviewDecision, RiskFinding
from auth.review_tally import Judgement, ReviewTally
from auth.roles import Act
from auth.verify import Accepted, Rejected, RejectReason
from ticketing.desk import decisions as d
from ticketing.release import Refusal, Release
from ticketing.store.model import Candidate, TicketState

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
RELEASE = Release(content="ls", tool_calls=(), finish_reason="stop")
NO_REVIEW = ReviewDecision(required_approvals=0, findings=())
ONE_REVIEW = ReviewDecision(
    required_approvals=1,
    findings=(RiskFinding(rule="shell", command="execute_shell", argument=None, detail="runs"),),
)


def _accepted(act: Act = Act.ANSWER, signer: str = "alice") -> Accepted:
    return Accepted(
        text="ls",
        act=act,
        signer=signer,
        kid="k1",
        jti="j1",
        digest="d" * 64,
        issued_at=NOW,
        expires_at=NOW,
    )


def _candidate(signer: str = "alice") -> Candidate:
    return Candidate(
        ticket_id=1,
        comment_id=10,
        comment_url="https://github.example/acme/agents/issues/1#issuecomment-10",
        text="rm -rf build",
        signer=signer,
        kid="k1",
        jti="j0",
        digest="c" * 64,
        release="{}",
        required=1,
        posted_at=NOW,
        proposed_at=NOW,
    )


def _tally(state: str) -> ReviewTally:
    approval = Judgement(
        act=Act.APPROVE,
        reviewer="bob",
        kid="k2",
        jti="j2",
        digest="c" * 64,
        comment_id=11,
        posted_at=NOW,
    )
    return ReviewTally(
        state=state,  # type: ignore[arg-type]
        approvals=(approval,) if state == "approved" else (),
        rejection=None,
        ignored=(),
    )


OPEN = d.CommentFacts(from_bot=False, signed=True, state=TicketState.OPEN)
UNDER_REVIEW = d.CommentFacts(
    from_bot=False, signed=True, state=TicketState.NEEDS_REVIEW, candidate=_candidate()
)
VERIFIED = replace(OPEN, verdict=_accepted(), jti_fresh=True)
JUDGED = replace(UNDER_REVIEW, verdict=_accepted(Act.APPROVE, signer="bob"), jti_fresh=True)


# --- comments that are no answer at all ------------------------------------------------------


def test_the_bots_own_comment_is_ignored() -> None:
    """A comment by the bot (or carrying its reply marker) is never an answer."""
    assert isinstance(d.decide(replace(OPEN, from_bot=True)), d.Ignore)


def test_a_comment_on_an_issue_that_is_no_ticket_is_ignored() -> None:
    """A signed comment on an issue no ticket owns is ignored."""
    assert isinstance(d.decide(replace(OPEN, state=None)), d.Ignore)


def test_an_unsigned_comment_is_ordinary_discussion_and_ignored() -> None:
    """Without a signature trailer a comment is discussion: no verification, no reply."""
    assert isinstance(d.decide(replace(OPEN, signed=False)), d.Ignore)


def test_editor_approving_their_own_agents_answer_is_refused_as_self_approval() -> None:
    """alice's agent's held command needs another reviewer: alice approving is refused."""
    agents = replace(_candidate(signer="alice-agent"), on_behalf_of="alice")
    facts = replace(
        UNDER_REVIEW,
        candidate=agents,
        verdict=_accepted(Act.APPROVE, signer="alice"),
        jti_fresh=True,
    )
    refusal = d.decide(facts)
    assert isinstance(refusal, d.Refuse)
    assert refusal.reason == "self-approval"
    other = replace(facts, verdict=_accepted(Act.APPROVE, signer="bob"))
    assert isinstance(d.decide(other), d.RecordJudgement)


def test_a_signed_draft_comment_passing_as_an_answer_is_refused() -> None:
    """A comment carrying a draft's marker is refused before any verification, with a reply."""
    for facts in (OPEN, UNDER_REVIEW, VERIFIED):
        refusal = d.decide(replace(facts, draft=True))
        assert isinstance(refusal, d.Refuse)
        assert refusal.reason == "draft"
        assert "never an answer" in refusal.detail


# --- tickets that are no longer open ---------------------------------------------------------


@pytest.mark.parametrize(
    "state", [TicketState.ANSWERED, TicketState.DELIVERED, TicketState.EXPIRED]
)
def test_a_signed_answer_to_a_closed_ticket_is_refused_as_late(state: TicketState) -> None:
    """A signed comment on a ticket no longer open is refused with the "late" reply."""
    action = d.decide(replace(OPEN, state=state))
    assert action == d.Refuse("late", "late", d.Reply.LATE)


def test_the_accepted_answer_seen_again_is_ignored() -> None:
    """The comment that answered the ticket, found again by a later poll, changes nothing."""
    facts = replace(OPEN, state=TicketState.ANSWERED, is_accepted_answer=True)
    assert isinstance(d.decide(facts), d.Ignore)


# --- answers on an open ticket ---------------------------------------------------------------


def test_a_signed_comment_on_an_open_ticket_is_verified_as_an_answer() -> None:
    """The first step for a signed comment on an open ticket is verifying it as an answer."""
    assert d.decide(OPEN) == d.Verify(d.ANSWERING)


def test_an_approval_before_any_answer_waits_for_review_is_refused_as_early() -> None:
    """A signed approve/reject on an open ticket is refused: nothing waits for review."""
    facts = replace(OPEN, verdict=Rejected(RejectReason.WRONG_ACT, "not an answer"))
    action = d.decide(facts)
    assert isinstance(action, d.Refuse)
    assert (action.reason, action.kind) == ("early-judgement", "early-judgement")
    assert "no answer is waiting for review" in action.detail


@pytest.mark.parametrize(
    "reason",
    [r for r in RejectReason if r not in {RejectReason.UNSIGNED, RejectReason.WRONG_ACT}],
)
def test_a_signature_that_does_not_verify_is_refused_with_its_reason(
    reason: RejectReason,
) -> None:
    """A forged, misdirected, expired or replayed signature is refused, replying its detail."""
    action = d.decide(replace(OPEN, verdict=Rejected(reason, "what to fix")))
    assert action == d.Refuse(
        reason.value, f"rejected:{reason.value}", d.Reply.REJECTION, "what to fix"
    )


def test_a_malformed_trailer_read_as_unsigned_is_counted_but_not_replied_to() -> None:
    """An unsigned verdict counts as a refusal but gets no reply (kind None)."""
    action = d.decide(replace(OPEN, verdict=Rejected(RejectReason.UNSIGNED, "no signature")))
    assert action == d.Refuse("unsigned", None, d.Reply.REJECTION, "no signature")


def test_a_verified_answer_claims_its_jti_next() -> None:
    """A verified answer's jti is claimed among replicas before anything else happens."""
    assert d.decide(replace(OPEN, verdict=_accepted())) == d.ClaimJti()


def test_a_replayed_answer_signature_is_refused() -> None:
    """A jti another comment already spent makes the answer a replay."""
    action = d.decide(replace(OPEN, verdict=_accepted(), jti_fresh=False))
    assert action == d.Refuse("replayed", "rejected:replayed", d.Reply.REJECTION, d.REPLAYED)


def test_a_fresh_verified_answer_is_checked_for_release_next() -> None:
    """With the jti spent, the answer is read against its request and the review policy."""
    assert d.decide(VERIFIED) == d.CheckRelease()


def test_an_answer_that_cannot_be_released_is_refused_with_its_problems() -> None:
    """A tool call the request does not offer (say) is refused with every problem listed."""
    action = d.decide(replace(VERIFIED, release=Refusal(problems=("no tool `x`",))))
    assert action == d.Refuse(
        "unreleasable", "unreleasable", d.Reply.UNRELEASABLE, problems=("no tool `x`",)
    )


def test_an_answer_the_policy_finds_risky_is_held_for_review() -> None:
    """An answer whose commands need approvals is held, not released."""
    action = d.decide(replace(VERIFIED, release=RELEASE, review=ONE_REVIEW))
    assert action == d.HoldForReview(_accepted(), RELEASE, ONE_REVIEW)


def test_a_fresh_releasable_answer_without_risk_is_accepted() -> None:
    """A verified, fresh, releasable answer that needs no review is accepted."""
    action = d.decide(replace(VERIFIED, release=RELEASE, review=NO_REVIEW))
    assert action == d.Accept(_accepted(), RELEASE)


def test_a_release_without_its_review_decision_is_a_desk_error() -> None:
    """The desk must check release and policy together; half the facts is a bug, not a pass."""
    with pytest.raises(ValueError, match="review decision"):
        d.decide(replace(VERIFIED, release=RELEASE))


# --- judgements on a ticket under review -----------------------------------------------------


def test_a_judgement_when_no_answer_waits_for_review_is_ignored() -> None:
    """Under review but without a pending candidate (decided meanwhile): nothing to judge."""
    assert isinstance(d.decide(replace(UNDER_REVIEW, candidate=None)), d.Ignore)


def test_a_signed_comment_under_review_is_verified_as_a_judgement_of_the_candidate() -> None:
    """Approvals and rejections are verified against the digest of the answer under review."""
    assert d.decide(UNDER_REVIEW) == d.Verify(d.JUDGING, judged_digest="c" * 64)


def test_a_second_answer_while_one_waits_for_review_is_refused() -> None:
    """An answer posted while another waits for review is refused until a reviewer rejects."""
    facts = replace(UNDER_REVIEW, verdict=Rejected(RejectReason.WRONG_ACT, "an answer"))
    action = d.decide(facts)
    assert isinstance(action, d.Refuse)
    assert (action.reason, action.kind) == ("wrong_act", "review:wrong_act")
    assert "already waiting for review" in action.detail


def test_an_approval_of_another_text_is_refused_naming_the_candidates_digest() -> None:
    """An approval whose sha256 is not the candidate's is refused, naming the right digest."""
    facts = replace(UNDER_REVIEW, verdict=Rejected(RejectReason.TEXT_MISMATCH, "mismatch"))
    action = d.decide(facts)
    assert isinstance(action, d.Refuse)
    assert action.kind == "review:text_mismatch"
    assert "c" * 64 in action.detail


def test_a_forged_approval_is_refused_with_its_reason() -> None:
    """An approval whose signature does not verify is refused with the verifier's detail."""
    facts = replace(UNDER_REVIEW, verdict=Rejected(RejectReason.BAD_SIGNATURE, "bad sig"))
    action = d.decide(facts)
    assert action == d.Refuse("bad_signature", "review:bad_signature", d.Reply.REJECTION, "bad sig")


def test_a_verified_judgement_claims_its_jti_next() -> None:
    """A verified judgement's jti is claimed before it counts."""
    facts = replace(UNDER_REVIEW, verdict=_accepted(Act.APPROVE, signer="bob"))
    assert d.decide(facts) == d.ClaimJti()


def test_a_replayed_approval_is_refused() -> None:
    """An approval whose jti was spent does not count twice."""
    action = d.decide(replace(JUDGED, jti_fresh=False))
    assert action == d.Refuse("replayed", "review:replayed", d.Reply.REJECTION, d.REPLAYED)


def test_self_approval_is_refused() -> None:
    """The answer's author cannot approve it, whatever the case of their login."""
    facts = replace(JUDGED, verdict=_accepted(Act.APPROVE, signer="ALICE"))
    action = d.decide(facts)
    assert isinstance(action, d.Refuse)
    assert (action.reason, action.kind) == ("self-approval", "review:self-approval")


def test_the_author_may_reject_their_own_answer() -> None:
    """Withdrawing one's own answer (a signed reject) is a judgement like any other."""
    facts = replace(JUDGED, verdict=_accepted(Act.REJECT, signer="alice"))
    assert d.decide(facts) == d.RecordJudgement()


def test_a_fresh_judgement_by_another_reviewer_is_recorded_next() -> None:
    """A fresh approval by someone other than the author is recorded, then tallied."""
    assert d.decide(JUDGED) == d.RecordJudgement()


def test_a_judgement_recorded_before_is_ignored() -> None:
    """The same judgement seen again (poll and webhook) counts once."""
    assert isinstance(d.decide(replace(JUDGED, recorded=False)), d.Ignore)


def test_a_recorded_judgement_without_its_tally_is_a_desk_error() -> None:
    """The desk must tally after recording; a missing tally is a bug, not a pass."""
    with pytest.raises(ValueError, match="tally"):
        d.decide(replace(JUDGED, recorded=True))


def test_an_approved_tally_releases_the_answer_under_review() -> None:
    """Enough distinct approvals release the candidate."""
    tally = _tally("approved")
    assert d.decide(replace(JUDGED, recorded=True, tally=tally)) == d.ReleaseApproved(tally)


def test_a_rejected_tally_reopens_the_ticket() -> None:
    """A reviewer's signed rejection sends the ticket back to waiting for an answer."""
    facts = replace(JUDGED, recorded=True, tally=_tally("rejected"))
    assert d.decide(facts) == d.ReopenRejected(_accepted(Act.APPROVE, signer="bob"))


def test_a_tally_still_short_of_approvals_waits_for_more() -> None:
    """One approval of two counts, and the answer goes on waiting."""
    tally = _tally("pending")
    assert d.decide(replace(JUDGED, recorded=True, tally=tally)) == d.AwaitApprovals(tally)
