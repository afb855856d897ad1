"""What a signed comment does to its ticket: the desk's decision table, pure.

Sans I/O, as gidgethub's ``sansio`` is: :func:`decide` reads what is known about a comment
(:class:`CommentFacts`) and returns either the next fact the desk must establish (a
:data:`Step`: verify the signature, claim its jti, check the release, record the
judgement) or what to do (an :data:`Action`). The desk (:mod:`ticketing.desk.comments`)
establishes the fact asked for, adds it to the facts and asks again, until an action
comes back; then it carries the action out. No clock is read and nothing is written here,
so every row of the table is tested as values in and values out.

The table, in order::

    the bot's own comment, or a bot reply              ignore
    no ticket on the issue, or no signature trailer    ignore
    ticket under review:
        no answer waits for review                     ignore
        signature does not verify (approve/reject)     refuse review:<reason>
        its jti was used                               refuse review:replayed
        the answer's author approves it                refuse review:self-approval
        the judgement was recorded already             ignore
        tally approved                                 release the answer under review
        tally rejected                                 reopen the ticket
        tally still short                              wait for more approvals
    ticket not open (answered, delivered, expired):
        this comment is its accepted answer            ignore
        any other                                      refuse late
    ticket open:
        this comment is a delegation carried out       ignore
        signed approve/reject                          refuse early-judgement
        signature does not verify                      refuse rejected:<reason> (unsigned:
                                                       counted, not replied to)
        its jti was used                               refuse rejected:replayed
        a signed delegate (editor role, checked above) delegate to sub-questions
        the answer cannot be released                  refuse unreleasable
        the review policy asks for approvals           hold for review
        otherwise                                      accept
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from auth.logins import same_login
from auth.review_decision import ReviewDecision
from auth.review_tally import ReviewTally
from auth.roles import Act
from auth.verify import Accepted, RejectReason, Verdict
from ticketing.release import Refusal, Release
from ticketing.store.model import Candidate, TicketState

__all__ = [
    "ANSWERING",
    "JUDGING",
    "REPLAYED",
    "Accept",
    "Action",
    "AwaitApprovals",
    "CheckRelease",
    "ClaimJti",
    "CommentFacts",
    "Delegate",
    "HoldForReview",
    "Ignore",
    "RecordJudgement",
    "Refuse",
    "ReleaseApproved",
    "ReopenRejected",
    "Reply",
    "Step",
    "Verify",
    "decide",
]

# An open ticket takes an answer, or an editor's delegation of it into sub-questions.
ANSWERING = frozenset({Act.ANSWER, Act.DELEGATE})
JUDGING = frozenset({Act.APPROVE, Act.REJECT})
REPLAYED = "This signature was already used; sign the answer again to post it anew."
EARLY_JUDGEMENT = (
    "no answer is waiting for review on this ticket; approvals and rejections"
    " count only after the bot asks for a review"
)
SELF_APPROVAL = "the author of an answer cannot approve it; another reviewer must"
DRAFT_AS_ANSWER = (
    "this comment carries a draft's marker: a draft is a suggestion and never an answer;"
    " sign the draft's text and post it without the draft's markup"
)


@dataclass(frozen=True)
class CommentFacts:
    """What the desk knows about one comment so far; later facts start as None."""

    # The bot's own account wrote it, or it carries the bot's reply marker.
    from_bot: bool
    # Its text holds a signature trailer.
    signed: bool
    # The state of the ticket on the comment's issue; None: the issue is no ticket's.
    state: TicketState | None
    # This comment is the ticket's accepted answer (read for tickets no longer open).
    is_accepted_answer: bool = False
    # The answer under review (read for tickets under review).
    candidate: Candidate | None = None
    verdict: Verdict | None = None
    jti_fresh: bool | None = None
    release: Release | Refusal | None = None
    review: ReviewDecision | None = None
    recorded: bool | None = None
    tally: ReviewTally | None = None
    # Its text holds a draft's marker (ticketing.render.drafts): a draft posing as an answer.
    draft: bool = False
    # This comment already split its (open) ticket into children: a delegation seen again.
    delegated: bool = False


# --- steps: the next fact the desk must establish ---------------------------------------


@dataclass(frozen=True)
class Verify:
    """Verify the signature for these acts (a judgement: of the answer with this digest)."""

    acts: frozenset[Act]
    judged_digest: str | None = None


@dataclass(frozen=True)
class ClaimJti:
    """Claim the accepted signature's jti for this comment, among replicas."""


@dataclass(frozen=True)
class CheckRelease:
    """Read the answer against its request, and the release against the review policy."""


@dataclass(frozen=True)
class RecordJudgement:
    """Record the reviewer's verified judgement, then tally the review."""


Step = Verify | ClaimJti | CheckRelease | RecordJudgement


# --- actions: what the desk does ------------------------------------------------------------


class Reply(Enum):
    """Which reply the bot gives a refused comment."""

    LATE = "late"  # the ticket is no longer open
    REJECTION = "rejection"  # the detail says what to fix
    UNRELEASABLE = "unreleasable"  # the problems say what to fix


@dataclass(frozen=True)
class Ignore:
    """Do nothing: the comment is not an answer or judgement, or was counted before."""

    why: str


