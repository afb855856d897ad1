"""Queries on hosted repositories."""

from __future__ import annotations

from embedded_github.store_database import SandboxDatabase
from embedded_github.store_rows import RepoRow


class RepoQueries(SandboxDatabase):
    """Create, find and list the repositories the sandbox hosts."""

    def ensure_repo(self, full_name: str, *, now: int) -> RepoRow:
        """Return the repository ``owner/name``, creating it if it is new."""
        owner, name = full_name.split("/", 1)
        existing = self.get_repo(owner, name)
        if existing is not None:
            return existing
        repo_id = self._next_id("repos")
        self._db.execute(
            "INSERT INTO repos (id, owner, name, created_at) VALUES (?, ?, ?, ?)",
            (repo_id, owner, name, now),
        )
        return RepoRow(id=repo_id, owner=owner, name=name, created_at=now)

    def get_repo(self, owner: str, name: str) -> RepoRow | None:
        """Return a repository by owner and name (case-insensitive, as on GitHub)."""
        row = self._db.execute(
            "SELECT * FROM repos WHERE owner = ? AND name = ?", (owner, name)
        ).fetchone()
        return (
            None
            if row is None
            else RepoRow(row["id"], row["owner"], row["name"], row["created_at"])
        )

    def list_repos(self) -> list[RepoRow]:
        """Return every repository, by name."""
        rows = self._db.execute("SELECT * FROM repos ORDER BY owner, name").fetchall()
        return [RepoRow(r["id"], r["owner"], r["name"], r["created_at"]) for r in rows]
