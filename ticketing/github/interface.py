"""What the ticketing layer needs from GitHub: the calls, as protocols, and the values they return.

:class:`~ticketing.github.client.GitHubClient` is the one implementation; the desk and the
write queue need only these protocols, so a test or a benchmark may hand them another.
Nothing here imports PyGithub.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from ticketing.errors import GitHubError


@dataclass(frozen=True)
class IssueRef:
    """An issue ticketproxy opened."""

    number: int
    url: str
    created_at: datetime


@dataclass(frozen=True)
class Comment:
    """An issue comment as the answer finder needs it."""

    id: int
    issue_number: int
    body: str
    author_login: str
    author_id: int
    created_at: datetime
    updated_at: datetime
    url: str


@dataclass(frozen=True)
class CommentPage:
    """The result of one repo-wide comment poll."""

    comments: tuple[Comment, ...]
    etag: str | None
    not_modified: bool
    requests: int
    rate_remaining: int | None
    rate_limit: int | None = None
    rate_reset: float | None = None  # epoch seconds (x-ratelimit-reset)


@dataclass(frozen=True)
class PostedComment:
    """A comment posted on an editor's behalf: its id, its address, and who GitHub says wrote it."""

    id: int
    url: str
    author: str


@runtime_checkable
class EditorComments(Protocol):
    """Posting a comment with an editor's own token (the desk API's signed comments)."""

    async def post_comment_as(self, number: int, body: str, *, token: str) -> PostedComment:
        """Post ``body`` on issue ``number`` as the owner of ``token``, once."""
        ...


class GitHubWrites(Protocol):
    """The follow-up writes the durable write queue sends; each is safe to repeat."""

    async def post_comment(
        self, number: int, body: str, *, might_have_sent: bool = False, lookback: int = 10
    ) -> int:
        """Post a comment once, first looking for it if an earlier attempt might have sent it."""
        ...

    async def set_labels(self, number: int, labels: list[str]) -> None:
        """Replace an issue's labels."""
        ...

    async def close_issue(self, number: int, *, labels: list[str] | None = None) -> None:
        """Close an issue as completed, replacing its labels in the same request if given."""
        ...

    async def reopen_issue(self, number: int, *, labels: list[str] | None = None) -> None:
        """Reopen an issue, replacing its labels in the same request if given."""
        ...

    async def lock_issue(self, number: int) -> None:
        """Lock an issue so that only collaborators can comment."""
        ...

    async def react(self, comment_id: int, content: str) -> bool:
        """Add a reaction to an issue comment; False if it was skipped."""
        ...

    async def dispatch_workflow(
        self, repository: str, workflow: str, *, ref: str, inputs: dict[str, str]
    ) -> None:
        """Start a workflow (file name or id) of another repository: ``workflow_dispatch``."""
        ...

    async def link_sub_issue(self, parent: int, child: int) -> bool:
        """Link issue ``child`` under issue ``parent`` (once); False if it already was."""
        ...

    async def replace_issue_section(self, number: int, section: str) -> bool:
        """Put the children's checklist ``section`` in an issue's body; False if unchanged."""
        ...


class GitHubIssues(GitHubWrites, Protocol):
    """Everything the desk asks of GitHub; it hands the same object to its write queue."""

    async def find_issue_by_marker(self, marker: str, *, scan: int = 100) -> IssueRef | None:
        """Find an issue of ours whose body holds ``marker`` among the newest ``scan`` issues."""
        ...

    async def create_issue(
        self, *, title: str, body: str, labels: list[str], marker: str, lock: bool = False
    ) -> IssueRef:
        """Open an issue exactly once: a repeat first looks for ``marker`` in recent issues."""
        ...

    async def list_comments(self, *, since: str | None, etag: str | None) -> CommentPage:
        """Fetch every comment updated since ``since`` with one conditional request per page."""
        ...

    @property
    def rate_remaining(self) -> int | None:
        """Return the primary rate limit's remaining requests, as GitHub last said."""
        ...

    @property
    def rate_limit(self) -> int | None:
        """Return the primary rate limit's size, as GitHub last said."""
        ...

    def reset_in(self, *, now: datetime) -> float | None:
        """Return the seconds until the primary rate limit resets, as GitHub last said."""
        ...

    @property
    def calls(self) -> Counter[tuple[str, str]]:
        """Return the calls made by (operation, outcome), for the proxy's metrics."""
        ...

    @property
    def last_failure(self) -> GitHubError | None:
        """Return the failure of the last call (None once a call succeeds), for readiness."""
        ...
