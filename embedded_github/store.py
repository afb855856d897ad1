"""The sandbox's state in SQLite: repositories, issues, comments, labels and reactions.

Every call runs on the event loop thread: the sandbox is small and each query is short,
so a thread pool would add locking without making anything faster.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# GitHub ids are large and never collide across kinds in practice; starting each kind in its
# own range (comments above 2**31, as on github.com today) catches clients that mix them up or
# squeeze them into 32 bits.
_ID_BASES = {
    "repos": 700_000_000,
    "issues": 2_900_000_000,
    "comments": 3_600_000_000,
    "labels": 8_100_000_000,
    "reactions": 290_000_000,
}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS id_sequences (
    name TEXT PRIMARY KEY,
    last INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS repos (
    id INTEGER PRIMARY KEY,
    owner TEXT NOT NULL COLLATE NOCASE,
    name TEXT NOT NULL COLLATE NOCASE,
    created_at INTEGER NOT NULL,
    UNIQUE (owner, name)
);
CREATE TABLE IF NOT EXISTS issues (
    id INTEGER PRIMARY KEY,
    repo_id INTEGER NOT NULL REFERENCES repos(id),
    number INTEGER NOT NULL,
    title TEXT NOT NULL,
    body TEXT,
    state TEXT NOT NULL DEFAULT 'open',
    state_reason TEXT,
    user_login TEXT NOT NULL,
    user_id INTEGER NOT NULL,
    locked INTEGER NOT NULL DEFAULT 0,
    lock_reason TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    closed_at INTEGER,
    closed_by_login TEXT,
    closed_by_id INTEGER,
    UNIQUE (repo_id, number)
);
CREATE TABLE IF NOT EXISTS comments (
    id INTEGER PRIMARY KEY,
    repo_id INTEGER NOT NULL REFERENCES repos(id),
    issue_number INTEGER NOT NULL,
    body TEXT NOT NULL,
    user_login TEXT NOT NULL,
    user_id INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS comments_by_updated ON comments (repo_id, updated_at);
CREATE TABLE IF NOT EXISTS labels (
    id INTEGER PRIMARY KEY,
    repo_id INTEGER NOT NULL REFERENCES repos(id),
    name TEXT NOT NULL COLLATE NOCASE,
    color TEXT NOT NULL,
    description TEXT,
    UNIQUE (repo_id, name)
);
CREATE TABLE IF NOT EXISTS issue_labels (
    issue_id INTEGER NOT NULL REFERENCES issues(id),
    label_id INTEGER NOT NULL REFERENCES labels(id),
    PRIMARY KEY (issue_id, label_id)
);
CREATE TABLE IF NOT EXISTS reactions (
    id INTEGER PRIMARY KEY,
    subject_kind TEXT NOT NULL,
    subject_id INTEGER NOT NULL,
    user_login TEXT NOT NULL,
    user_id INTEGER NOT NULL,
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (subject_kind, subject_id, user_login, content)
);
"""


@dataclass(frozen=True)
class Author:
    """Who did something, as stored beside it."""

    login: str
    id: int


@dataclass(frozen=True)
class RepoRow:
    """A hosted repository."""

    id: int
    owner: str
    name: str
    created_at: int

    @property
    def full_name(self) -> str:
        """Return ``owner/name``."""
        return f"{self.owner}/{self.name}"


@dataclass(frozen=True)
class IssueRow:
    """An issue as stored."""

    id: int
    repo_id: int
    number: int
    title: str
    body: str | None
    state: str
    state_reason: str | None
    author: Author
    locked: bool
    lock_reason: str | None
    created_at: int
    updated_at: int
    closed_at: int | None
    closed_by: Author | None


@dataclass(frozen=True)
class CommentRow:
    """An issue comment as stored."""

    id: int
    repo_id: int
    issue_number: int
    body: str
    author: Author
    created_at: int
    updated_at: int


@dataclass(frozen=True)
class LabelRow:
    """A repository label."""

    id: int
    repo_id: int
    name: str
    color: str
    description: str | None


@dataclass(frozen=True)
class ReactionRow:
    """A reaction on an issue or a comment."""

    id: int
    subject_kind: str
    subject_id: int
    author: Author
    content: str
    created_at: int


