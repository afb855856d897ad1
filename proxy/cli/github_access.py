"""GitHub as the person at the keyboard sees it: their own token, errors they can act on,
and an issue's comments in the form the audit reads.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator, Mapping

from proxy.cli.rules import parse_issue_url
from proxy.cli.variables import EDITOR_TOKEN_VARIABLE
from proxy.errors import ProxyError
from ticketing.audit.comments import AuditComment
from ticketing.errors import GitHubError
from ticketing.github.interface import Comment
from ticketing.github.one_shot import IssueHistory


def editor_issue(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[str, str, int, str]:
    """Return (API URL, OWNER/REPO, number, the editor's own token) for an issue command."""
    api_url, repo, number = parse_issue_url(args.issue_url)
    token = args.token or env.get("GITHUB_TOKEN") or env.get(EDITOR_TOKEN_VARIABLE)
    if not token:
        raise ProxyError("no GitHub token: pass --token or set GITHUB_TOKEN to your own token")
    return args.api_url or api_url, repo, number, token


@contextlib.contextmanager
def editor_errors(api_url: str, what: str) -> Iterator[None]:
    """Say what a person running the CLI can do about GitHub's 401 and 404."""
    try:
        yield
    except GitHubError as exc:
        # The shared messages speak to the server's operator (TICKETPROXY_*); this is a user.
        if exc.status == 401:
            raise ProxyError(
                f"GitHub at {api_url} rejected your token (401 Bad credentials): pass your own "
                "token with --token or set GITHUB_TOKEN"
            ) from None
        if exc.status == 404:
            raise ProxyError(
                f"{what} was not found at {api_url} (404): check the URL "
                "and that your token (GITHUB_TOKEN or --token) can see the repository"
            ) from None
        raise


def audit_comments(history: IssueHistory) -> tuple[AuditComment, ...]:
    """Return an issue's comments as the audit reads them."""
    return tuple(_audit_comment(comment) for comment in history.comments)


def _audit_comment(comment: Comment) -> AuditComment:
    return AuditComment(
        id=comment.id,
        author_login=comment.author_login,
        author_id=comment.author_id,
        body=comment.body,
        created_at=comment.created_at,
        updated_at=comment.updated_at,
        url=comment.url,
    )
