"""Delegated tickets in the store: the protocol of their children and their delegate acts.

A delegate act (its sub-questions and addressees) is recorded when its jti is spent, so
children not yet opened are opened from it later; each sub-question gets one child.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from ticketing.store.model import DelegationAct, StoredDelegation

__all__ = ["DelegationStore"]


@runtime_checkable
class DelegationStore(Protocol):
    """Delegated tickets: the child ticket of each sub-question, and its parent."""

    def spend_delegation(
        self, jti: str, *, parent_id: int, now: datetime, act: DelegationAct | None = None
    ) -> bool:
        """Record a delegate act's jti as used (and ``act``, unfinished); False if it was
        used, or the ticket is not open."""
        ...

    def record_delegation(
        self,
        delegation: StoredDelegation,
        *,
        writes: Sequence[tuple[str, int, str]] = (),
        now: datetime | None = None,
    ) -> bool:
        """Record a child and queue ``writes`` with it; False (nothing queued) if that
        sub-question (jti, position) had its child recorded before."""
        ...

    def delegation_act(self, jti: str) -> DelegationAct | None:
        """Return the delegate act whose jti is ``jti``, or None if none was recorded."""
        ...

    def delegation_acts_of(self, parent_id: int) -> list[DelegationAct]:
        """Return the delegate acts that split ticket ``parent_id``, oldest first."""
        ...

    def unfinished_delegations(self) -> list[DelegationAct]:
        """Return the delegate acts whose children are not all opened yet, oldest first."""
        ...

    def note_delegation_stalled(
        self, jti: str, *, now: datetime, writes: Sequence[tuple[str, int, str]] = ()
    ) -> bool:
        """Mark an unfinished act as held up, queueing ``writes``; False if it was already."""
        ...

    def end_delegation(
        self,
        jti: str,
        *,
        outcome: str,
        now: datetime,
        writes: Sequence[tuple[str, int, str]] = (),
    ) -> bool:
        """Mark an act done (``outcome``), queueing ``writes``; False if it had ended."""
        ...

    def delegation_of(self, child_id: int) -> StoredDelegation | None:
        """Return the delegation that opened ticket ``child_id``, or None if none did."""
        ...

    def delegations_of(self, parent_id: int) -> list[StoredDelegation]:
        """Return the children ticket ``parent_id`` was split into, in their order."""
        ...