@dataclass(frozen=True)
class Refuse:
    """Count the refusal under ``reason``; reply once (kind ``kind``) unless ``kind`` is None."""

    reason: str
    kind: str | None
    reply: Reply
    detail: str = ""
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Accept:
    """Commit the verified answer and release it to the waiting clients."""

    verdict: Accepted
    release: Release


@dataclass(frozen=True)
class Delegate:
    """Split the open ticket into the verified delegation's sub-questions; it keeps waiting."""

    verdict: Accepted


@dataclass(frozen=True)
class HoldForReview:
    """Keep the verified answer from the agent until reviewers approve it."""

    verdict: Accepted
    release: Release
    decision: ReviewDecision


@dataclass(frozen=True)
class ReleaseApproved:
    """The review approved the answer under it: release it."""

    tally: ReviewTally


@dataclass(frozen=True)
class ReopenRejected:
    """A reviewer rejected the answer under review: the ticket waits for another answer."""

    verdict: Accepted


@dataclass(frozen=True)
class AwaitApprovals:
    """The judgement counted; the answer needs more approvals."""

    tally: ReviewTally


Action = (
    Ignore
    | Refuse
    | Accept
    | Delegate
    | HoldForReview
    | ReleaseApproved
    | ReopenRejected
    | AwaitApprovals
)


def decide(facts: CommentFacts) -> Step | Action:
    """Return the next fact to establish about a comment, or what the comment does."""
    if facts.from_bot:
        return Ignore("the bot's own comment")
    if facts.state is None or not facts.signed:
        # Not one of our tickets, or ordinary discussion: neither can answer.
        return Ignore("no ticket, or no signature")
    if facts.draft:
        return Refuse("draft", "rejected:draft", Reply.REJECTION, DRAFT_AS_ANSWER)
    if facts.state is TicketState.NEEDS_REVIEW:
        return _judgement(facts)
    if facts.state is not TicketState.OPEN:
        if facts.is_accepted_answer:
            return Ignore("the accepted answer, seen again")
        return Refuse("late", "late", Reply.LATE)
    if facts.delegated:
        return Ignore("the delegation, seen again")
    return _answer(facts)


def _answer(facts: CommentFacts) -> Step | Action:
    """Decide what a signed comment on an open ticket does."""
    verdict = facts.verdict
    if verdict is None:
        return Verify(ANSWERING)
    if not isinstance(verdict, Accepted):
        if verdict.reason is RejectReason.WRONG_ACT:
            # A signed approval or rejection, but no answer waits for review yet.
            return Refuse("early-judgement", "early-judgement", Reply.REJECTION, EARLY_JUDGEMENT)
        reason = verdict.reason.value
        kind = None if verdict.reason is RejectReason.UNSIGNED else f"rejected:{reason}"
        return Refuse(reason, kind, Reply.REJECTION, verdict.detail)
    if facts.jti_fresh is None:
        return ClaimJti()
    if not facts.jti_fresh:
        replayed = RejectReason.REPLAYED.value
        return Refuse(replayed, f"rejected:{replayed}", Reply.REJECTION, REPLAYED)
    if verdict.act is Act.DELEGATE:
        # Single-use like any act: its jti is spent above before anything is split.
        return Delegate(verdict)
    if facts.release is None:
        return CheckRelease()
    if isinstance(facts.release, Refusal):
        return Refuse(
            "unreleasable", "unreleasable", Reply.UNRELEASABLE, problems=facts.release.problems
        )
    if facts.review is None:
        raise ValueError("a release is checked together with its review decision")
    if facts.review.required_approvals > 0:
        return HoldForReview(verdict, facts.release, facts.review)
    return Accept(verdict, facts.release)


def _authored(login: str, candidate: Candidate) -> bool:
    """Return whether ``login`` wrote the answer, or is the editor whose agent wrote it."""
    behalf = candidate.on_behalf_of
    return same_login(login, candidate.signer) or (behalf is not None and same_login(login, behalf))


def _judgement(facts: CommentFacts) -> Step | Action:
    """Decide what a signed comment on a ticket under review does."""
    candidate = facts.candidate
    if candidate is None:
        return Ignore("no answer waits for review")
    verdict = facts.verdict
    if verdict is None:
        return Verify(JUDGING, judged_digest=candidate.digest)
    if not isinstance(verdict, Accepted):
        detail = {
            RejectReason.WRONG_ACT: "an answer is already waiting for review; a reviewer"
            " must reject it before another answer can count",
            RejectReason.TEXT_MISMATCH: "this review is for a different text than the"
            f" answer under review (sha256 {candidate.digest})",
        }.get(verdict.reason, verdict.detail)
        reason = verdict.reason.value
        return Refuse(reason, f"review:{reason}", Reply.REJECTION, detail)
    if facts.jti_fresh is None:
        return ClaimJti()
    if not facts.jti_fresh:
        return Refuse("replayed", "review:replayed", Reply.REJECTION, REPLAYED)
    if verdict.act is Act.APPROVE and _authored(verdict.signer, candidate):
        return Refuse("self-approval", "review:self-approval", Reply.REJECTION, SELF_APPROVAL)
    if facts.recorded is None:
        return RecordJudgement()
    if not facts.recorded:
        return Ignore("the judgement was recorded before")
    tally = facts.tally
    if tally is None:
        raise ValueError("a recorded judgement is decided together with its tally")
    if tally.state == "approved":
        return ReleaseApproved(tally)
    if tally.state == "rejected":
        return ReopenRejected(verdict)
    return AwaitApprovals(tally)
