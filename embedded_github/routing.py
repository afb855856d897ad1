"""How API handlers are declared and called: routes, the call they receive, the reply they give."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from yarl import URL

from embedded_github.config import SandboxApp, SandboxUser
from embedded_github.errors import invalid_field, not_found
from embedded_github.limits import RateStatus
from embedded_github.pagination import link_header, select_page
from embedded_github.payloads import PayloadBuilder
from embedded_github.state import SandboxState
from embedded_github.store_rows import CommentRow, IssueRow, RepoRow

T = TypeVar("T")


@dataclass(frozen=True)
class ApiCall:
    """One API request, parsed: what a handler needs and nothing of aiohttp."""

    method: str
    params: Mapping[str, str]
    query: Mapping[str, str]
    body: Any
    viewer: SandboxUser | None
    now: int
    state: SandboxState
    payloads: PayloadBuilder
    url: URL
    docs: str
    rate: RateStatus
    # The GitHub App whose JWT authenticated the call (App-only operations), if any.
    app: SandboxApp | None = None

    def repo(self) -> RepoRow:
        """Return the repository the path names, or raise GitHub's 404."""
        repo = self.state.find_repo(self.params["owner"], self.params["repo"])
        if repo is None:
            raise not_found(self.docs)
        return repo

    def issue(self) -> tuple[RepoRow, IssueRow]:
        """Return the repository and the issue the path names, or raise GitHub's 404."""
        repo = self.repo()
        issue = self.state.store.get_issue(repo.id, int(self.params["issue_number"]))
        if issue is None:
            raise not_found(self.docs)
        return repo, issue

    def comment(self) -> tuple[RepoRow, CommentRow]:
        """Return the repository and the comment the path names, or raise GitHub's 404."""
        repo = self.repo()
        comment = self.state.store.get_comment(repo.id, int(self.params["comment_id"]))
        if comment is None:
            raise not_found(self.docs)
        return repo, comment

    def choice(self, name: str, allowed: Sequence[str], default: str, resource: str) -> str:
        """Return a query parameter that must be one of a few values, or raise a 422."""
        value = self.query.get(name, default)
        if value not in allowed:
            raise invalid_field(resource, name, self.docs, value)
        return value


@dataclass(frozen=True)
class Reply:
    """A successful answer: status, JSON payload (None for no body) and extra headers."""

    status: int = 200
    payload: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)


Handler = Callable[[ApiCall], Reply]


@dataclass(frozen=True)
class Route:
    """One API operation: method, path pattern, handler and how the dispatcher treats it."""

    method: str
    pattern: re.Pattern[str]
    handler: Handler
    docs: str
    needs_auth: bool = False
    creates_content: bool = False
    counts_against_limit: bool = True
    # Authenticated by an App's JWT, not a token (GitHub's /app/... operations).
    app_only: bool = False


_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_NUMERIC = frozenset({"issue_number", "comment_id", "reaction_id", "installation_id"})


def route(
    method: str,
    template: str,
    handler: Handler,
    docs: str,
    *,
    needs_auth: bool = False,
    creates_content: bool = False,
    counts_against_limit: bool = True,
    app_only: bool = False,
) -> Route:
    """Declare a route from a path template such as ``/repos/{owner}/{repo}/issues``."""

    def group(match: re.Match[str]) -> str:
        name = match.group(1)
        return rf"(?P<{name}>\d+)" if name in _NUMERIC else rf"(?P<{name}>[^/]+)"

    pattern = re.compile(_PLACEHOLDER.sub(group, template))
    return Route(
        method=method,
        pattern=pattern,
        handler=handler,
        docs=docs,
        needs_auth=(needs_auth or method != "GET") and not app_only,
        creates_content=creates_content,
        counts_against_limit=counts_against_limit,
        app_only=app_only,
    )


def paged(call: ApiCall, items: Sequence[T], render: Callable[[T], Any]) -> Reply:
    """Answer one page of a list, with GitHub's ``Link`` header when there are others."""
    selected, page = select_page(items, call.query)
    link = link_header(call.url, page)
    return Reply(
        payload=[render(item) for item in selected],
        headers={} if link is None else {"Link": link},
    )
