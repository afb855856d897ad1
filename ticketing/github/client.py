"""The GitHub adapter: issues, comments, reactions and the comment poll for one repository.

Every PyGithub call runs on the one worker thread of :class:`GitHubWorker`, which retries
with GitHub's wait hints. Writes whose outcome is unknown are repeated only after looking
for them: an issue by its hidden marker, a comment by its body. Content creation is paced
by a :class:`WriteThrottle` below GitHub's secondary limits.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from datetime import datetime
from typing import Any

from ticketing.clock import Clock, Sleep, utc_now
from ticketing.errors import GitHubError
from ticketing.github.app_auth import ClockedAppAuth, GitHubApp
from ticketing.github.as_editor import editor_comment
from ticketing.github.comment_poll import fetch_comment_page
from ticketing.github.failures import APP_INSTALLATION_VARIABLE
from ticketing.github.interface import CommentPage, IssueRef, PostedComment
from ticketing.github.sub_issue_calls import SubIssueCalls
from ticketing.github.throttle import WriteThrottle
from ticketing.github.turns import Turn
from ticketing.github.worker import GitHubWorker
from ticketing.github.workflow_dispatch import send_workflow_dispatch

log = logging.getLogger(__name__)

GITHUB_API_URL = "https://api.github.com"

# The part of the write budget reactions may use (see GitHubClient.react).
REACTION_BUDGET_SHARE = 0.5


class GitHubClient(SubIssueCalls):
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
        sleep: Sleep = asyncio.sleep,
        clock: Clock = utc_now,
    ) -> None:
        if token and app is not None:
            raise ValueError("give a token or a GitHub App, not both")
        self.api_url = api_url.rstrip("/")
        self.repo_name = repo
        self.app = app
        self._clock = clock
        self._throttle = throttle or WriteThrottle(sleep=sleep)
        self._worker = GitHubWorker(
            api_url=self.api_url,
            token=token,
            repo=repo,
            app=app,
            timeout=timeout,
            attempts=attempts,
            max_retry_wait=max_retry_wait,
            sleep=sleep,
            clock=clock,
        )
        self.rate_remaining: int | None = None
        self.rate_limit: int | None = None
        self.rate_reset: float | None = None

    @property
    def requests_made(self) -> int:
        """Return how many requests were sent to GitHub."""
        return self._worker.requests_made

    @property
    def reconnects(self) -> int:
        """Return how often the client connected anew (with an App: bought a new token)."""
        return self._worker.reconnects

    @property
    def calls(self) -> Counter[tuple[str, str]]:
        """Return the calls made by (operation, outcome), for the proxy's metrics."""
        return self._worker.calls

    @property
    def last_failure(self) -> GitHubError | None:
        """Return the failure of the last call (None once a call succeeds), for readiness."""
        return self._worker.last_failure

    async def app_bot_login(self) -> str:
        """Return the App's bot login, ``<slug>[bot]``, from the repository's installation.

        Asked with the App's JWT (``GET /repos/{owner}/{repo}/installation``), which also
        checks that the configured installation is the one on the ticket repository.
        """
        app = self.app
        if app is None:
            raise GitHubError("ticketproxy is not authenticated as a GitHub App")

        def fetch() -> dict[str, Any]:
            requester = self._requester.withAuth(ClockedAppAuth(app, clock=self._clock))
            _, data = requester.requestJsonAndCheck("GET", f"/repos/{self.repo_name}/installation")
            return dict(data)

        data = await self._worker.retrying(fetch, what="get installation")
        if int(data.get("id", 0)) != app.installation_id:
            raise GitHubError(
                f"the GitHub App is installed on {self.repo_name} as installation "
                f"{data.get('id')}, not {app.installation_id}: set "
                f"{APP_INSTALLATION_VARIABLE}={data.get('id')}"
            )
        return f"{data['app_slug']}[bot]"

    async def check_repository(self) -> None:
        """Check that GitHub takes the credentials and shows the repository, with Issues on.

        One ``GET /repos/{owner}/{repo}``: a bad token is a 401, a repository the token cannot
        see a 404, each raised as the ``GitHubError`` that names the setting to fix.
        """

        def fetch() -> dict[str, Any]:
            _, data = self._requester.requestJsonAndCheck("GET", f"/repos/{self.repo_name}")
            return dict(data)

        data = await self._worker.call(fetch, what="get repository")
        if data.get("has_issues") is False:
            # Every issue call would be refused with 410 Gone: readiness reports it from now.
            self._worker.last_failure = error = GitHubError(
                f"Issues are turned off on {self.repo_name}: turn them on in the repository's "
                "settings (General, Features), or set TICKETPROXY_GITHUB_REPO to another one",
                status=410,
            )
            raise error

    def reset_in(self, *, now: datetime) -> float | None:
        """Return the seconds until the primary rate limit resets, as GitHub last said."""
        return None if self.rate_reset is None else self.rate_reset - now.timestamp()

    async def close(self) -> None:
        """Stop the worker thread and close PyGithub's connection."""
        await self._worker.close()
        await self._throttle.close()

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

        return await self._worker.retrying(find, what="find issue by marker")

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

        # New work waits for the work under way (locks, continuations, polls, follow-ups).
        ref = await self._worker.retrying(
            create, what="create issue", before_retry=already_created, turn=Turn.OPENING
        )
        if lock:
            await self.lock_issue(ref.number)
        return ref

    async def lock_issue(self, number: int) -> None:
        """Lock an issue so that only collaborators can comment."""

        def lock() -> None:
            self._requester.requestJsonAndCheck(
                "PUT", f"{self._repo.url}/issues/{number}/lock", input={}
            )

        await self._worker.retrying(lock, what="lock issue")

    async def set_labels(self, number: int, labels: list[str]) -> None:
        """Replace an issue's labels."""
        await self._worker.retrying(
            lambda: self._repo.get_issue(number).set_labels(*labels), what="set labels"
        )

    async def close_issue(self, number: int, *, labels: list[str] | None = None) -> None:
        """Close an issue as completed, replacing its labels in the same request if given."""
        fields: dict[str, Any] = {"state": "closed", "state_reason": "completed"}
        await self._edit_issue(number, fields, labels, what="close issue")

    async def reopen_issue(self, number: int, *, labels: list[str] | None = None) -> None:
        """Reopen an issue (the next step of an agent run arrived), and relabel it if given."""
        await self._edit_issue(number, {"state": "open"}, labels, what="reopen issue")

    async def _edit_issue(
        self, number: int, fields: dict[str, Any], labels: list[str] | None, *, what: str
    ) -> None:
        """Send one ``PATCH /issues/{number}``: state and labels together cost one write.

        https://docs.github.com/en/rest/issues/issues#update-an-issue (``labels`` replaces
        them all). Sent straight, without fetching the issue first.
        """
        body = fields if labels is None else {**fields, "labels": labels}

        def edit() -> None:
            self._requester.requestJsonAndCheck(
                "PATCH", f"{self._repo.url}/issues/{number}", input=body
            )

        await self._worker.retrying(edit, what=what)

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

            return await self._worker.call(find, what="find comment")

        if might_have_sent:
            found = await already_posted()
            if found is not None:
                return found
        await self._throttle.acquire()
        return await self._worker.retrying(post, what="post comment", before_retry=already_posted)

    async def post_comment_as(self, number: int, body: str, *, token: str) -> PostedComment:
        """Post a comment as the editor whose GitHub ``token`` this is, once (see as_editor)."""
        post = editor_comment(lambda: self._requester, lambda: self._repo.url, number, body, token)
        await self._throttle.acquire()
        return await self._worker.call_for_someone_else(post, what="post comment as editor")

    async def react(self, comment_id: int, content: str) -> bool:
        """Add a reaction (``eyes``, ``+1``, ``-1`` …) to a comment; False if skipped.

        Reactions are content GitHub's secondary limits count, like comments, but only a
        courtesy: one is sent only while at most half of the write budget is used, so that
        it never makes a new ticket or a reply wait.
        """
        if not await self._throttle.try_acquire(share=REACTION_BUDGET_SHARE):
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

        await self._worker.retrying(react, what="react")
        return True

    async def dispatch_workflow(
        self, repository: str, workflow: str, *, ref: str, inputs: dict[str, str]
    ) -> None:
        """Start a workflow of another repository (an editor's fork): ``workflow_dispatch``."""
        await self._throttle.acquire()

        def send() -> None:
            send_workflow_dispatch(self._requester, repository, workflow, ref=ref, inputs=inputs)

        await self._worker.call(send, what="dispatch workflow")

    # --- polling -------------------------------------------------------------------------

    async def list_comments(self, *, since: str | None, etag: str | None) -> CommentPage:
        """Fetch every comment updated since ``since`` with one conditional request per page."""

        def fetch() -> CommentPage:
            return fetch_comment_page(self._requester, self._repo.url, since=since, etag=etag)

        page = await self._worker.retrying(fetch, what="list comments")
        self._worker.requests_made += page.requests - 1
        self.rate_remaining = page.rate_remaining
        self.rate_limit = page.rate_limit
        self.rate_reset = page.rate_reset
        return page
