"""The records the ticket store keeps.

Every store (SQLite today; PostgreSQL or an in-memory fake tomorrow) hands out these
frozen dataclasses, so the desk never sees a row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class TicketState(StrEnum):
    """Where a ticket is in its life."""

    CREATING = "creating"  # stored, issue not yet confirmed on GitHub
    OPEN = "open"  # issue exists, awaiting a signed answer
    ANSWERED = "answered"  # a signed answer is committed, not yet delivered
    DELIVERED = "delivered"  # the answer reached a client
    EXPIRED = "expired"  # nobody answered before the deadline
    NEEDS_REVIEW = "needs-review"  # a signed answer waits for reviewers' signed approvals

    @property
    def pending(self) -> bool:
        """Say whether the ticket still waits for an answer it can release."""
        return self in PENDING_STATES


# The states of a ticket that still waits for an answer it can release.
PENDING_STATES = frozenset({TicketState.CREATING, TicketState.OPEN, TicketState.NEEDS_REVIEW})


@dataclass(frozen=True)
class Ticket:
    """One request waiting for (or answered by) a human."""

    id: int
    request_key: str
    request_id: str
    state: TicketState
    issue_number: int | None
    issue_url: str | None
    created_at: datetime
    deadline: datetime
    # Step `step` of the agent run whose first ticket is `thread_id` (its own id for step 1),
    # continuing ticket `parent_id` (None for step 1).
    step: int = 1
    thread_id: int | None = None
    parent_id: int | None = None


@dataclass(frozen=True)
class ReplyClaim:
    """The one reply a comment may get from the bot: which comment, on which ticket, why."""

    comment_id: int
    ticket_id: int | None
    kind: str


@dataclass(frozen=True)
class ThreadStart:
    """Where a new ticket joins an agent run: after ticket ``parent_id`` of ``thread_id``."""

    thread_id: int
    parent_id: int


@dataclass(frozen=True)
class StoredAnswer:
    """An accepted, verified answer."""

    ticket_id: int
    comment_id: int
    comment_url: str
    text: str
    signer: str
    kid: str
    jti: str
    digest: str
    accepted_at: datetime
    delivered_at: datetime | None
    release: str = ""


@dataclass(frozen=True)
class Candidate:
    """A verified answer that waits for reviewers before it is released."""

    ticket_id: int
    comment_id: int
    comment_url: str
    text: str
    signer: str
    kid: str
    jti: str
    digest: str
    release: str
    required: int
    posted_at: datetime
    proposed_at: datetime
    state: str = "pending"


@dataclass(frozen=True)
class StoredJudgement:
    """A reviewer's verified approval or rejection of a candidate answer."""

    comment_id: int
    candidate_id: int
    act: str
    reviewer: str
    kid: str
    jti: str
    digest: str
    posted_at: datetime


class DraftState(StrEnum):
    """Where a ticket's draft is: being asked for, posted on the issue, or failed."""

    CLAIMED = "claimed"
    POSTED = "posted"
    FAILED = "failed"


@dataclass(frozen=True)
class StoredDraft:
    """An upstream model's suggested answer for a ticket; never an answer by itself."""

    ticket_id: int
    state: DraftState
    model: str
    text: str
    digest: str
    created_at: datetime
    detail: str | None


@dataclass(frozen=True)
class QueuedWrite:
    """A GitHub write waiting in the durable queue."""

    id: int
    kind: str
    issue_number: int
    payload: str
    attempts: int


@dataclass(frozen=True)
class PollCursor:
    """Where the repo-wide comment poll resumes: GitHub's ``since`` and the last ETag."""

    since: str | None
    etag: str | None
