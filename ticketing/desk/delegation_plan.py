"""What to do next with an accepted delegation whose children may not all be open, pure.

An accepted delegate act is recorded before its first child opens; until every
sub-question has its child, the act is unfinished and is looked at again (right away,
after GitHub was unavailable, at start-up). :func:`plan_delegation` says what to do then:
open the sub-questions still without a child, finish it (all open; the parent no longer
open), or give up (the children's deadline has come, so a child opened now would expire
at once; the editor is told and answers the parent directly).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = [
    "DROPPED",
    "GIVEN_UP",
    "OPENED",
    "Finish",
    "OpenChildren",
    "children_deadline",
    "plan_delegation",
    "retry_delay",
]

OPENED = "opened"
GIVEN_UP = "given_up"
DROPPED = "dropped"
# Retries of GitHub while it is unavailable: doubling from 2 s, at most a minute apart,
# so that giving up at the children's deadline is not late by more than that.
FIRST_RETRY = 2.0
MAX_RETRY = 60.0


@dataclass(frozen=True)
class OpenChildren:
    """Open these sub-questions (positions from 0), each expiring at ``deadline``."""

    positions: tuple[int, ...]
    deadline: datetime


@dataclass(frozen=True)
class Finish:
    """The act is done: ``OPENED`` (every child), ``GIVEN_UP`` or ``DROPPED``."""

    outcome: str


def children_deadline(delegated_at: datetime, parent_deadline: datetime) -> datetime:
    """Return when a delegation's children expire: after three quarters of the parent's wait.

    The last quarter is left for an editor to answer the parent directly. Computed from
    the act's time, so a child opened on a retry expires when its siblings do.
    """
    return delegated_at + max(parent_deadline - delegated_at, timedelta(0)) * 3 / 4


def plan_delegation(
    *,
    questions: int,
    opened: Collection[int],
    parent_open: bool,
    delegated_at: datetime,
    parent_deadline: datetime,
    now: datetime,
) -> OpenChildren | Finish:
    """Return what to do with a delegation of ``questions`` sub-questions, ``opened`` done."""
    if not parent_open:
        return Finish(DROPPED)
    missing = tuple(position for position in range(questions) if position not in opened)
    if not missing:
        return Finish(OPENED)
    deadline = children_deadline(delegated_at, parent_deadline)
    if now >= deadline:
        return Finish(GIVEN_UP)
    return OpenChildren(missing, deadline)


def retry_delay(failures: int, retry_after: float) -> float:
    """Return how long to wait after the ``failures``-th GitHub outage in a row."""
    backoff = min(FIRST_RETRY * 2.0 ** max(failures - 1, 0), MAX_RETRY)
    return max(retry_after, backoff)
