"""The rows the sandbox stores, as frozen dataclasses: repositories, issues, comments and more.

Handlers, payloads and webhooks read these; only the ``store_*`` query modules build them.
"""

from __future__ import annotations

from dataclasses import dataclass


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
