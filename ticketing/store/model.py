"""The records the ticket store keeps, and how to build one from a database row.

Every store (SQLite today; PostgreSQL or an in-memory fake tomorrow) hands out these
frozen dataclasses, so the desk never sees a row. :func:`record_from_row` is the one place
that turns a row into a record: columns are matched to fields by name, and the fields a
database keeps in another shape (timestamps, enum values) are converted by the caller.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Record = TypeVar("Record", bound="DataclassInstance")


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


@dataclass(frozen=True, slots=True)
class Ticket:
    """One request waiting for (or answered by) a human."""

    # Slots: every waiting completion holds its ticket, thousands at once.
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
    # A later step opened as an issue of its own, a sub-issue in its run's tree (see
    # ticketing.tree): its reference is that issue's, as for a step 1.
    own_issue: bool = False


@dataclass(frozen=True)
class StoredDelegation:
    """Child ticket ``child_id``: sub-question ``position`` (from 0) of ticket ``parent_id``.

    Split off by ``delegated_by``'s signed delegate act (comment ``comment_id``, its jti).
    """

    child_id: int
    parent_id: int
    position: int
    question: str
    addressee: str | None
    delegated_by: str
    comment_id: int
    comment_url: str
    jti: str
    delegated_at: datetime


@dataclass(frozen=True)
class DelegationAct:
    """An accepted delegate act: ticket ``parent_id`` split into ``questions`` (ask, to).

    Recorded when its jti is spent, before any child opens, so the children not yet opened
    are opened from it later. ``stalled_at``: when the parent was told that GitHub held the
    rest up; ``ended_at`` and ``outcome`` (``opened``, ``given_up`` or ``dropped``): done.
    """

    jti: str
    parent_id: int
    comment_id: int
    comment_url: str
    delegated_by: str
    digest: str
    questions: tuple[tuple[str, str | None], ...]
    delegated_at: datetime
    stalled_at: datetime | None = None
    ended_at: datetime | None = None
    outcome: str | None = None


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
    # An agent's answer: the editor whose agent signed it, who may not approve it either.
    on_behalf_of: str | None = None


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
    # The judgement's signed text: a rejection's reason ("" when recorded before it was kept).
    reason: str = ""


class DraftState(StrEnum):
    """Where a ticket's draft is: being asked for, posted on the issue, or failed."""

    CLAIMED = "claimed"
    POSTED = "posted"
    FAILED = "failed"
    # Handed to an editor's personal agent, which posts its draft as its own comment.
    DISPATCHED = "dispatched"


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
    # The editor whose personal agent was dispatched to draft it (None: the upstream model),
    # and the agent's draft comment once the finder took it.
    agent: str | None = None
    comment_url: str | None = None


@dataclass(frozen=True)
class QueuedWrite:
    """A GitHub write waiting in the durable queue."""

    id: int
    kind: str
    issue_number: int
    payload: str
    attempts: int


@dataclass(frozen=True)
class StoredResponse:
    """A Responses API response: the ticket answering it, whose it is, and what it was asked.

    ``stored`` is False for a response created with ``store: false``: only its id, ticket and
    client are kept, so a later reference to it can say why it cannot be used.
    """

    response_id: str
    ticket_id: int
    client: str
    stored: bool
    previous_id: str | None
    # JSON: what the response object echoes of its request (model, tools, instructions, ...).
    echo: str
    # JSON: its input items in order, those of the responses it continues first.
    items: str
    created_at: datetime


@dataclass(frozen=True)
class PollCursor:
    """Where the repo-wide comment poll resumes: GitHub's ``since`` and the last ETag."""

    since: str | None
    etag: str | None


class Row(Protocol):
    """A database row read by column name, such as ``sqlite3.Row`` or a mapping."""

    def keys(self) -> Iterable[str]:
        """Return the row's column names."""
        ...

    def __getitem__(self, column: str, /) -> Any:
        """Return the value of one column."""
        ...


@functools.cache
def _field_names(kind: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(kind))


def record_from_row(kind: type[Record], row: Row, /, **convert: Callable[[Any], object]) -> Record:
    """Build a ``kind`` record from the row's columns named like its fields, converting some.

    Every field needs its column (a missing one raises ``KeyError`` naming it); columns no
    field names are ignored. ``convert`` maps a field name to what turns the stored value
    into the field's value, such as ``state=TicketState``.
    """
    names = _field_names(kind)
    try:
        values = {name: row[name] for name in names}
    except (IndexError, KeyError):
        # sqlite3.Row raises IndexError for an unknown column name, a mapping KeyError;
        # ``in`` would search a sqlite3.Row's values, so ask for its column names.
        columns = set(row.keys())
        missing = next(name for name in names if name not in columns)
        raise KeyError(f"no column {missing!r} for {kind.__name__}") from None
    for name, converter in convert.items():
        if name not in values:
            raise TypeError(f"{kind.__name__} has no field {name}")
        values[name] = converter(values[name])
    return kind(**values)
