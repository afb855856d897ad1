"""The review tally: count the verified approvals and rejections of one answer.

Pure: judgements in, a :class:`ReviewTally` out. The live desk and the offline audit both
count with :func:`tally_review`, so they cannot disagree about who counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from auth.logins import same_login
from auth.roles import Act
from auth.verify import Accepted

__all__ = ["Judgement", "ReviewTally", "TallyState", "tally_review"]

TallyState = Literal["approved", "rejected", "pending"]


@dataclass(frozen=True)
class Judgement:
    """A verified approval or rejection of an answer: who, with which key, and when posted."""

    act: Act
    reviewer: str
    kid: str
    jti: str
    digest: str
    comment_id: int
    posted_at: datetime

    @classmethod
    def from_accepted(cls, verdict: Accepted, *, comment_id: int, posted_at: datetime) -> Judgement:
        """Build a judgement from :func:`auth.verify.verify_comment`'s approve/reject verdict."""
        if verdict.act is Act.ANSWER:
            raise ValueError("an answer is not a judgement; verify with acts={APPROVE, REJECT}")
        return cls(
            act=verdict.act,
            reviewer=verdict.signer,
            kid=verdict.kid,
            jti=verdict.jti,
            digest=verdict.digest,
            comment_id=comment_id,
            posted_at=posted_at,
        )


@dataclass(frozen=True)
class ReviewTally:
    """Where an answer's review stands, who counted, and which judgements did not."""

    state: TallyState
    approvals: tuple[Judgement, ...]
    rejection: Judgement | None
    ignored: tuple[str, ...]

    @property
    def approvers(self) -> tuple[str, ...]:
        """Return the logins whose approvals counted, in order."""
        return tuple(j.reviewer for j in self.approvals)


def tally_review(
    required_approvals: int,
    *,
    answer_signer: str,
    answer_digest: str,
    answer_posted_at: datetime,
    judgements: Sequence[Judgement],
) -> ReviewTally:
    """Count judgements, in the order they were posted, against the approvals required.

    An approval counts once per reviewer, never from the answer's own signer, only for this
    answer's digest and only if posted after the answer. The first decisive event wins: the
    required number of approvals releases the answer, and a rejection before that stops it.
    Approvals after the decision are still listed, but change nothing.
    """
    counted: list[Judgement] = []
    ignored: list[str] = []
    rejection: Judgement | None = None
    state: TallyState = "approved" if required_approvals <= 0 else "pending"
    for judgement in sorted(judgements, key=lambda j: (j.posted_at, j.comment_id)):
        who = judgement.reviewer
        verb = "approval" if judgement.act is Act.APPROVE else "rejection"
        if judgement.digest != answer_digest:
            ignored.append(f"{who}'s {verb} (comment {judgement.comment_id}) is for another text")
            continue
        if judgement.posted_at < answer_posted_at:
            ignored.append(
                f"{who}'s {verb} (comment {judgement.comment_id}) was posted before the answer"
            )
            continue
        if judgement.act is Act.REJECT:
            if state == "pending":
                state, rejection = "rejected", judgement
            elif state == "approved":
                why = "needed no approval" if required_approvals <= 0 else "was already approved"
                ignored.append(f"{who}'s rejection did not count: the answer {why}")
            continue
        if same_login(who, answer_signer):
            ignored.append(f"{who} approved their own answer; another reviewer must approve it")
            continue
        if any(same_login(who, j.reviewer) for j in counted):
            ignored.append(f"{who} approved more than once; each reviewer counts once")
            continue
        if state == "rejected":
            ignored.append(f"{who}'s approval came after the answer was rejected")
            continue
        counted.append(judgement)
        if state == "pending" and len(counted) >= required_approvals:
            state = "approved"
    return ReviewTally(
        state=state, approvals=tuple(counted), rejection=rejection, ignored=tuple(ignored)
    )