class SandboxStore:
    """Read and write the sandbox's state in one SQLite database."""

    def __init__(self, db_path: str | Path = ":memory:") -> None:
        """Open (and create if needed) the database at ``db_path``."""
        # The connection is only used from the event loop thread, but that thread may not be
        # the one that built the Sandbox, so the same-thread check would misfire.
        self._db = sqlite3.connect(str(db_path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        if str(db_path) != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def _next_id(self, table: str) -> int:
        # GitHub never reuses an id, even after a delete, so ids come from a sequence that
        # only grows, not from MAX(id) (which would hand a deleted comment's id out again).
        row = self._db.execute("SELECT last FROM id_sequences WHERE name = ?", (table,)).fetchone()
        if row is None:
            # Table names come from the fixed _ID_BASES keys, never from a request.
            highest = self._db.execute(f"SELECT MAX(id) FROM {table}").fetchone()  # noqa: S608
            last = int(highest[0]) if highest[0] is not None else _ID_BASES[table]
        else:
            last = int(row[0])
        self._db.execute(
            "INSERT INTO id_sequences (name, last) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET last = excluded.last",
            (table, last + 1),
        )
        return last + 1

    # Repositories -------------------------------------------------------------------------

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

    # Issues -------------------------------------------------------------------------------

    def create_issue(
        self, repo: RepoRow, *, title: str, body: str | None, author: Author, now: int
    ) -> IssueRow:
        """Open a new issue with the next number in its repository."""
        row = self._db.execute(
            "SELECT COALESCE(MAX(number), 0) + 1 FROM issues WHERE repo_id = ?", (repo.id,)
        ).fetchone()
        number = int(row[0])
        issue_id = self._next_id("issues")
        self._db.execute(
            "INSERT INTO issues (id, repo_id, number, title, body, user_login, user_id,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (issue_id, repo.id, number, title, body, author.login, author.id, now, now),
        )
        issue = self.get_issue(repo.id, number)
        assert issue is not None
        return issue

    def get_issue(self, repo_id: int, number: int) -> IssueRow | None:
        """Return an issue by repository and number."""
        row = self._db.execute(
            "SELECT * FROM issues WHERE repo_id = ? AND number = ?", (repo_id, number)
        ).fetchone()
        return None if row is None else _issue(row)

    def list_issues(
        self,
        repo_id: int,
        *,
        state: str = "open",
        labels: Sequence[str] = (),
        sort: str = "created",
        descending: bool = True,
        since: int | None = None,
    ) -> list[IssueRow]:
        """Return the issues of a repository that match GitHub's list filters, in order."""
        clauses = ["repo_id = ?"]
        params: list[object] = [repo_id]
        if state != "all":
            clauses.append("state = ?")
            params.append(state)
        if since is not None:
            clauses.append("updated_at >= ?")
            params.append(since)
        for label in labels:
            clauses.append(
                "EXISTS (SELECT 1 FROM issue_labels il JOIN labels l ON l.id = il.label_id"
                " WHERE il.issue_id = issues.id AND l.name = ?)"
            )
            params.append(label)
        order_column = {
            "created": "created_at",
            "updated": "updated_at",
            "comments": "(SELECT COUNT(*) FROM comments c WHERE c.repo_id = issues.repo_id"
            " AND c.issue_number = issues.number)",
        }[sort]
        direction = "DESC" if descending else "ASC"
        # Every piece of this statement is a fixed string chosen above; values are parameters.
        query = (
            f"SELECT * FROM issues WHERE {' AND '.join(clauses)}"  # noqa: S608
            f" ORDER BY {order_column} {direction}, id {direction}"
        )
        return [_issue(row) for row in self._db.execute(query, params).fetchall()]

    def update_issue(
        self,
        issue: IssueRow,
        *,
        now: int,
        title: str | None = None,
        body: str | None = None,
        set_body: bool = False,
        state: str | None = None,
        state_reason: str | None = None,
        closed_by: Author | None = None,
    ) -> IssueRow:
        """Change an issue's title, body or state and bump its ``updated_at``."""
        new_title = issue.title if title is None else title
        new_body = body if set_body else issue.body
        new_state = issue.state
        new_reason = issue.state_reason
        closed_at = issue.closed_at
        closer = issue.closed_by
        if state is not None and state != issue.state:
            new_state = state
            if state == "closed":
                closed_at = now
                closer = closed_by
                new_reason = state_reason or "completed"
            else:
                closed_at = None
                closer = None
                new_reason = state_reason or "reopened"
        elif state_reason is not None:
            new_reason = state_reason
        self._db.execute(
            "UPDATE issues SET title = ?, body = ?, state = ?, state_reason = ?, closed_at = ?,"
            " closed_by_login = ?, closed_by_id = ?, updated_at = ? WHERE id = ?",
            (
                new_title,
                new_body,
                new_state,
                new_reason,
                closed_at,
                None if closer is None else closer.login,
                None if closer is None else closer.id,
                now,
                issue.id,
            ),
        )
        return self._reload_issue(issue)

    def set_lock(self, issue: IssueRow, *, locked: bool, reason: str | None, now: int) -> IssueRow:
        """Lock or unlock an issue's conversation."""
        self._db.execute(
            "UPDATE issues SET locked = ?, lock_reason = ?, updated_at = ? WHERE id = ?",
            (int(locked), reason if locked else None, now, issue.id),
        )
        return self._reload_issue(issue)

    def touch_issue(self, issue_id: int, *, now: int) -> None:
        """Bump an issue's ``updated_at``, as a new comment or label does on GitHub."""
        self._db.execute("UPDATE issues SET updated_at = ? WHERE id = ?", (now, issue_id))

    def _reload_issue(self, issue: IssueRow) -> IssueRow:
        reloaded = self.get_issue(issue.repo_id, issue.number)
        assert reloaded is not None
        return reloaded

    def comment_count(self, repo_id: int, number: int) -> int:
        """Return how many comments an issue has."""
        row = self._db.execute(
            "SELECT COUNT(*) FROM comments WHERE repo_id = ? AND issue_number = ?",
            (repo_id, number),
        ).fetchone()
        return int(row[0])

    # Labels -------------------------------------------------------------------------------

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

    # Comments -----------------------------------------------------------------------------

    def create_comment(self, issue: IssueRow, *, body: str, author: Author, now: int) -> CommentRow:
        """Add a comment to an issue and bump the issue's ``updated_at``."""
        comment_id = self._next_id("comments")
        self._db.execute(
            "INSERT INTO comments (id, repo_id, issue_number, body, user_login, user_id,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (comment_id, issue.repo_id, issue.number, body, author.login, author.id, now, now),
        )
        self.touch_issue(issue.id, now=now)
        return CommentRow(comment_id, issue.repo_id, issue.number, body, author, now, now)

    def get_comment(self, repo_id: int, comment_id: int) -> CommentRow | None:
        """Return a comment of a repository by id."""
        row = self._db.execute(
            "SELECT * FROM comments WHERE repo_id = ? AND id = ?", (repo_id, comment_id)
        ).fetchone()
        return None if row is None else _comment(row)

    def list_comments(
        self,
        repo_id: int,
        *,
        issue_number: int | None = None,
        since: int | None = None,
        sort: str | None = None,
        descending: bool = False,
    ) -> list[CommentRow]:
        """Return comments of a repository (or of one issue), filtered and ordered like GitHub."""
        clauses = ["repo_id = ?"]
        params: list[object] = [repo_id]
        if issue_number is not None:
            clauses.append("issue_number = ?")
            params.append(issue_number)
        if since is not None:
            clauses.append("updated_at >= ?")
            params.append(since)
        direction = "DESC" if descending else "ASC"
        if sort is None:
            order = "id ASC"
        else:
            column = {"created": "created_at", "updated": "updated_at"}[sort]
            order = f"{column} {direction}, id {direction}"
        # Every piece of this statement is a fixed string chosen above; values are parameters.
        query = f"SELECT * FROM comments WHERE {' AND '.join(clauses)} ORDER BY {order}"  # noqa: S608
        return [_comment(row) for row in self._db.execute(query, params).fetchall()]

    def update_comment(self, comment: CommentRow, *, body: str, now: int) -> CommentRow:
        """Replace a comment's body and bump its ``updated_at``."""
        self._db.execute(
            "UPDATE comments SET body = ?, updated_at = ? WHERE id = ?", (body, now, comment.id)
        )
        updated = self.get_comment(comment.repo_id, comment.id)
        assert updated is not None
        return updated

    def delete_comment(self, comment: CommentRow) -> None:
        """Delete a comment and its reactions."""
        self._db.execute(
            "DELETE FROM reactions WHERE subject_kind = 'comment' AND subject_id = ?",
            (comment.id,),
        )
        self._db.execute("DELETE FROM comments WHERE id = ?", (comment.id,))

    # Reactions ----------------------------------------------------------------------------

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


def _issue(row: sqlite3.Row) -> IssueRow:
    closed_by = None
    if row["closed_by_login"] is not None:
        closed_by = Author(row["closed_by_login"], row["closed_by_id"])
    return IssueRow(
        id=row["id"],
        repo_id=row["repo_id"],
        number=row["number"],
        title=row["title"],
        body=row["body"],
        state=row["state"],
        state_reason=row["state_reason"],
        author=Author(row["user_login"], row["user_id"]),
        locked=bool(row["locked"]),
        lock_reason=row["lock_reason"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        closed_at=row["closed_at"],
        closed_by=closed_by,
    )


def _comment(row: sqlite3.Row) -> CommentRow:
    return CommentRow(
        id=row["id"],
        repo_id=row["repo_id"],
        issue_number=row["issue_number"],
        body=row["body"],
        author=Author(row["user_login"], row["user_id"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _label(row: sqlite3.Row) -> LabelRow:
    return LabelRow(row["id"], row["repo_id"], row["name"], row["color"], row["description"])


def _reaction(row: sqlite3.Row) -> ReactionRow:
    return ReactionRow(
        id=row["id"],
        subject_kind=row["subject_kind"],
        subject_id=row["subject_id"],
        author=Author(row["user_login"], row["user_id"]),
        content=row["content"],
        created_at=row["created_at"],
    )
