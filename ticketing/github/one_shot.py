"""The CLI's one-shot GitHub calls: post a comment, read an issue's history, list the tickets.

These run PyGithub synchronously on the caller's thread and do not retry: a CLI run is
short, and a failure is reported rather than repeated.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from github import Auth, Github

from ticketing.github.failures import classify_github_failure
from ticketing.github.interface import Comment
from ticketing.github.times import as_utc


@dataclass(frozen=True)
class IssueHistory:
    """An issue and every comment on it, as an offline audit or a reviewer reads them."""

    number: int
    url: str
    title: str
    body: str
    labels: tuple[str, ...]
    state: str
    author_login: str
    author_id: int
    created_at: datetime
    comments: tuple[Comment, ...]


def post_comment_once(*, api_url: str, token: str, repo: str, number: int, body: str) -> str:
    """Post one comment synchronously (for the CLI) and return its URL."""
    client = _sync_github(api_url, token)
    try:
        comment = client.get_repo(repo).get_issue(number).create_comment(body)
        return str(comment.html_url)
    except Exception as exc:
        raise classify_github_failure(exc) from exc
    finally:
        client.close()


def fetch_issue_once(*, api_url: str, token: str | None, repo: str, number: int) -> IssueHistory:
    """Fetch an issue and all its comments synchronously (for the CLI)."""
    client = _sync_github(api_url, token)
    try:
        return _issue_history(client.get_repo(repo).get_issue(number))
    except Exception as exc:
        raise classify_github_failure(exc) from exc
    finally:
        client.close()


def fetch_tickets_once(
    *, api_url: str, token: str | None, repo: str, label: str = "ticketproxy"
) -> tuple[IssueHistory, ...]:
    """Fetch every issue labelled ``label``, oldest first, with all comments (for the CLI)."""
    client = _sync_github(api_url, token)
    try:
        issues = client.get_repo(repo).get_issues(
            state="all", labels=[label], sort="created", direction="asc"
        )
        return tuple(_issue_history(issue) for issue in issues if issue.pull_request is None)
    except Exception as exc:
        raise classify_github_failure(exc) from exc
    finally:
        client.close()


def _sync_github(api_url: str, token: str | None) -> Github:
    # No retries: a CLI run is short, and a failure is reported rather than repeated.
    return Github(
        base_url=api_url.rstrip("/"),
        auth=Auth.Token(token) if token else None,
        retry=None,
        per_page=100,
        seconds_between_requests=None,
        seconds_between_writes=None,
        lazy=True,
    )


def _issue_history(issue: Any) -> IssueHistory:
    comments = tuple(
        Comment(
            id=int(comment.id),
            issue_number=int(issue.number),
            body=str(comment.body or ""),
            author_login=str(comment.user.login),
            author_id=int(comment.user.id),
            created_at=as_utc(comment.created_at),
            updated_at=as_utc(comment.updated_at),
            url=str(comment.html_url),
        )
        for comment in issue.get_comments()
    )
    return IssueHistory(
        number=int(issue.number),
        url=str(issue.html_url),
        title=str(issue.title or ""),
        body=str(issue.body or ""),
        labels=tuple(str(label.name) for label in issue.labels),
        state=str(issue.state),
        author_login=str(issue.user.login),
        author_id=int(issue.user.id),
        created_at=as_utc(issue.created_at),
        comments=comments,
    )
