"""Queries on issues and the comments on them, filtered and ordered as GitHub lists them."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from embedded_github.store_database import SandboxDatabase
from embedded_github.store_rows import Author, CommentRow, IssueRow, RepoRow


class IssueQueries(SandboxDatabase):
    """Open, change, lock and list issues; add, edit, delete and list their comments."""

    def create_issue(
        self, repo: RepoRow, *, title: str, body: str | None, author: Author, now: int
    ) -> IssueRow:
        """Open a new issue with the next number in its repository."""
        number = self.next_issue_number(repo.id)
        issue_id = self._next_id("issues")
        self._db.execute(
            "INSERT INTO issues (id, repo_id, number, title, body, user_login, user_id,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (issue_id, repo.id, number, title, body, author.login, author.id, now, now),
        )
        issue = self.get_issue(repo.id, number)
        assert issue is not None
        return issue

    def next_issue_number(self, repo_id: int) -> int:
        """Return the number the repository's next issue gets."""
        row = self._db.execute(
            "SELECT COALESCE(MAX(number), 0) + 1 FROM issues WHERE repo_id = ?", (repo_id,)
        ).fetchone()
        return int(row[0])

    def get_issue(self, repo_id: int, number: int) -> IssueRow | None:
        """Return an issue by repository and number."""
        row = self._db.execute(
            "SELECT * FROM issues WHERE repo_id = ? AND number = ?", (repo_id, number)
        ).fetchone()
        return None if row is None else issue_from_row(row)

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
        return [issue_from_row(row) for row in self._db.execute(query, params).fetchall()]

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


def issue_from_row(row: sqlite3.Row) -> IssueRow:
    """Build an issue row from its SQLite row."""
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
