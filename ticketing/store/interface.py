"""What the desk needs from a ticket store, one protocol per part of its state.

A store keeps everything a restart must not lose. Each protocol below is one part of
that state; :class:`TicketStore` is all of them, and is what the desk is given. Code that
needs only one part (the write queue, say) asks for that protocol, so an in-memory fake
of that part is enough to test it. :class:`~ticketing.store.sqlite.SQLiteTicketStore` is
the store ticketproxy runs on by default, and
:class:`~ticketing.store.postgres.PostgresTicketStore` the one replicas on several hosts
share.

The promises every store keeps, whatever its database:

- a check and the write it guards are one transaction: the first valid answer wins, a
  signature's ``jti`` is spent once, and a comment's one reply is queued with its claim;
- methods that report a race (``accept_answer``, ``expire``, ``claim_draft``, ...) return
  False, changing nothing, when another caller (or another replica) got there first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from ticketing.oidc_archive import ArchivedKey
from ticketing.store.delegation_store import DelegationStore
from ticketing.store.model import (
    Candidate,
    DraftState,
    PollCursor,
    QueuedWrite,
    ReplyClaim,
    StoredAnswer,
    StoredDraft,
    StoredJudgement,
    StoredResponse,
    ThreadStart,
    Ticket,
)
from ticketing.store.task_records import TaskStore
from ticketing.store.tool_tasks import ToolTaskStore


@runtime_checkable
class TicketThreadStore(Protocol):
    """Tickets, and the agent runs (threads) they are steps of."""

    def get_ticket(self, ticket_id: int) -> Ticket | None:
        """Return the ticket with this id."""
        ...

    def latest_ticket_for_key(self, request_key: str) -> Ticket | None:
        """Return the newest ticket opened for this request key."""
        ...

    def open_ticket(
        self,
        request_key: str,
        *,
        request_id: str,
        created: datetime,
        deadline: datetime,
        request: str | None = None,
        client: str | None = None,
        thread: ThreadStart | None = None,
        children_after: int | None = None,
    ) -> Ticket:
        """Insert a ticket in state ``creating`` (the next step of ``thread``) and return it.

        A step past ``children_after`` steps is marked ``own_issue`` (see ticketing.tree).
        """
        ...

    def set_issue(self, ticket_id: int, *, number: int, url: str, now: datetime) -> Ticket:
        """Record the GitHub issue of a ticket and move it from ``creating`` to ``open``."""
        ...

    def request_for(self, ticket_id: int) -> str | None:
        """Return the stored request of a ticket (JSON), if any."""
        ...

    def ticket_for_issue(self, number: int) -> Ticket | None:
        """Return the ticket whose issue has this number."""
        ...

    def pending_tickets(self) -> list[Ticket]:
        """Return every ticket still waiting for an answer, oldest first."""
        ...

    def overdue_tickets(self, now: datetime) -> list[Ticket]:
        """Return the tickets still waiting whose deadline is ``now`` or earlier, oldest first."""
        ...

    def count_pending(self) -> int:
        """Count tickets still waiting for an answer."""
        ...

    def expire(self, ticket_id: int, *, now: datetime) -> bool:
        """Mark a pending ticket expired; return False when it was no longer pending."""
        ...

    def recently_expired(self, *, since: datetime) -> list[Ticket]:
        """Return the tickets that expired at or after ``since``, oldest first."""
        ...

    def link_reply(self, fingerprint: str, ticket_id: int) -> None:
        """Remember that ticket ``ticket_id`` gave the reply with this fingerprint."""
        ...

    def ticket_for_reply(self, fingerprint: str) -> Ticket | None:
        """Return the ticket that gave the reply with this fingerprint, if any."""
        ...

    def name_thread(self, name_key: str, thread_id: int) -> None:
        """Point a client's thread name at an agent run (the newest run with that name wins)."""
        ...

    def thread_for_name(self, name_key: str) -> int | None:
        """Return the agent run a client's thread name points at, if any."""
        ...

    def newest_in_thread(self, thread_id: int) -> Ticket | None:
        """Return the newest step of an agent run."""
        ...

    def ticket_at_step(self, thread_id: int, step: int) -> Ticket | None:
        """Return step ``step`` of an agent run, if it exists."""
        ...

    def own_issue_steps(self, thread_id: int, first: int, last: int) -> list[Ticket]:
        """Return the steps ``first`` to ``last`` of a run that have issues of their own."""
        ...

    def latest_thread_of_client(self, client: str) -> int | None:
        """Return the agent run this client's newest ticket on GitHub belongs to, if any."""
        ...


