"""Tests for ticketing.desk.preflight: the desk's refusals foreseen before a comment is posted.

Pure: the verifier and the release check are stand-ins returning values, so each test
says which facts the desk would gather and checks what the desk API would answer.
"""

from __future__ import annotations

from datetime import UTC, datetime

from auth.review_decision import ReviewDecision
from auth.roles import Act
from auth.verify import Accepted, Rejected, RejectReason, Verdict
from ticketing.desk import decisions as d
from ticketing.desk.preflight import Refused, first_facts, foresee
from ticketing.release import Refusal, Release
from ticketing.store.model import Candidate, TicketState

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
SIGNED = "Fine.\n\n<!-- ticketproxy-signature: eyJ.x.y -->"
RELEASE = Release(content="ls", tool_calls=(), finish_reason="stop")
ONE_REVIEW = ReviewDecision(required_approvals=1, findings=())


def _accepted(act: Act = Act.ANSWER, signer: str = "bob") -> Accepted:
    return Accepted(
        text="Fine.",
        act=act,
        signer=signer,
        kid="k1",
        jti="j1",
        digest="d" * 64,
        issued_at=NOW,
        expires_at=NOW,
    )


def _held(signer: str = "alice", on_behalf_of: str | None = None) -> Candidate:
    return Candidate(
        ticket_id=1,
        comment_id=10,
        comment_url="https://github.example/acme/agents/issues/1#issuecomment-10",
        text="rm -rf build",
        signer=signer,
        kid="k0",
        jti="j0",
        digest="c" * 64,
        release="{}",
        required=1,
        posted_at=NOW,
        proposed_at=NOW,
        on_behalf_of=on_behalf_of,
    )


def _foresee(
    state: TicketState,
    verdict: Verdict | None,
    *,
    body: str = SIGNED,
    held: Candidate | None = None,
    release: tuple[Release | Refusal, ReviewDecision | None] = (RELEASE, None),
) -> Accepted | Refused:
    asked: list[d.Verify] = []

    def verify(step: d.Verify) -> Verdict:
        assert verdict is not None, "the desk would not verify this comment"
        asked.append(step)
        return verdict

    result = foresee(
        first_facts(body, state, by_bot=False, held=held),
        verify=verify,
        check=lambda _: release,
        number=1,
    )
    if held is not None and asked:
        assert asked[0].judged_digest == held.digest
    return result


def test_self_approval_is_foreseen_as_the_desks_refusal() -> None:
    """The held answer's signer approving it is refused as the desk would: self-approval."""
    result = _foresee(
        TicketState.NEEDS_REVIEW, _accepted(Act.APPROVE, signer="alice"), held=_held("alice")
    )
    assert result == Refused("self-approval", d.SELF_APPROVAL, by_verifier=False)


def test_approval_by_the_editor_an_agent_answered_for_is_refused() -> None:
    """The editor whose agent wrote the held answer cannot approve it either."""
    held = _held("build-agent", on_behalf_of="carol")
    result = _foresee(TicketState.NEEDS_REVIEW, _accepted(Act.APPROVE, signer="carol"), held=held)
    assert isinstance(result, Refused)
    assert result.reason == "self-approval"


def test_approval_without_the_reviewer_role_keeps_the_verifiers_reason() -> None:
    """A signer the keyring gives no reviewer role is refused with the verifier's reason."""
    missing = Rejected(RejectReason.ROLE_MISSING, "Key k1 of alice lacks the reviewer role.")
    result = _foresee(TicketState.NEEDS_REVIEW, missing, held=_held("bob"))
    assert result == Refused("role_missing", missing.detail, by_verifier=True)


def test_judgement_when_no_answer_is_held_is_refused_as_early() -> None:
    """An approval on an open ticket is the desk's early-judgement, not a bare wrong act."""
    wrong_act = Rejected(RejectReason.WRONG_ACT, "A signed approval is not expected here.")
    result = _foresee(TicketState.OPEN, wrong_act)
    assert result == Refused("early-judgement", d.EARLY_JUDGEMENT, by_verifier=False)


def test_judgement_of_another_text_names_the_held_answers_sha256() -> None:
    """An approval over a different digest is refused with the held answer's sha256."""
    mismatch = Rejected(RejectReason.TEXT_MISMATCH, "The digest differs.")
    result = _foresee(TicketState.NEEDS_REVIEW, mismatch, held=_held())
    assert isinstance(result, Refused)
    assert (result.reason, result.by_verifier) == ("text_mismatch", True)
    assert "c" * 64 in result.detail


def test_answer_on_a_delivered_ticket_is_late_without_verifying() -> None:
    """A closed ticket takes nothing: refused as late, naming its state, never verified."""
    result = _foresee(TicketState.DELIVERED, None)
    assert isinstance(result, Refused)
    assert result.reason == "late"
    assert "delivered" in result.detail


def test_unsigned_comment_is_refused_as_unsigned() -> None:
    """Plain text would be ignored by the desk; the API says it lacks a signature."""
    result = _foresee(TicketState.OPEN, None, body="Fine.")
    assert isinstance(result, Refused)
    assert (result.reason, result.by_verifier) == ("unsigned", True)


def test_comment_carrying_the_bots_reply_marker_is_refused() -> None:
    """A comment the desk would take for its own reply is ignored, so it is not posted."""
    body = "<!-- ticketproxy:reply late-answer -->\n" + SIGNED
    result = _foresee(TicketState.OPEN, None, body=body)
    assert isinstance(result, Refused)
    assert result.reason == "ignored"


def test_draft_posted_as_an_answer_is_refused() -> None:
    """A draft's marker in an answer is the desk's draft refusal."""
    body = "<!-- ticketproxy:draft sha256=abc -->\n" + SIGNED
    result = _foresee(TicketState.OPEN, None, body=body)
    assert isinstance(result, Refused)
    assert result.reason == "draft"


def test_unreleasable_answer_is_refused_with_its_problems() -> None:
    """An answer its request cannot release is refused with what to fix."""
    refusal = Refusal(("no tool named format_disk",))
    result = _foresee(TicketState.OPEN, _accepted(), release=(refusal, None))
    assert result == Refused("unreleasable", "no tool named format_disk", by_verifier=False)


def test_answer_the_desk_would_hold_for_review_is_taken() -> None:
    """An answer the policy holds is still one the desk takes: the verdict comes back."""
    verdict = _accepted()
    assert _foresee(TicketState.OPEN, verdict, release=(RELEASE, ONE_REVIEW)) is verdict


def test_approval_by_another_reviewer_is_taken() -> None:
    """A reviewer's approval of someone else's held answer goes through."""
    verdict = _accepted(Act.APPROVE, signer="bob")
    assert _foresee(TicketState.NEEDS_REVIEW, verdict, held=_held("alice")) is verdict


def test_answer_with_a_used_signature_keeps_the_replay_reason() -> None:
    """A jti already used is the verifier's replay refusal, as the desk counts it."""
    replayed = Rejected(RejectReason.REPLAYED, "This signature was already used.")
    result = _foresee(TicketState.OPEN, replayed)
    assert result == Refused("replayed", replayed.detail, by_verifier=True)


def test_held_answer_is_a_fact_only_under_review() -> None:
    """The held answer counts only under review, as when the desk reads the posted comment."""
    held = _held()
    assert first_facts(SIGNED, TicketState.OPEN, by_bot=False, held=held).candidate is None
    under_review = first_facts(SIGNED, TicketState.NEEDS_REVIEW, by_bot=False, held=held)
    assert under_review.candidate is held
    assert under_review.signed
    assert not under_review.draft
