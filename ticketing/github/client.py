"""The GitHub adapter: the only module that imports PyGithub.

PyGithub is synchronous and not thread-safe, so every call runs on one dedicated worker
thread and the event loop awaits it. PyGithub's own retry is switched off: it would re-send
a POST after a 5xx and open a second issue. Instead this module retries with tenacity,
honours ``retry-after`` and ``x-ratelimit-reset``, and before repeating a write whose
outcome is unknown it looks for the write's hidden marker.

Answers are found with one conditional request per poll, however many tickets pend:
``GET /repos/{o}/{r}/issues/comments?sort=updated&direction=asc&since=…`` with
``If-None-Match`` (https://docs.github.com/en/rest/issues/comments#list-issue-comments-for-a-repository).
A ``304`` does not count against the primary rate limit.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import github
import jwt
from github import Auth, Github, GithubException
from github.Requester import Requester
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

from ticketing.errors import GitHubError, GitHubUnavailable
from ticketing.github.throttle import WriteThrottle

log = logging.getLogger(__name__)

T = TypeVar("T")

GITHUB_API_URL = "https://api.github.com"
_LINK_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')
# How long to wait for GitHub before retrying when it gave no hint (5xx, dropped connection).
_DEFAULT_BACKOFF = 2.0
# Shares of the primary rate limit below which polling slows down, and by how much.
_RATE_LOW = 0.20
_RATE_CRITICAL = 0.05
_LOW_RATE_STRETCH = 4.0


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
class GitHubApp:
    """A GitHub App installation ticketproxy authenticates as, instead of a token."""

    app_id: str
    installation_id: int
    private_key: str = field(repr=False)


# Where each credential comes from, for error messages that name what to fix.
PAT_SETTING = "TICKETPROXY_GITHUB_TOKEN"
APP_VARIABLES = (
    "TICKETPROXY_GITHUB_APP_ID and TICKETPROXY_GITHUB_APP_PRIVATE_KEY "
    "(or TICKETPROXY_GITHUB_APP_PRIVATE_KEY_FILE)"
)
APP_INSTALLATION_VARIABLE = "TICKETPROXY_GITHUB_APP_INSTALLATION_ID"
# PyGithub's defaults: the JWT is backdated a minute for clock drift and lives five minutes.
_JWT_BACKDATE = 60
_JWT_LIFETIME = 300


class _ClockedAppAuth(Auth.AppAuth):
    """PyGithub's App JWT auth, with ``iat`` and ``exp`` read from an injected clock."""

    def __init__(self, app: GitHubApp, *, clock: Callable[[], datetime]) -> None:
        super().__init__(app.app_id, app.private_key)
        self._private_key = app.private_key
        self._clock = clock

    def create_jwt(self, expiration: int | None = None) -> str:
        """Return a fresh RS256 JWT: ``iss`` the App id, valid from a minute ago."""
        now = int(self._clock().timestamp())
        payload = {
            "iat": now - _JWT_BACKDATE,
            "exp": now + (expiration or _JWT_LIFETIME),
            "iss": str(self.app_id),
        }
        return jwt.encode(payload, self._private_key, algorithm="RS256")


def app_installation_auth(
    app: GitHubApp, *, clock: Callable[[], datetime]
) -> Auth.AppInstallationAuth:
    """Return PyGithub's auth for an App installation; it buys and renews its own token."""
    return _ClockedAppAuth(app, clock=clock).get_installation_auth(app.installation_id)


# The part of the write budget reactions may use (see GitHubClient.react).
REACTION_BUDGET_SHARE = 0.5


def _utc_now() -> datetime:
    return datetime.now(UTC)


def parse_github_time(value: str) -> datetime:
    """Parse a GitHub timestamp such as ``2026-01-02T03:04:05Z`` into an aware datetime."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def format_github_time(value: datetime) -> str:
    """Format an aware datetime the way GitHub's ``since`` parameter expects."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def poll_delay(
    base: float, remaining: int | None, limit: int | None, reset_in: float | None
) -> float:
    """Return how long to wait before the next poll, stretched as the rate budget runs out.

    Below 20 % of the primary limit poll at most every 4x ``base``; below 5 % wait until
    the budget resets (``reset_in`` seconds from now), so that the requests left go to
    opening tickets and posting replies rather than to polling.
    """
    if remaining is None or not limit:
        return base
    share = remaining / limit
    if share < _RATE_CRITICAL and reset_in is not None:
        return max(base * _LOW_RATE_STRETCH, reset_in)
    if share < _RATE_LOW:
        return base * _LOW_RATE_STRETCH
    return base