@runtime_checkable
class AnswerStore(Protocol):
    """Accepted answers, candidates waiting for review, and reviewers' judgements."""

    def is_jti_used(self, jti: str) -> bool:
        """Say whether a signature with this ``jti`` was ever accepted."""
        ...

    def accept_answer(self, answer: StoredAnswer) -> bool:
        """Commit an answer if its ticket is still open and its ``jti`` unused."""
        ...

    def answer_for(self, ticket_id: int) -> StoredAnswer | None:
        """Return the accepted answer of a ticket."""
        ...

    def mark_delivered(self, ticket_id: int, *, now: datetime) -> bool:
        """Record the first delivery of an answer; return False if it was delivered before."""
        ...

    def propose_answer(self, candidate: Candidate) -> bool:
        """Hold a verified answer for review: the ticket must be open and the jti unused."""
        ...

    def pending_candidate(self, ticket_id: int) -> Candidate | None:
        """Return the answer of a ticket that waits for review, if any."""
        ...

    def rejected_candidate(self, ticket_id: int) -> Candidate | None:
        """Return the ticket's first answer that reviewers rejected, if any."""
        ...

    def record_judgement(self, judgement: StoredJudgement, *, ticket_id: int) -> bool:
        """Keep a reviewer's verified judgement; False if its comment or jti was seen before."""
        ...

    def judgements_for(self, candidate_id: int) -> list[StoredJudgement]:
        """Return the judgements recorded on a candidate answer, in posting order."""
        ...

    def approve_candidate(self, candidate: Candidate, *, now: datetime) -> bool:
        """Release an approved candidate as the ticket's answer, in one transaction."""
        ...

    def reject_candidate(self, candidate: Candidate, *, now: datetime) -> bool:
        """Drop a rejected candidate and reopen its ticket for a new answer."""
        ...


@runtime_checkable
class WriteQueueStore(Protocol):
    """The durable queue of GitHub writes, and the one reply each comment may get."""

    def enqueue_write(
        self,
        kind: str,
        *,
        issue_number: int,
        payload: str,
        now: datetime,
        not_before: datetime | None = None,
    ) -> int:
        """Queue one GitHub write, due at ``not_before`` (default now), and return its id."""
        ...

    def enqueue_writes(
        self,
        writes: Sequence[tuple[str, int, str]],
        *,
        now: datetime,
        claim: ReplyClaim | None = None,
        not_before: datetime | None = None,
    ) -> list[int] | None:
        """Queue GitHub writes in one transaction (with ``claim``, only if it is new)."""
        ...

    def due_writes(self, *, now: datetime, limit: int = 50) -> list[QueuedWrite]:
        """Return queued writes whose time has come, oldest first."""
        ...

    def pending_writes(self) -> int:
        """Count writes not yet done."""
        ...

    def next_write_due(self) -> datetime | None:
        """Return when the earliest queued write is due, if any."""
        ...

    def finish_write(self, write_id: int, *, now: datetime, failure: str | None = None) -> None:
        """Mark a queued write done (or abandoned, with the reason)."""
        ...

    def drop_unsent_writes(
        self, kind: str, *, issue_number: int, now: datetime, failure: str
    ) -> int:
        """Finish, with ``failure``, the writes of ``kind`` on an issue never tried yet."""
        ...

    def defer_write(self, write_id: int, *, until: datetime, attempts: int | None = None) -> bool:
        """Try a queued write again later; with ``attempts``, only if no one else took it."""
        ...

    def claim_reply(
        self, comment_id: int, *, ticket_id: int | None, kind: str, now: datetime
    ) -> bool:
        """Reserve the one reply a comment may get; return False if it already had one."""
        ...

    def count_replies(self, ticket_id: int) -> int:
        """Count the replies the bot made on a ticket."""
        ...


