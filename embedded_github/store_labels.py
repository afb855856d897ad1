"""Queries on repository labels and the labels put on issues."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from embedded_github.store_database import SandboxDatabase
from embedded_github.store_rows import LabelRow


class LabelQueries(SandboxDatabase):
    """Create and find a repository's labels; put them on issues and take them off."""

    def list_labels(self, repo_id: int) -> list[LabelRow]:
        """Return a repository's labels by name."""
        rows = self._db.execute(
            "SELECT * FROM labels WHERE repo_id = ? ORDER BY name, id", (repo_id,)
        ).fetchall()
        return [_label(row) for row in rows]

    def get_label(self, repo_id: int, name: str) -> LabelRow | None:
        """Return a label by name (case-insensitive, as on GitHub)."""
        row = self._db.execute(
            "SELECT * FROM labels WHERE repo_id = ? AND name = ?", (repo_id, name)
        ).fetchone()
        return None if row is None else _label(row)

    def create_label(
        self, repo_id: int, *, name: str, color: str, description: str | None
    ) -> LabelRow:
        """Add a label to a repository."""
        label_id = self._next_id("labels")
        self._db.execute(
            "INSERT INTO labels (id, repo_id, name, color, description) VALUES (?, ?, ?, ?, ?)",
            (label_id, repo_id, name, color, description),
        )
        return LabelRow(label_id, repo_id, name, color, description)

    def ensure_labels(self, repo_id: int, names: Iterable[str]) -> list[LabelRow]:
        """Return the labels named, creating unknown ones as GitHub does for pushers."""
        result: list[LabelRow] = []
        for name in names:
            label = self.get_label(repo_id, name)
            if label is None:
                label = self.create_label(repo_id, name=name, color="ededed", description=None)
            if all(existing.id != label.id for existing in result):
                result.append(label)
        return result

    def issue_labels(self, issue_id: int) -> list[LabelRow]:
        """Return the labels on an issue, by name."""
        rows = self._db.execute(
            "SELECT l.* FROM labels l JOIN issue_labels il ON il.label_id = l.id"
            " WHERE il.issue_id = ? ORDER BY l.name, l.id",
            (issue_id,),
        ).fetchall()
        return [_label(row) for row in rows]

    def add_issue_labels(self, issue_id: int, labels: Iterable[LabelRow]) -> None:
        """Put labels on an issue, ignoring those already there."""
        self._db.executemany(
            "INSERT OR IGNORE INTO issue_labels (issue_id, label_id) VALUES (?, ?)",
            [(issue_id, label.id) for label in labels],
        )

    def clear_issue_labels(self, issue_id: int) -> None:
        """Take every label off an issue."""
        self._db.execute("DELETE FROM issue_labels WHERE issue_id = ?", (issue_id,))

    def remove_issue_label(self, issue_id: int, label_id: int) -> bool:
        """Take one label off an issue; return whether it was there."""
        cursor = self._db.execute(
            "DELETE FROM issue_labels WHERE issue_id = ? AND label_id = ?", (issue_id, label_id)
        )
        return cursor.rowcount > 0


def _label(row: sqlite3.Row) -> LabelRow:
    return LabelRow(row["id"], row["repo_id"], row["name"], row["color"], row["description"])
