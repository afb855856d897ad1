"""PyGithub on one dedicated worker thread: connecting, retrying and counting every call.

PyGithub is synchronous and not thread-safe, so every call runs on one worker thread and
the event loop awaits it. PyGithub's own retry is switched off: it would re-send a POST
after a 5xx and open a second issue. Instead calls are retried here, honouring
``retry-after`` and ``x-ratelimit-reset``; a caller repeating a write whose outcome is
unknown passes ``before_retry`` to look for the write first. Calls take their turns on the
thread through :mod:`ticketing.github.turns`: new issues after everything else.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from github import Auth, Github, GithubException
from github.Requester import Requester

from ticketing.clock import Clock, Sleep
from ticketing.errors import GitHubError, GitHubUnavailable
from ticketing.github.app_auth import GitHubApp, app_installation_auth
from ticketing.github.failures import classify_github_failure
from ticketing.github.interface import CommentPage
from ticketing.github.turns import Turn, Turns

log = logging.getLogger(__name__)

T = TypeVar("T")


class GitHubWorker:
    """One repository's PyGithub client, used only from one thread, with retries on top."""

    def __init__(
        self,
        *,
        api_url: str,
        token: str | None,
        repo: str,
        app: GitHubApp | None,
        timeout: int,
        attempts: int,
        max_retry_wait: float,
        sleep: Sleep,
        clock: Clock,
    ) -> None:
        self._api_url = api_url
        self._repo_name = repo
        self._app = app
        self._token = token
        self._timeout = timeout
        self._clock = clock
        self._attempts = attempts
        self._max_retry_wait = max_retry_wait
        self._sleep = sleep
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="github")
        self._turns = Turns()
        self._github, self._repo = self._connect()
        # Reconnections so far (each buys an App a new installation token): one refused
        # token leads to one, however many calls were refused with it.
        self.reconnects = 0
        self.requests_made = 0
        # Read by the proxy's metrics and readiness check: calls by (operation, outcome),
        # and the failure of the last call (None once a call succeeds).
        self.calls: Counter[tuple[str, str]] = Counter()
        self.last_failure: GitHubError | None = None

    def _connect(self) -> tuple[Github, Any]:
        """Build PyGithub's client; with an App, a new one also means a new installation token."""
        auth: Auth.Auth | None
        if self._app is not None:
            auth = app_installation_auth(self._app, clock=self._clock)
        else:
            auth = Auth.Token(self._token) if self._token else None
        client = Github(
            base_url=self._api_url,
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
        return client, client.get_repo(self._repo_name)

    def _reconnect(self, *, unless_since: int | None = None) -> None:
        """Connect anew; with ``unless_since``, only if no one has since that connection.

        Runs on the worker thread, like every other use of the PyGithub client, so reconnects
        queued by calls that failed on the same token run one after another: the first buys
        the new token, the others find it bought.
        """
        if unless_since is not None and unless_since != self.reconnects:
            return
        stale = self._github
        self._github, self._repo = self._connect()
        self.reconnects += 1
        stale.close()

    @property
    def repo(self) -> Any:
        """Return PyGithub's repository object; use it only inside calls run here."""
        return self._repo

    @property
    def requester(self) -> Requester:
        """Return PyGithub's requester; use it only inside calls run here."""
        return self._github.requester

    async def close(self) -> None:
        """Stop the worker thread and close PyGithub's connection."""
        await self._run(self._github.close)
        self._executor.shutdown(wait=True)

    async def _run(self, fn: Callable[[], T], turn: Turn = Turn.SOON) -> T:
        await self._turns.take(turn)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn)
        finally:
            self._turns.give_back()

    async def call(self, fn: Callable[[], T], *, what: str, turn: Turn = Turn.SOON) -> T:
        """Run one GitHub call on the worker thread, mapping failures to GitHubError.

        ``turn`` says how soon it runs among the calls waiting for the thread.
        """
        try:
            self.requests_made += 1
            connection = self.reconnects
            try:
                result = await self._run(fn, turn)
            except GithubException as exc:
                if self._app is None or exc.status != 401:
                    raise
                # GitHub refused the installation token before PyGithub thought it expired
                # (clock drift, or a revoked token): buy a new one and try once more. Calls
                # queued behind this one failed with the same token: they retry on the new
                # one rather than each buying another.
                log.info("github %s: installation token refused, fetching a new one", what)
                await self._run(functools.partial(self._reconnect, unless_since=connection))
                self.requests_made += 1
                result = await self._run(fn, turn)
        except Exception as exc:
            error = classify_github_failure(exc, app=self._app is not None)
            log.warning("github %s failed: %s", what, error)
            self.last_failure = error
            unknown = "unreachable" if isinstance(error, GitHubUnavailable) else "error"
            self.calls[what, str(error.status or unknown)] += 1
            raise error from exc
        self.last_failure = None
        outcome = "304" if isinstance(result, CommentPage) and result.not_modified else "2xx"
        self.calls[what, outcome] += 1
        return result

    async def call_for_someone_else(self, fn: Callable[[], T], *, what: str) -> T:
        """Run one call made with another's credentials (an editor's token), once.

        Its failures are the caller's, not this server's: they are classified but not kept
        as :attr:`last_failure` (readiness would blame ticketproxy's own credentials), a 401
        buys no new installation token, and nothing is retried (a repeated POST could post
        twice).
        """
        self.requests_made += 1
        try:
            result = await self._run(fn)
        except Exception as exc:
            error = classify_github_failure(exc)
            self.calls[what, str(error.status or "unreachable")] += 1
            raise error from exc
        self.calls[what, "2xx"] += 1
        return result

    async def retrying(
        self,
        fn: Callable[[], T],
        *,
        what: str,
        before_retry: Callable[[], Awaitable[T | None]] | None = None,
        turn: Turn = Turn.SOON,
    ) -> T:
        """Run ``fn`` with retries on GitHubUnavailable that honour GitHub's wait hints.

        ``before_retry`` is asked before each repeat whether the previous attempt in fact
        succeeded (a write whose response was lost); a non-None result ends the retries.
        """
        # A plain loop, not a retry library's per-call state: thousands of calls can wait
        # for the worker at once (a burst of new tickets), and each byte held is per call.
        attempts = max(1, self._attempts)
        for attempt in range(1, attempts + 1):
            try:
                if attempt > 1 and before_retry is not None:
                    found = await before_retry()
                    if found is not None:
                        return found
                return await self.call(fn, what=what, turn=turn)
            except GitHubUnavailable as exc:
                # A wait longer than we are willing to block the caller for is passed up,
                # so the client can be told 429 with retry-after instead.
                if attempt >= attempts or exc.retry_after > self._max_retry_wait:
                    raise
                await self._sleep(float(exc.retry_after))
        raise AssertionError("unreachable")  # pragma: no cover
