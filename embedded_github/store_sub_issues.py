"""Queries on sub-issues: which issue is whose parent, in what order, how deep a tree goes.

An issue has at most one parent (``child_id`` is the table's key); a parent's children are
ordered by ``position``, which reprioritising rewrites.
"""

from __future__ import annotations

from embedded_github.store_issues import IssueQueries, issue_from_row
from embedded_github.store_rows import IssueRow


class SubIssueQueries(IssueQueries):
    """Link, unlink, reorder and list sub-issues; measure a tree's depth."""

    def get_issue_by_id(self, issue_id: int) -> IssueRow | None:
        """Return an issue by its id (not its number), in any repository."""
        row = self._db.execute("SELECT * FROM issues WHERE id = ?", (issue_id,)).fetchone()
        return None if row is None else issue_from_row(row)

    def sub_issues(self, parent_id: int) -> list[IssueRow]:
        """Return a parent's children in their priority order."""
        rows = self._db.execute(
            "SELECT issues.* FROM sub_issues JOIN issues ON issues.id = sub_issues.child_id"
            " WHERE sub_issues.parent_id = ? ORDER BY sub_issues.position, issues.id",
            (parent_id,),
        ).fetchall()
        return [issue_from_row(row) for row in rows]

    def parent_of(self, child_id: int) -> IssueRow | None:
        """Return the issue an issue is a sub-issue of, or None."""
        row = self._db.execute(
            "SELECT issues.* FROM sub_issues JOIN issues ON issues.id = sub_issues.parent_id"
            " WHERE sub_issues.child_id = ?",
            (child_id,),
        ).fetchone()
        return None if row is None else issue_from_row(row)

    def sub_issue_counts(self, parent_id: int) -> tuple[int, int]:
        """Return how many children a parent has, and how many of them are closed."""
        row = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(issues.state = 'closed'), 0) FROM sub_issues"
            " JOIN issues ON issues.id = sub_issues.child_id WHERE sub_issues.parent_id = ?",
            (parent_id,),
        ).fetchone()
        return int(row[0]), int(row[1])

    def add_sub_issue(self, parent_id: int, child_id: int) -> None:
        """Make ``child_id`` the last child of ``parent_id``, leaving any earlier parent."""
        row = self._db.execute(
            "SELECT COALESCE(MAX(position), 0) + 1 FROM sub_issues WHERE parent_id = ?",
            (parent_id,),
        ).fetchone()
        self._db.execute(
            "INSERT INTO sub_issues (child_id, parent_id, position) VALUES (?, ?, ?)"
            " ON CONFLICT (child_id) DO UPDATE SET parent_id = excluded.parent_id,"
            " position = excluded.position",
            (child_id, parent_id, int(row[0])),
        )

    def remove_sub_issue(self, child_id: int) -> None:
        """Detach an issue from its parent."""
        self._db.execute("DELETE FROM sub_issues WHERE child_id = ?", (child_id,))

    def reorder_sub_issues(self, parent_id: int, ordered_child_ids: list[int]) -> None:
        """Rewrite a parent's children's positions to follow ``ordered_child_ids``."""
        for position, child_id in enumerate(ordered_child_ids, start=1):
            self._db.execute(
                "UPDATE sub_issues SET position = ? WHERE parent_id = ? AND child_id = ?",
                (position, parent_id, child_id),
            )

    def ancestor_ids(self, issue_id: int) -> list[int]:
        """Return an issue's parent, its parent's parent and so on, nearest first."""
        ancestors: list[int] = []
        current = issue_id
        while True:
            row = self._db.execute(
                "SELECT parent_id FROM sub_issues WHERE child_id = ?", (current,)
            ).fetchone()
            if row is None or int(row[0]) in ancestors:
                return ancestors
            current = int(row[0])
            ancestors.append(current)

    def subtree_height(self, issue_id: int) -> int:
        """Return how many levels an issue's subtree has: 1 for an issue without children."""
        height = 0
        level = [issue_id]
        while level:
            height += 1
            marks = ",".join("?" * len(level))
            # Only placeholders are formatted in; the ids are parameters.
            rows = self._db.execute(
                f"SELECT child_id FROM sub_issues WHERE parent_id IN ({marks})",  # noqa: S608
                level,
            ).fetchall()
            level = [int(row[0]) for row in rows]
        return height