@runtime_checkable
class DraftStore(Protocol):
    """An upstream model's one suggested answer per ticket."""

    def claim_draft(
        self, ticket_id: int, *, now: datetime, stale_before: datetime | None = None
    ) -> bool:
        """Reserve the one draft a ticket may get; False if it was claimed before."""
        ...

    def release_draft(self, ticket_id: int) -> None:
        """Give back a claim whose draft was abandoned (its process is stopping)."""
        ...

    def finish_draft(
        self,
        ticket_id: int,
        *,
        state: DraftState,
        now: datetime,
        model: str = "",
        text: str = "",
        digest: str = "",
        detail: str | None = None,
        agent: str | None = None,
    ) -> bool:
        """Record how a claimed draft ended (posted or failed); False if it was not claimed."""
        ...

    def take_agent_draft(
        self, ticket_id: int, *, agent: str, now: datetime, text: str, digest: str, comment_url: str
    ) -> bool:
        """Keep the newest draft ``agent``'s agent posted; False if not dispatched to it."""
        ...

    def draft_for(self, ticket_id: int) -> StoredDraft | None:
        """Return a ticket's draft, in whatever state it is."""
        ...


@runtime_checkable
class WebhookDeliveryStore(Protocol):
    """The webhook deliveries already handled (GitHub may deliver one twice)."""

    def record_delivery(self, delivery_id: str, *, now: datetime) -> bool:
        """Record a webhook delivery id; return False if it was handled before."""
        ...


@runtime_checkable
class PollCursorStore(Protocol):
    """Where the repo-wide comment poll resumes."""

    def get_cursor(self) -> PollCursor:
        """Return where the comment poll resumes."""
        ...

    def set_cursor(self, cursor: PollCursor) -> None:
        """Persist where the comment poll resumes."""
        ...


@runtime_checkable
class ResponseStore(Protocol):
    """The Responses API's stored responses: which ticket answers each, and for which client."""

    def keep_response(self, response: StoredResponse) -> None:
        """Record a response; a response already recorded (or deleted) is left as it is."""
        ...

    def response_for(self, response_id: str) -> StoredResponse | None:
        """Return a response by id, or None if it was never recorded or was deleted."""
        ...

    def delete_response(self, response_id: str, *, now: datetime) -> bool:
        """Forget a response's echo and items; return False if it was not there to delete."""
        ...


class IssuerKeyStore(Protocol):
    """The trusted OIDC issuer's public keys, kept after the issuer stops publishing them."""

    def record_issuer_keys(
        self, issuer: str, keys: Sequence[Mapping[str, str]], *, now: datetime
    ) -> list[str]:
        """Keep each public key (by kid) as seen at ``now``; return the kids whose key the
        issuer now serves with other material (the kept key is left as it was).

        Raises IssuerKeyRefused, writing nothing, for a key that is not a public RSA JWK.
        """
        ...

    def issuer_keys(self, issuer: str) -> list[ArchivedKey]:
        """Return every key kept for ``issuer``, oldest first, with first and last seen."""
        ...


@runtime_checkable
class TicketStore(
    TicketThreadStore,
    AnswerStore,
    WriteQueueStore,
    DraftStore,
    WebhookDeliveryStore,
    PollCursorStore,
    ResponseStore,
    TaskStore,
    ToolTaskStore,
    DelegationStore,
    IssuerKeyStore,
    Protocol,
):
    """Everything the desk keeps durably; closed once, when the desk stops."""

    def close(self) -> None:
        """Release the store's resources (its database connection)."""
        ...
