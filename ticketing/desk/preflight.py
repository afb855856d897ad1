"""What the desk will do with a signed comment, asked before the comment is posted.

The desk API posts an editor's signed comment on their behalf (:mod:`proxy.desk_api.
posting`). Posting one the desk then refuses leaves a useless comment and a bot reply on
the public ticket, so the API first runs the desk's own decision table
(:func:`ticketing.desk.decisions.decide`) over the facts the desk will gather once the
comment is posted: the ticket's state, the answer held for review (its signer and
``on_behalf_of``), the signature verified with the keyring (key, roles, reference, act,
digest, window, unused jti), and for an answer its release against the request and the
review policy. :func:`foresee` is that loop, pure, over two callables; :func:`preflight`
gives it the desk's store, settings and keyring. The first facts and the release check are
shared with :mod:`ticketing.desk.comments`, so the two cannot drift apart.

Two facts cannot be known before posting and are taken at their best: the author is the
signing key's owner (GitHub says who posted only afterwards, and the desk checks it then),
and the jti, unused now, is claimed by the desk only when it meets the posted comment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

import jwt

from auth.comment import TRAILER_PREFIX, split_signed_comment
from auth.errors import CommentFormatError
from auth.keyring import Keyring
from auth.policy import ReviewPolicy
from auth.review_decision import ReviewDecision, decide_for_agent
from auth.review_decision import decide as decide_review
from auth.verify import Accepted, Rejected, Verdict, verify_comment
from ticketing.release import Refusal, Release, prepare_release
from ticketing.render.drafts import DRAFT_MARKER_PREFIX
from ticketing.render.replies import is_bot_reply
from ticketing.request import ChatRequest
from ticketing.store.interface import TicketStore
from ticketing.store.model import Candidate, Ticket, TicketState

from . import decisions as d
from .settings import DeskSettings

__all__ = ["Refused", "check_release", "first_facts", "foresee", "preflight"]

UNSIGNED = (
    "the comment has no signature trailer; sign it with your key and post it with the"
    " trailer as its last line"
)
# What a refusal without a detail of its own (a late answer) tells the editor.
_LATE = "issue #{number} is {state}: it takes no answer or judgement any more"


@dataclass(frozen=True)
class Refused:
    """The desk would refuse the comment: its reason (as the desk counts it) and what to fix.

    ``by_verifier``: the signature does not verify for this ticket (the reason is the
    verifier's); otherwise the signature is good and the desk refuses what it does.
    """

    reason: str
    detail: str
    by_verifier: bool


def first_facts(
    body: str, state: TicketState | None, *, by_bot: bool, held: Candidate | None = None
) -> d.CommentFacts:
    """Return the facts a comment's text gives, before anything is verified."""
    return d.CommentFacts(
        from_bot=by_bot or is_bot_reply(body),
        signed=TRAILER_PREFIX in body,
        draft=DRAFT_MARKER_PREFIX in body,
        state=state,
        candidate=held if state is TicketState.NEEDS_REVIEW else None,
    )


def check_release(
    verdict: Accepted, request: ChatRequest | None, *, call_id_seed: str, policy: ReviewPolicy
) -> tuple[Release | Refusal, ReviewDecision | None]:
    """Read a verified answer against its request, and what the review policy asks of it."""
    release = (
        prepare_release(verdict.text, request, call_id_seed=call_id_seed)
        if request is not None
        else Release(content=verdict.text, tool_calls=(), finish_reason="stop")
    )
    if not isinstance(release, Release):
        return release, None
    if verdict.ask:
        release = replace(release, ask=True)
    review = decide_review(policy, release.commands())
    if verdict.agent is not None:
        review = decide_for_agent(review, release.commands(), agent=verdict.agent.describe())
    return release, review


def foresee(
    facts: d.CommentFacts,
    *,
    verify: Callable[[d.Verify], Verdict],
    check: Callable[[Accepted], tuple[Release | Refusal, ReviewDecision | None]],
    number: int,
) -> Accepted | Refused:
    """Run the decision table as far as it goes before posting: the verdict, or the refusal."""
    while True:
        step = d.decide(facts)
        if isinstance(step, d.Verify):
            facts = replace(facts, verdict=verify(step))
        elif isinstance(step, d.ClaimJti):
            facts = replace(facts, jti_fresh=True)  # the verifier found it unused
        elif isinstance(step, d.CheckRelease):
            assert isinstance(facts.verdict, Accepted)
            release, review = check(facts.verdict)
            facts = replace(facts, release=release, review=review)
        elif isinstance(step, d.Refuse):
            return _refused(step, facts, number)
        elif isinstance(step, d.Ignore):
            if not facts.signed:
                return Refused("unsigned", UNSIGNED, by_verifier=True)
            return Refused("ignored", f"the desk would ignore it ({step.why})", by_verifier=False)
        else:
            # A judgement to record, or an answer to accept or hold: the desk takes it.
            assert isinstance(facts.verdict, Accepted)
            return facts.verdict


def _refused(refusal: d.Refuse, facts: d.CommentFacts, number: int) -> Refused:
    verdict = facts.verdict
    by_verifier = isinstance(verdict, Rejected) and verdict.reason.value == refusal.reason
    detail = refusal.detail or "; ".join(refusal.problems)
    if not detail and facts.state is not None:
        detail = _LATE.format(number=number, state=facts.state.value)
    return Refused(refusal.reason, detail, by_verifier=by_verifier)


def preflight(
    body: str,
    *,
    ticket: Ticket,
    store: TicketStore,
    settings: DeskSettings,
    keyring: Keyring,
    now: datetime,
) -> Accepted | Refused:
    """Return what the desk will do with ``body`` once posted on ``ticket`` by its key's owner."""
    assert ticket.issue_number is not None
    held = store.pending_candidate(ticket.id) if ticket.state is TicketState.NEEDS_REVIEW else None

    def verify(step: d.Verify) -> Verdict:
        return verify_comment(
            body,
            author_login=_key_owner(body, keyring),
            author_id=None,
            ticket=settings.ticket_ref(ticket),
            keyring=keyring,
            now=now,
            is_jti_used=store.is_jti_used,
            acts=step.acts,
            judged_digest=step.judged_digest,
            limits=settings.verify_limits,
        )

    def check(verdict: Accepted) -> tuple[Release | Refusal, ReviewDecision | None]:
        stored = store.request_for(ticket.id)
        request = ChatRequest.from_json(stored) if stored else None
        return check_release(
            verdict, request, call_id_seed=ticket.request_key, policy=settings.policy
        )

    facts = first_facts(body, ticket.state, by_bot=False, held=held)
    return foresee(facts, verify=verify, check=check, number=ticket.issue_number)


def _key_owner(body: str, keyring: Keyring) -> str:
    """Return the login of the key the signature names ("" if none): the author to be."""
    try:
        _, token = split_signed_comment(body)
        kid = jwt.get_unverified_header(token).get("kid") if token else None
    except (CommentFormatError, jwt.PyJWTError, ValueError):
        kid = None  # verify_comment says what is wrong with it
    entry = keyring.get(kid) if isinstance(kid, str) else None
    return "" if entry is None else entry.login