def _header(headers: Mapping[str, Any] | None, name: str) -> str | None:
    for key, value in (headers or {}).items():
        if key.lower() == name:
            return str(value)
    return None


def classify_github_failure(
    exc: BaseException, *, now: float | None = None, app: bool = False
) -> GitHubError:
    """Turn a PyGithub or transport exception into this package's error tree.

    ``app`` says ticketproxy authenticates as a GitHub App, so the messages name its settings.
    """
    now = time.time() if now is None else now
    if isinstance(exc, GithubException):
        status = exc.status
        headers = exc.headers
        data_message = exc.data.get("message") if isinstance(exc.data, dict) else None
        message = str(exc.message or data_message or f"HTTP {status}")
        retry_after = _header(headers, "retry-after")
        remaining = _header(headers, "x-ratelimit-remaining")
        reset = _header(headers, "x-ratelimit-reset")
        limited = (
            isinstance(exc, github.RateLimitExceededException)
            or status == 429
            or (status == 403 and (retry_after is not None or remaining == "0"))
        )
        if limited:
            if retry_after is not None:
                wait = float(retry_after)
            elif remaining == "0" and reset is not None:
                wait = max(1.0, float(reset) - now)
            else:
                # GitHub's advice when it names no time: wait at least a minute.
                wait = 60.0
            return GitHubUnavailable(
                f"GitHub is rate-limiting ticketproxy ({status}: {message})",
                retry_after=wait,
                status=status,
            )
        if status >= 500:
            wait = float(retry_after) if retry_after is not None else _DEFAULT_BACKOFF
            return GitHubUnavailable(
                f"GitHub failed ({status}: {message})", retry_after=wait, status=status
            )
        if status == 401 and app:
            return GitHubError(
                f"GitHub rejected the GitHub App's credentials (401 {message}): check that "
                f"{APP_VARIABLES} are the App's id and one of its private keys",
                status=status,
            )
        if status == 401:
            return GitHubError(
                f"GitHub rejected the token (401 Bad credentials): check {PAT_SETTING}",
                status=status,
            )
        if status == 404 and app:
            return GitHubError(
                f"GitHub answered 404: check TICKETPROXY_GITHUB_REPO and that "
                f"{APP_INSTALLATION_VARIABLE} names the App's installation on that repository",
                status=status,
            )
        if status == 404:
            return GitHubError(
                "GitHub answered 404: check TICKETPROXY_GITHUB_REPO and that the token can see "
                "the repository",
                status=status,
            )
        if status == 403:
            return GitHubError(
                f"GitHub refused ({message}): the token needs read and write access to Issues",
                status=status,
            )
        return GitHubError(f"GitHub answered {status}: {message}", status=status)
    if isinstance(exc, OSError):
        # requests' ConnectionError and Timeout are OSErrors.
        return GitHubUnavailable(
            f"GitHub is unreachable ({type(exc).__name__})", retry_after=_DEFAULT_BACKOFF
        )
    return GitHubError(f"unexpected failure talking to GitHub: {type(exc).__name__}: {exc}")


