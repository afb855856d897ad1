"""Runs as trees: where a long run's later steps go, and the root's checklist of its children.

Pure: no I/O, no clock. Once a run passes ``after`` steps, each later step opens as a child
issue linked under the run's issue with GitHub's sub-issue API instead of a step comment.
GitHub lets a parent hold at most 100 sub-issues and a tree eight levels below its root, so
children come in blocks of 100: the first block hangs under the root, each later block under
the last child of the block before it (a chain of parents). Every child is linked; a run
longer than the eight levels allow goes on as step comments on the root again.

The root's body shows its direct children as a markdown task list between two markers; the
list is rewritten in place (:func:`with_section`) as children open and close.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MAX_CHILDREN",
    "MAX_LEVELS",
    "SECTION_END",
    "SECTION_START",
    "ChildLine",
    "TreeSlot",
    "child_note",
    "child_slot",
    "render_task_list",
    "with_section",
]

MAX_CHILDREN = 100
MAX_LEVELS = 8
SECTION_START = "<!-- ticketproxy:children -->"
SECTION_END = "<!-- /ticketproxy:children -->"
# GitHub's limit on an issue body (characters).
_BODY_LIMIT = 65_536


@dataclass(frozen=True)
class TreeSlot:
    """Where a step goes in its run's tree: child ``index`` (0 for the first child).

    ``parent_index`` is the child it hangs under, or None for the root; ``level`` is 1 for
    the root's own children.
    """

    index: int
    parent_index: int | None
    level: int

    def parent_step(self, after: int) -> int | None:
        """Return the run step whose issue is this child's parent (None: the root)."""
        return None if self.parent_index is None else first_child_step(after) + self.parent_index


def first_child_step(after: int) -> int:
    """Return the first step that opens as a child: ``after + 1``, and never step 1."""
    return max(after, 1) + 1


def child_slot(step: int, after: int | None) -> TreeSlot | None:
    """Return where step ``step`` goes when children start after ``after`` steps.

    None: the step is the root itself, a step comment (at or before the threshold, or with
    trees off, ``after`` None), or beyond the deepest level GitHub allows.
    """
    if after is None or step < first_child_step(after):
        return None
    index = step - first_child_step(after)
    block = index // MAX_CHILDREN
    level = block + 1
    if level > MAX_LEVELS:
        return None
    parent = None if block == 0 else block * MAX_CHILDREN - 1
    return TreeSlot(index=index, parent_index=parent, level=level)


@dataclass(frozen=True)
class ChildLine:
    """One direct child as the root's checklist shows it."""

    number: int
    step: int
    state: str  # waiting, answered, delivered or expired
    closed: bool


def render_task_list(children: Sequence[ChildLine]) -> str:
    """Return the root's checklist section: one ``- [ ] #N`` line per direct child."""
    lines = [SECTION_START, "", "### Later steps of this run (sub-issues)", ""]
    for child in children:
        box = "x" if child.closed else " "
        lines.append(f"- [{box}] #{child.number} step {child.step}: {child.state}")
    lines += ["", SECTION_END]
    return "\n".join(lines)


def with_section(body: str, section: str) -> str:
    """Return ``body`` with its checklist section replaced by ``section`` (added if absent).

    A body that would pass GitHub's limit keeps only a count of the children instead.
    """
    start = body.find(SECTION_START)
    end = body.find(SECTION_END, start + 1) if start >= 0 else -1
    if start >= 0 and end >= 0:
        base, tail = body[:start].rstrip("\n"), body[end + len(SECTION_END) :]
    else:
        base, tail = body.rstrip("\n"), ""
    joined = f"{base}\n\n{section}{tail}"
    if len(joined) <= _BODY_LIMIT:
        return joined
    count = section.count("\n- [")
    short = (
        f"{SECTION_START}\n\n{count} later steps of this run are its sub-issues"
        f" (see the sub-issue list).\n\n{SECTION_END}"
    )
    return f"{base}\n\n{short}{tail}"


def child_note(step: int, root_number: int | None) -> str:
    """Return the note at the top of a child issue: which run and step it continues."""
    where = "its run's first issue" if root_number is None else f"issue {root_number}"
    return (
        f"Step {step} of an agent run: a sub-issue of {where}. Answer it here; its own"
        " reference is this issue's, and a signature for another step answers nothing here."
    )
