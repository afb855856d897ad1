"""Runs as trees, the pure part: where each later step goes, and the root's checklist."""

from __future__ import annotations

from ticketing.tree import (
    MAX_CHILDREN,
    MAX_LEVELS,
    SECTION_END,
    SECTION_START,
    ChildLine,
    TreeSlot,
    child_slot,
    render_task_list,
    with_section,
)


def test_steps_up_to_the_threshold_stay_step_comments() -> None:
    """Steps 1 to ``after`` are not children; ``after + 1`` is the first child, under the root."""
    assert child_slot(1, 50) is None
    assert child_slot(50, 50) is None
    assert child_slot(51, 50) == TreeSlot(index=0, parent_index=None, level=1)


def test_always_makes_every_later_step_a_child_but_never_the_root() -> None:
    """With ``after`` 0, step 1 is still the root and step 2 its first child."""
    assert child_slot(1, 0) is None
    assert child_slot(2, 0) == TreeSlot(index=0, parent_index=None, level=1)


def test_a_hundred_and_first_child_hangs_under_the_last_child_of_the_first_hundred() -> None:
    """A parent holds at most 100 children: the next block chains under the previous block."""
    hundredth = child_slot(1 + MAX_CHILDREN, 0)
    assert hundredth == TreeSlot(index=99, parent_index=None, level=1)
    next_block = child_slot(2 + MAX_CHILDREN, 0)
    assert next_block == TreeSlot(index=100, parent_index=99, level=2)
    assert next_block.parent_step(0) == 1 + MAX_CHILDREN


def test_no_parent_ever_holds_more_than_a_hundred_children() -> None:
    """Across every level GitHub allows, each parent (the root too) gets at most 100."""
    counts: dict[int | None, int] = {}
    step = 2
    while (slot := child_slot(step, 0)) is not None:
        counts[slot.parent_index] = counts.get(slot.parent_index, 0) + 1
        step += 1
    assert max(counts.values()) == MAX_CHILDREN
    assert step - 2 == MAX_CHILDREN * MAX_LEVELS


def test_a_run_deeper_than_eight_levels_goes_back_to_step_comments() -> None:
    """Past eight levels of sub-issues no child would be linkable: the step is a comment."""
    assert child_slot(1 + MAX_CHILDREN * MAX_LEVELS, 0) is not None
    assert child_slot(2 + MAX_CHILDREN * MAX_LEVELS, 0) is None


def test_trees_off_makes_no_children() -> None:
    """``after`` None turns trees off."""
    assert child_slot(500, None) is None


def test_checklist_checks_closed_children_only() -> None:
    """Each direct child is a task list line naming its issue; closed ones are checked."""
    section = render_task_list(
        [ChildLine(7, 51, "answered", True), ChildLine(8, 52, "waiting", False)]
    )
    assert "- [x] #7 step 51: answered" in section
    assert "- [ ] #8 step 52: waiting" in section
    assert section.startswith(SECTION_START)
    assert section.endswith(SECTION_END)


def test_checklist_replaces_itself_in_the_body_and_keeps_the_rest() -> None:
    """Rewriting the checklist changes only its section; the body around it stays."""
    body = "The question.\n\n<!-- ticketproxy:request abc -->"
    once = with_section(body, render_task_list([ChildLine(7, 51, "waiting", False)]))
    twice = with_section(once, render_task_list([ChildLine(7, 51, "answered", True)]))
    assert twice.startswith(body)
    assert twice.count(SECTION_START) == 1
    assert "- [x] #7" in twice
    assert "- [ ] #7" not in twice
    assert with_section(twice, render_task_list([ChildLine(7, 51, "answered", True)])) == twice


def test_checklist_that_would_pass_githubs_body_limit_becomes_a_count() -> None:
    """A body near GitHub's limit keeps a one-line count of its children instead of the list."""
    body = "x" * 65_000
    lines = [ChildLine(n, n, "waiting", False) for n in range(100)]
    updated = with_section(body, render_task_list(lines))
    assert len(updated) <= 65_536
    assert "100 later steps" in updated
