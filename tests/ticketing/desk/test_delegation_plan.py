"""What a recorded delegation does next, pure: open the missing, finish, or give up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ticketing.desk.delegation_plan import (
    DROPPED,
    GIVEN_UP,
    MAX_RETRY,
    OPENED,
    Finish,
    OpenChildren,
    children_deadline,
    plan_delegation,
    retry_delay,
)

AT = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
PARENT_DEADLINE = AT + timedelta(minutes=40)


def plan(opened: set[int], *, now: datetime = AT, parent_open: bool = True) -> object:
    return plan_delegation(
        questions=3,
        opened=opened,
        parent_open=parent_open,
        delegated_at=AT,
        parent_deadline=PARENT_DEADLINE,
        now=now,
    )


def test_half_opened_delegation_opens_only_its_missing_sub_questions() -> None:
    """After an outage or a crash, only the sub-questions without a child are opened."""
    assert plan({0}, now=AT + timedelta(minutes=5)) == OpenChildren(
        (1, 2), AT + timedelta(minutes=30)
    )


def test_children_opened_late_expire_with_their_siblings() -> None:
    """The deadline comes from the act's time, not from when the retry runs."""
    assert children_deadline(AT, PARENT_DEADLINE) == AT + timedelta(minutes=30)
    assert children_deadline(AT, AT - timedelta(minutes=1)) == AT


def test_delegation_with_every_child_open_is_finished() -> None:
    """Nothing is opened twice: all three have children, so the act is done."""
    assert plan({0, 1, 2}) == Finish(OPENED)


def test_delegation_still_held_up_at_the_childrens_deadline_is_given_up() -> None:
    """A child opened at its deadline would expire at once: the editor is told instead."""
    assert plan({0}, now=AT + timedelta(minutes=30)) == Finish(GIVEN_UP)


def test_delegation_of_a_parent_no_longer_open_is_dropped() -> None:
    """A parent answered directly (or expired) opens no more children."""
    assert plan(set(), parent_open=False) == Finish(DROPPED)


def test_outage_retries_back_off_but_not_past_a_minute() -> None:
    """Doubling from 2 s, GitHub's retry-after honoured, at most a minute apart by itself."""
    assert [retry_delay(n, 0.0) for n in (1, 2, 3)] == [2.0, 4.0, 8.0]
    assert retry_delay(20, 0.0) == MAX_RETRY
    assert retry_delay(1, 30.0) == 30.0
