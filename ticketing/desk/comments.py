"""Where a signed comment is verified and acted on: the executor of the decision table.

:meth:`SignedComments.consider` gathers the facts about one comment (its ticket, the
answer or candidate it meets), asks :func:`ticketing.desk.decisions.decide` what to do,
establishes each fact that asks for (the signature verified by :func:`auth.verify.
verify_comment`, the jti claimed among replicas, the release checked by
:func:`ticketing.release.prepare_release` and the review policy, the judgement recorded),
and carries out the action: accept and release, hold for review, count a judgement, or
refuse with one reply.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from auth.keyring import Keyring
from auth.oidc import OidcTrust
from auth.oidc_comment import oidc_token_kid
from auth.verify import Accepted, Verdict, verify_comment
from ticketing.clock import Clock
from ticketing.coordination import Coordinator
from ticketing.github.interface import Comment
from ticketing.github.write_queue import WriteQueue
from ticketing.oidc_keys import OidcKeys
from ticketing.release import Release
from ticketing.render.replies import (
    AGENT_ANSWER,
    is_bot_reply,
    render_agent_answer_notice,
    render_late_answer_reply,
    render_rejection_reply,
    render_unreleasable_reply,
)
from ticketing.request import ChatRequest
from ticketing.store.interface import TicketStore
from ticketing.store.model import ReplyClaim, StoredAnswer, Ticket, TicketState

from . import decisions as d
from .counters import AnswerCounters
from .delegations import Delegations
from .outcome import encode_release
from .preflight import check_release, first_facts
from .review import Review, queue_answered_label
from .runs import Runs
from .settings import REACTION_REFUSED, DeskSettings
from .waiters import Waiters

__all__ = ["SignedComments"]

log = logging.getLogger(__name__)


class SignedComments:
    """Verify each new comment on a ticket and do what the decision table says."""

    def __init__(
        self,
        *,
        store: TicketStore,
        followups: WriteQueue,
        coordinator: Coordinator,
        keyring: Callable[[], Keyring],
        waiters: Waiters,
        runs: Runs,
        review: Review,
        counters: AnswerCounters,
        settings: DeskSettings,
        clock: Clock,
        bot_login: str | None,
        delegations: Delegations,
        oidc_keys: OidcKeys | None = None,
    ) -> None:
        self._store = store
        self._delegations = delegations
        self._oidc_keys = oidc_keys
        self._followups = followups
        self._coordinator = coordinator
        self._keyring = keyring
        self._waiters = waiters
        self._runs = runs
        self._review = review
        self._counters = counters
        self.settings = settings
        self._clock = clock
        self._bot_login = bot_login

    async def consider(self, comment: Comment) -> None:
        """Act on one new or edited comment, found by the poll or a webhook."""
        facts, ticket = self._first_facts(comment)
        request: ChatRequest | None = None
        keyring: Keyring | None = None
        while True:
            step = d.decide(facts)
            if isinstance(step, d.Verify):
                assert ticket is not None
                # Read once, before anything is written: while the file cannot be read,
                # KeyringUnavailable leaves the comment untouched for the finder to retry.
                keyring = self._keyring()
                trust = await self._oidc_trust(comment, keyring)
                verdict = self._verify(ticket, comment, step, keyring, trust)
                facts = replace(facts, verdict=verdict)
            elif isinstance(step, d.ClaimJti):
                assert isinstance(facts.verdict, Accepted)
                facts = replace(facts, jti_fresh=await self._claim_jti(facts.verdict, comment))
            elif isinstance(step, d.CheckRelease):
                assert ticket is not None
                assert isinstance(facts.verdict, Accepted)
                stored = self._store.request_for(ticket.id)
                request = ChatRequest.from_json(stored) if stored else None
                release, review = check_release(
                    facts.verdict,
                    request,
                    call_id_seed=ticket.request_key,
                    policy=self.settings.policy,
                )
                facts = replace(facts, release=release, review=review)
            elif isinstance(step, d.RecordJudgement):
                assert ticket is not None
                assert facts.candidate is not None
                assert isinstance(facts.verdict, Accepted)
                tally = self._review.record(ticket, comment, facts.candidate, facts.verdict)
                facts = replace(facts, recorded=tally is not None, tally=tally)
            else:
                if isinstance(step, d.Delegate) and ticket is not None:
                    await self._delegations.delegate(ticket, comment, step.verdict)
                elif ticket is not None:
                    self._act(step, ticket, comment, facts, request, keyring)
                return

    def _first_facts(self, comment: Comment) -> tuple[d.CommentFacts, Ticket | None]:
        """Read what the decision starts from: who wrote it, its ticket, what the ticket holds."""
        bot = self._bot_login
        from_bot = bot is not None and comment.author_login.lower() == bot.lower()
        ticket = (
            None
            if from_bot or is_bot_reply(comment.body)
            else self._store.ticket_for_issue(comment.issue_number)
        )
        state = None if ticket is None else ticket.state
        facts = first_facts(comment.body, state, by_bot=from_bot)
        if ticket is None or not facts.signed:
            return facts, ticket
        if ticket.state is TicketState.OPEN:
            # Recorded as an act when its jti was spent, before any child opened.
            acts = self._store.delegation_acts_of(ticket.id)
            split = self._store.delegations_of(ticket.id)
            seen = {a.comment_id for a in acts} | {s.comment_id for s in split}
            facts = replace(facts, delegated=comment.id in seen)
        elif ticket.state is TicketState.NEEDS_REVIEW:
            facts = replace(facts, candidate=self._store.pending_candidate(ticket.id))
        else:
            answer = self._store.answer_for(ticket.id)
            accepted = answer is not None and answer.comment_id == comment.id
            facts = replace(facts, is_accepted_answer=accepted)
        return facts, ticket

    async def _oidc_trust(self, comment: Comment, keyring: Keyring) -> OidcTrust | None:
        """Return the OIDC issuer's keys when the comment is an agent's keyless signature."""
        kid = oidc_token_kid(comment.body)
        # Fetched only when some workflow is listed: otherwise no token can count anyway.
        if kid is None or self._oidc_keys is None or not keyring.oidc_agents:
            return None
        # May raise OidcKeysUnavailable: the finder keeps the comment and comes back to it.
        return await self._oidc_keys.trust_for(kid)

    def _verify(
        self,
        ticket: Ticket,
        comment: Comment,
        step: d.Verify,
        keyring: Keyring,
        trust: OidcTrust | None,
    ) -> Verdict:
        """Verify a signed comment on this ticket with the keyring and the used jtis."""
        return verify_comment(
            comment.body,
            author_login=comment.author_login,
            author_id=comment.author_id,
            ticket=self.settings.ticket_ref(ticket),
            keyring=keyring,
            now=self._clock(),
            is_jti_used=self._store.is_jti_used,
            acts=step.acts,
            judged_digest=step.judged_digest,
            limits=self.settings.verify_limits,
            oidc=trust,
        )

    async def _claim_jti(self, verdict: Accepted, comment: Comment) -> bool:
        """Claim the signature's jti for this comment among replicas; False if it is taken."""
        limits = self.settings.verify_limits
        # Kept as long as any signature can be valid: past that, its own exp refuses it.
        ttl = limits.max_lifetime + 2 * limits.leeway
        holder = f"comment:{comment.id}"
        if await self._coordinator.claim_jti(verdict.jti, holder=holder, ttl=ttl):
            return True
        log.info(
            "comment %d by %s refused: its jti was already used by another comment",
            comment.id,
            comment.author_login,
        )
        return False

    def _act(
        self,
        action: d.Action,
        ticket: Ticket,
        comment: Comment,
        facts: d.CommentFacts,
        request: ChatRequest | None,
        keyring: Keyring | None,
    ) -> None:
        """Carry out what the decision table said."""
        if isinstance(action, d.Refuse):
            self._refuse(ticket, comment, action)
        elif isinstance(action, d.Accept):
            self._accept(ticket, comment, action.verdict, action.release, request)
        elif isinstance(action, d.HoldForReview):
            assert keyring is not None
            self._review.hold(
                ticket, comment, action.verdict, action.release, action.decision, keyring
            )
        elif isinstance(action, d.ReleaseApproved):
            assert facts.candidate is not None
            self._review.release_approved(
                ticket, comment.issue_number, facts.candidate, action.tally
            )
        elif isinstance(action, d.ReopenRejected):
            assert facts.candidate is not None
            self._review.reopen_rejected(ticket, comment, facts.candidate, action.verdict)
        elif isinstance(action, d.AwaitApprovals):
            assert facts.candidate is not None
            log.info(
                "request_id=%s ticket %d: %d of %d approval(s)",
                ticket.request_id,
                ticket.id,
                len(action.tally.approvals),
                facts.candidate.required,
            )

    def _accept(
        self,
        ticket: Ticket,
        comment: Comment,
        verdict: Accepted,
        release: Release,
        request: ChatRequest | None,
    ) -> None:
        stored = StoredAnswer(
            ticket_id=ticket.id,
            comment_id=comment.id,
            comment_url=comment.url,
            text=verdict.text,
            signer=verdict.signer,
            kid=verdict.kid,
            jti=verdict.jti,
            digest=verdict.digest,
            accepted_at=self._clock(),
            delivered_at=None,
            release=encode_release(release),
        )
        label = queue_answered_label(self._followups, ticket, comment.issue_number)
        if not self._store.accept_answer(stored):
            self._followups.cancel(label, "the ticket was no longer open")
            return
        self._runs.link_reply(ticket, release, request)
        self._delegations.answered(ticket)
        self._counters.accepted += 1
        by = verdict.signer if verdict.agent is None else verdict.agent.describe()
        log.info(
            "request_id=%s ticket %d answered by %s (kid %s, comment %d)",
            ticket.request_id,
            ticket.id,
            by,
            verdict.kid,
            comment.id,
        )
        if verdict.agent is not None:
            self._tell_agent_answered(ticket, comment, verdict)
        self._waiters.notify(ticket.id)

    def _tell_agent_answered(self, ticket: Ticket, comment: Comment, verdict: Accepted) -> None:
        """Say on the ticket that an agent answered, whose, and that its token was valid."""
        assert verdict.agent is not None
        proof = verdict.agent.oidc
        body = render_agent_answer_notice(
            comment_url=comment.url,
            on_behalf_of=verdict.agent.on_behalf_of,
            poster=comment.author_login,
            proof=None if proof is None else proof.describe(),
        )
        self._followups.reply_once(
            comment.issue_number,
            body,
            claim=ReplyClaim(comment_id=comment.id, ticket_id=ticket.id, kind=AGENT_ANSWER),
            request_id=ticket.request_id,
        )

    def _refuse(self, ticket: Ticket, comment: Comment, refusal: d.Refuse) -> None:
        """Count a refused signed comment and tell its author why, once."""
        self._counters.rejected[refusal.reason] += 1
        if refusal.reply is not d.Reply.LATE:
            log.info(
                "request_id=%s comment %d by %s refused (%s): %s",
                ticket.request_id,
                comment.id,
                comment.author_login,
                refusal.kind or refusal.reason,
                refusal.detail or "; ".join(refusal.problems),
            )
        # One reply per comment, and a cap per ticket, so that replies cannot be used to
        # make the bot spam the repository.
        if refusal.kind is None or (
            self._store.count_replies(ticket.id) >= self.settings.max_replies_per_ticket
        ):
            return
        self._followups.reply_once(
            comment.issue_number,
            self._reply_body(ticket, comment, refusal),
            claim=ReplyClaim(comment_id=comment.id, ticket_id=ticket.id, kind=refusal.kind),
            reaction=REACTION_REFUSED,
            request_id=ticket.request_id,
        )

    @staticmethod
    def _reply_body(ticket: Ticket, comment: Comment, refusal: d.Refuse) -> str:
        """Render the bot's reply to a refused comment."""
        if refusal.reply is d.Reply.LATE:
            return render_late_answer_reply(comment_url=comment.url, state=ticket.state.value)
        if refusal.reply is d.Reply.UNRELEASABLE:
            return render_unreleasable_reply(
                comment_url=comment.url, author=comment.author_login, problems=refusal.problems
            )
        return render_rejection_reply(
            comment_url=comment.url, author=comment.author_login, detail=refusal.detail
        )
