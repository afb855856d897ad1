"""Queries on reactions to issues and comments."""

from __future__ import annotations

import sqlite3

from embedded_github.store_database import SandboxDatabase
from embedded_github.store_rows import Author, ReactionRow


class ReactionQueries(SandboxDatabase):
    """Add, count, list and delete the reactions on an issue or a comment."""

    def add_reaction(
        self, subject_kind: str, subject_id: int, *, author: Author, content: str, now: int
    ) -> tuple[ReactionRow, bool]:
        """Add a reaction, or find the same one; return it and whether it is new."""
        row = self._db.execute(
            "SELECT * FROM reactions WHERE subject_kind = ? AND subject_id = ?"
            " AND user_login = ? AND content = ?",
            (subject_kind, subject_id, author.login, content),
        ).fetchone()
        if row is not None:
            return _reaction(row), False
        reaction_id = self._next_id("reactions")
        self._db.execute(
            "INSERT INTO reactions (id, subject_kind, subject_id, user_login, user_id, content,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (reaction_id, subject_kind, subject_id, author.login, author.id, content, now),
        )
        return ReactionRow(reaction_id, subject_kind, subject_id, author, content, now), True

    def list_reactions(
        self, subject_kind: str, subject_id: int, *, content: str | None = None
    ) -> list[ReactionRow]:
        """Return the reactions on an issue or comment, oldest first."""
        query = "SELECT * FROM reactions WHERE subject_kind = ? AND subject_id = ?"
        params: list[object] = [subject_kind, subject_id]
        if content is not None:
            query += " AND content = ?"
            params.append(content)
        rows = self._db.execute(query + " ORDER BY id", params).fetchall()
        return [_reaction(row) for row in rows]

    def reaction_counts(self, subject_kind: str, subject_id: int) -> dict[str, int]:
        """Return how many reactions of each content an issue or comment has."""
        rows = self._db.execute(
            "SELECT content, COUNT(*) FROM reactions WHERE subject_kind = ? AND subject_id = ?"
            " GROUP BY content",
            (subject_kind, subject_id),
        ).fetchall()
        return {str(row[0]): int(row[1]) for row in rows}

    def delete_reaction(self, subject_kind: str, subject_id: int, reaction_id: int) -> bool:
        """Delete a reaction; return whether it existed."""
        cursor = self._db.execute(
            "DELETE FROM reactions WHERE subject_kind = ? AND subject_id = ? AND id = ?",
            (subject_kind, subject_id, reaction_id),
        )
        return cursor.rowcount > 0


def _reaction(row: sqlite3.Row) -> ReactionRow:
    return ReactionRow(
        id=row["id"],
        subject_kind=row["subject_kind"],
        subject_id=row["subject_id"],
        author=Author(row["user_login"], row["user_id"]),
        content=row["content"],
        created_at=row["created_at"],
    )