class GitHubClient:
    """Async facade over PyGithub for one repository, running every call on one thread."""

    def __init__(
        self,
        *,
        api_url: str,
        token: str | None,
        repo: str,
        app: GitHubApp | None = None,
        timeout: int = 15,
        attempts: int = 3,
        max_retry_wait: float = 10.0,
        throttle: WriteThrottle | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        if token and app is not None:
            raise ValueError("give a token or a GitHub App, not both")
        self.api_url = api_url.rstrip("/")
        self.repo_name = repo
        self.app = app
        self._token = token
        self._timeout = timeout
        self._clock = clock
        self._attempts = attempts
        self._max_retry_wait = max_retry_wait
        self._sleep = sleep
        self._throttle = throttle or WriteThrottle(sleep=sleep)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="github")
        self._github, self._repo = self._connect()
        self.requests_made = 0
        self.rate_remaining: int | None = None
        self.rate_limit: int | None = None
        self.rate_reset: float | None = None
        # Read by the proxy's metrics and readiness check: calls by (operation, outcome),
        # and the failure of the last call (None once a call succeeds).
        self.calls: Counter[tuple[str, str]] = Counter()
        self.last_failure: GitHubError | None = None

    def _connect(self) -> tuple[Github, Any]:
        """Build PyGithub's client; with an App, a new one also means a new installation token."""
        auth: Auth.Auth | None
        if self.app is not None:
            auth = app_installation_auth(self.app, clock=self._clock)
        else:
            auth = Auth.Token(self._token) if self._token else None
        client = Github(
            base_url=self.api_url,
            auth=auth,
            timeout=self._timeout,
            retry=None,
            # ticketproxy paces writes itself (WriteThrottle); PyGithub's pauses would
            # block the single worker thread.
            seconds_between_requests=None,
            seconds_between_writes=None,
            # GitHub's largest page: a marker lookup over 100 issues is one request, not four.
            per_page=100,
            lazy=True,
        )
        return client, client.get_repo(self.repo_name)

    def _reconnect(self) -> None:
        # Runs on the worker thread, like every other use of the PyGithub client.
        stale = self._github
        self._github, self._repo = self._connect()
        stale.close()

    @property
    def _requester(self) -> Requester:
        return self._github.requester

    async def app_bot_login(self) -> str:
        """Return the App's bot login, ``<slug>[bot]``, from the repository's installation.

        Asked with the App's JWT (``GET /repos/{owner}/{repo}/installation``), which also
        checks that the configured installation is the one on the ticket repository.
        """
        app = self.app
        if app is None:
            raise GitHubError("ticketproxy is not authenticated as a GitHub App")

        def fetch() -> dict[str, Any]:
            requester = self._requester.withAuth(_ClockedAppAuth(app, clock=self._clock))
            _, data = requester.requestJsonAndCheck("GET", f"/repos/{self.repo_name}/installation")
            return dict(data)

        data = await self._retrying(fetch, what="get installation")
        if int(data.get("id", 0)) != app.installation_id:
            raise GitHubError(
                f"the GitHub App is installed on {self.repo_name} as installation "
                f"{data.get('id')}, not {app.installation_id}: set "
                f"{APP_INSTALLATION_VARIABLE}={data.get('id')}"
            )
        return f"{data['app_slug']}[bot]"

    def reset_in(self, *, now: datetime) -> float | None:
        """Return the seconds until the primary rate limit resets, as GitHub last said."""
        return None if self.rate_reset is None else self.rate_reset - now.timestamp()

    async def close(self) -> None:
        """Stop the worker thread and close PyGithub's connection."""
        await self._run(self._github.close)
        self._executor.shutdown(wait=True)

    async def _run(self, fn: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn)

    async def _call(self, fn: Callable[[], T], *, what: str) -> T:
        """Run one GitHub call on the worker thread, mapping failures to GitHubError."""
        try:
            self.requests_made += 1
            try:
                result = await self._run(fn)
            except GithubException as exc:
                if self.app is None or exc.status != 401:
                    raise
                # GitHub refused the installation token before PyGithub thought it expired
                # (clock drift, or a revoked token): buy a new one and try once more.
                log.info("github %s: installation token refused, fetching a new one", what)
                await self._run(self._reconnect)
                self.requests_made += 1
                result = await self._run(fn)
        except Exception as exc:
            error = classify_github_failure(exc, app=self.app is not None)
            log.warning("github %s failed: %s", what, error)
            self.last_failure = error
            unknown = "unreachable" if isinstance(error, GitHubUnavailable) else "error"
            self.calls[what, str(error.status or unknown)] += 1
            raise error from exc
        self.last_failure = None
        outcome = "304" if isinstance(result, CommentPage) and result.not_modified else "2xx"
        self.calls[what, outcome] += 1
        return result

    async def _retrying(
        self,
        fn: Callable[[], T],
        *,
        what: str,
        before_retry: Callable[[], Awaitable[T | None]] | None = None,
    ) -> T:
        """Run ``fn`` with retries on GitHubUnavailable that honour GitHub's wait hints.

        ``before_retry`` is asked before each repeat whether the previous attempt in fact
        succeeded (a write whose response was lost); a non-None result ends the retries.
        """

        def wait(retry_state: Any) -> float:
            exc = retry_state.outcome.exception()
            hint = exc.retry_after if isinstance(exc, GitHubUnavailable) else _DEFAULT_BACKOFF
            return float(min(hint, self._max_retry_wait))

        def worth_retrying(exc: BaseException) -> bool:
            # A wait longer than we are willing to block the caller for is passed up,
            # so the client can be told 429 with retry-after instead.
            return isinstance(exc, GitHubUnavailable) and exc.retry_after <= self._max_retry_wait

        attempt_no = 0
        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(self._attempts),
            wait=wait,
            retry=retry_if_exception(worth_retrying),
            sleep=self._sleep,
            reraise=True,
        ):
            with attempt:
                attempt_no += 1
                if attempt_no > 1 and before_retry is not None:
                    found = await before_retry()
                    if found is not None:
                        return found
                return await self._call(fn, what=what)
        raise AssertionError("unreachable")  # pragma: no cover

    # --- issues --------------------------------------------------------------------------

    def _issue_ref(self, issue: Any) -> IssueRef:
        return IssueRef(number=issue.number, url=issue.html_url, created_at=issue.created_at)

    async def find_issue_by_marker(self, marker: str, *, scan: int = 100) -> IssueRef | None:
        """Find an issue of ours whose body holds ``marker`` among the newest ``scan`` issues.

        Search is not used because GitHub's search index lags by up to a minute.
        """

        def find() -> IssueRef | None:
            issues = self._repo.get_issues(
                state="all", labels=["ticketproxy"], sort="created", direction="desc"
            )
            for index, issue in enumerate(issues):
                if index >= scan:
                    return None
                if marker in (issue.body or ""):
                    return self._issue_ref(issue)
            return None

        return await self._retrying(find, what="find issue by marker")

    async def create_issue(
        self, *, title: str, body: str, labels: list[str], marker: str, lock: bool = False
    ) -> IssueRef:
        """Open an issue exactly once: a repeat first looks for ``marker`` in recent issues."""
        await self._throttle.acquire()

        def create() -> IssueRef:
            issue = self._repo.create_issue(title=title, body=body, labels=labels)
            return self._issue_ref(issue)

        async def already_created() -> IssueRef | None:
            return await self.find_issue_by_marker(marker)

        ref = await self._retrying(create, what="create issue", before_retry=already_created)
        if lock:
            await self.lock_issue(ref.number)
        return ref

    async def lock_issue(self, number: int) -> None:
        """Lock an issue so that only collaborators can comment."""

        def lock() -> None:
            self._requester.requestJsonAndCheck(
                "PUT", f"{self._repo.url}/issues/{number}/lock", input={}
            )

        await self._retrying(lock, what="lock issue")

    async def set_labels(self, number: int, labels: list[str]) -> None:
        """Replace an issue's labels."""
        await self._retrying(
            lambda: self._repo.get_issue(number).set_labels(*labels), what="set labels"
        )

    async def close_issue(self, number: int) -> None:
        """Close an issue as completed."""
        await self._retrying(
            lambda: self._repo.get_issue(number).edit(state="closed", state_reason="completed"),
            what="close issue",
        )

    async def reopen_issue(self, number: int) -> None:
        """Reopen an issue (the next step of an agent run arrived)."""
        await self._retrying(
            lambda: self._repo.get_issue(number).edit(state="open"), what="reopen issue"
        )

    async def post_comment(
        self, number: int, body: str, *, might_have_sent: bool = False, lookback: int = 10
    ) -> int:
        """Post a comment once: a repeat first checks whether the same body is already there.

        ``might_have_sent`` says an earlier attempt (perhaps by a process that died since)
        may have posted it already, so even the first request here looks before posting,
        among the newest ``lookback`` comments (more when a series of comments was posted).
        """

        def post() -> int:
            return int(self._repo.get_issue(number).create_comment(body).id)

        async def already_posted() -> int | None:
            def find() -> int | None:
                # Our lost write, if it landed, is among the newest comments.
                newest = self._repo.get_issue(number).get_comments().reversed
                for index, comment in enumerate(newest):
                    if index >= lookback:
                        break
                    if comment.body == body:
                        return int(comment.id)
                return None

            return await self._call(find, what="find comment")

        if might_have_sent:
            found = await already_posted()
            if found is not None:
                return found
        await self._throttle.acquire()
        return await self._retrying(post, what="post comment", before_retry=already_posted)

    async def react(self, comment_id: int, content: str) -> bool:
        """Add a reaction (``eyes``, ``+1``, ``-1`` …) to a comment; False if skipped.

        Reactions are content GitHub's secondary limits count, like comments, but only a
        courtesy: one is sent only while at most half of the write budget is used, so that
        it never makes a new ticket or a reply wait.
        """
        if not self._throttle.try_acquire(share=REACTION_BUDGET_SHARE):
            log.info(
                "reaction %s on comment %d skipped: the write budget is busy", content, comment_id
            )
            return False

        def react() -> None:
            # Repository.get_comment is a *commit* comment; issue comments live under
            # /issues/comments (https://docs.github.com/en/rest/reactions/reactions).
            self._requester.requestJsonAndCheck(
                "POST",
                f"{self._repo.url}/issues/comments/{comment_id}/reactions",
                input={"content": content},
            )

        await self._retrying(react, what="react")
        return True

    # --- polling -------------------------------------------------------------------------

    async def list_comments(self, *, since: str | None, etag: str | None) -> CommentPage:
        """Fetch every comment updated since ``since`` with one conditional request per page."""

        def fetch() -> CommentPage:
            params: dict[str, Any] = {"sort": "updated", "direction": "asc", "per_page": 100}
            if since is not None:
                params["since"] = since
            url: str | None = f"{self._repo.url}/issues/comments"
            headers = {"If-None-Match": etag} if etag else None
            comments: list[Comment] = []
            first_etag: str | None = None
            requests = 0
            remaining: int | None = None
            limit: int | None = None
            reset: float | None = None
            while url is not None:
                status, response_headers, text = self._requester.requestJson(
                    "GET", url, parameters=params, headers=headers
                )
                requests += 1
                remaining_header = _header(response_headers, "x-ratelimit-remaining")
                if remaining_header is not None:
                    remaining = int(remaining_header)
                limit_header = _header(response_headers, "x-ratelimit-limit")
                if limit_header is not None:
                    limit = int(limit_header)
                reset_header = _header(response_headers, "x-ratelimit-reset")
                if reset_header is not None:
                    reset = float(reset_header)
                if status == 304:
                    return CommentPage((), etag, True, requests, remaining, limit, reset)
                if status >= 400:
                    data = json.loads(text) if text else {}
                    raise Requester.createException(status, response_headers, data)
                if requests == 1:
                    first_etag = _header(response_headers, "etag")
                comments.extend(self._comment(item) for item in json.loads(text))
                link = _header(response_headers, "link") or ""
                match = _LINK_NEXT.search(link)
                url = match.group(1) if match else None
                params, headers = {}, None
                if url is not None:
                    # A conditional request only covers the first page, so an ETag for a
                    # multi-page answer could hide new comments on later pages.
                    first_etag = None
            return CommentPage(
                tuple(comments), first_etag, False, requests, remaining, limit, reset
            )

        page = await self._retrying(fetch, what="list comments")
        self.requests_made += page.requests - 1
        self.rate_remaining = page.rate_remaining
        self.rate_limit = page.rate_limit
        self.rate_reset = page.rate_reset
        return page

    def _comment(self, item: Mapping[str, Any]) -> Comment:
        issue_url = str(item.get("issue_url", ""))
        tail = issue_url.rsplit("/issues/", 1)[-1]
        return Comment(
            id=int(item["id"]),
            issue_number=int(tail) if tail.isdigit() else 0,
            body=str(item.get("body") or ""),
            author_login=str(item["user"]["login"]),
            author_id=int(item["user"]["id"]),
            created_at=parse_github_time(item["created_at"]),
            updated_at=parse_github_time(item["updated_at"]),
            url=str(item.get("html_url", "")),
        )


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


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _issue_history(issue: Any) -> IssueHistory:
    comments = tuple(
        Comment(
            id=int(comment.id),
            issue_number=int(issue.number),
            body=str(comment.body or ""),
            author_login=str(comment.user.login),
            author_id=int(comment.user.id),
            created_at=_aware(comment.created_at),
            updated_at=_aware(comment.updated_at),
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
        created_at=_aware(issue.created_at),
        comments=comments,
    )


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
