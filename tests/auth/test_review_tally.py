"""Tests for auth.review_tally: counting the approvals and rejections of an answer."""

from __future__ import annotations

from datetime import timedelta

import pytest

from auth.review_tally import Judgement, tally_review
from auth.roles import Act
from auth.verify import Accepted
from tests.helpers.signing_team import NOW

DIGEST = "a" * 64
OTHER_DIGEST = "b" * 64


def judgement(
    reviewer: str,
    seconds: int,
    *,
    act: Act = Act.APPROVE,
    digest: str = DIGEST,
    comment_id: int | None = None,
) -> Judgement:
    """Return a verified judgement by ``reviewer`` posted ``seconds`` after NOW."""
    return Judgement(
        act=act,
        reviewer=reviewer,
        kid=f"kid-{reviewer}",
        jti=f"jti-{reviewer}-{seconds}",
        digest=digest,
        comment_id=comment_id or 100 + seconds,
        posted_at=NOW + timedelta(seconds=seconds),
    )


def test_two_distinct_reviewers_approve_an_answer_needing_two() -> None:
    """Two approvals by different reviewers release an answer that needs two."""
    result = tally_review(
        2,
        answer_signer="alice",
        answer_digest=DIGEST,
        answer_posted_at=NOW,
        judgements=[judgement("bob", 10), judgement("carol", 20)],
    )
    assert result.state == "approved"
    assert result.approvers == ("bob", "carol")


def test_self_approval_does_not_count() -> None:
    """The answer's own author approving it (in any letter case) leaves it pending."""
    result = tally_review(
        1,
        answer_signer="alice",
        answer_digest=DIGEST,
        answer_posted_at=NOW,
        judgements=[judgement("Alice", 10)],
    )
    assert result.state == "pending"
    assert result.approvers == ()
    assert "approved their own answer" in result.ignored[0]


def test_one_reviewer_approving_twice_counts_once() -> None:
    """A double click is one approval, not two."""
    result = tally_review(
        2,
        answer_signer="alice",
        answer_digest=DIGEST,
        answer_posted_at=NOW,
        judgements=[judgement("bob", 10), judgement("BOB", 20)],
    )
    assert result.state == "pending"
    assert result.approvers == ("bob",)
    assert "more than once" in result.ignored[0]


def test_approval_for_another_digest_does_not_count() -> None:
    """An approval of a different text leaves the answer pending."""
    result = tally_review(
        1,
        answer_signer="alice",
        answer_digest=DIGEST,
        answer_posted_at=NOW,
        judgements=[judgement("bob", 10, digest=OTHER_DIGEST)],
    )
    assert result.state == "pending"
    assert "for another text" in result.ignored[0]


def test_approval_posted_before_the_answer_does_not_count() -> None:
    """An approval that predates the answer cannot have reviewed it."""
    result = tally_review(
        1,
        answer_signer="alice",
        answer_digest=DIGEST,
        answer_posted_at=NOW,
        judgements=[judgement("bob", -30)],
    )
    assert result.state == "pending"
    assert "before the answer" in result.ignored[0]


def test_rejection_before_enough_approvals_stops_the_answer() -> None:
    """A rejection wins over approvals that come after it."""
    result = tally_review(
        2,
        answer_signer="alice",
        answer_digest=DIGEST,
        answer_posted_at=NOW,
        judgements=[
            judgement("bob", 10),
            judgement("carol", 20, act=Act.REJECT),
            judgement("dave", 30),
        ],
    )
    assert result.state == "rejected"
    assert result.rejection is not None
    assert result.rejection.reviewer == "carol"
    assert result.approvers == ("bob",)


def test_rejection_after_approval_changes_nothing() -> None:
    """Once approved (and released) a later rejection is only noted."""
    result = tally_review(
        1,
        answer_signer="alice",
        answer_digest=DIGEST,
        answer_posted_at=NOW,
        judgements=[judgement("carol", 20, act=Act.REJECT), judgement("bob", 10)],
    )
    assert result.state == "approved"
    assert result.rejection is None
    assert "already approved" in result.ignored[0]


def test_answer_needing_no_approval_is_approved_with_no_judgements() -> None:
    """required 0 is approved at once."""
    result = tally_review(
        0, answer_signer="alice", answer_digest=DIGEST, answer_posted_at=NOW, judgements=()
    )
    assert result.state == "approved"


def test_judgement_is_not_made_from_an_answer_verdict() -> None:
    """Judgement.from_accepted refuses an answer verdict, so answers never count as approvals."""
    answer = Accepted("t", Act.ANSWER, "alice", "k", "j", DIGEST, NOW, NOW)
    with pytest.raises(ValueError, match="not a judgement"):
        Judgement.from_accepted(answer, comment_id=1, posted_at=NOW)
