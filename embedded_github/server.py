"""The sandbox itself: its state, its aiohttp application, and starting it on a port."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from embedded_github.account_payloads import API_PREFIX
from embedded_github.config import SandboxConfig, SandboxUser
from embedded_github.dispatch import ApiDispatcher, RecordedRequest
from embedded_github.faults import FaultPlan, FaultQueue
from embedded_github.limits import CreationRateLimiter, PrimaryRateLimiter
from embedded_github.state import SandboxState
from embedded_github.store import SandboxStore
from embedded_github.timestamps import utc_now
from embedded_github.users_file import UsersFileWatch
from embedded_github.web_pages import WebPages
from embedded_github.webhooks import WebhookDelivery, WebhookSender, WebhookTarget
from embedded_github.workflows import DispatchRecord, SandboxWorkflow


class Sandbox:
    """A GitHub-compatible server for the REST subset ticketproxy uses, plus local web pages."""

    def __init__(
        self,
        config: SandboxConfig,
        *,
        db_path: str | Path = ":memory:",
        clock: Callable[[], datetime] = utc_now,
        rate_limit: int = 5000,
        creations_per_minute: int = 80,
        creations_per_hour: int = 500,
        webhooks: Sequence[WebhookTarget] = (),
    ) -> None:
        """Open the store, register users and repositories, set the limits and the webhooks."""
        self.config = config
        self.store = SandboxStore(db_path)
        self.state = SandboxState(config, store=self.store, clock=clock)
        self.requests: list[RecordedRequest] = []
        self.rate_limit = rate_limit
        self._faults = FaultQueue()
        self._primary = PrimaryRateLimiter()
        self._creations = CreationRateLimiter(
            per_minute=creations_per_minute, per_hour=creations_per_hour
        )
        self._dispatcher = ApiDispatcher(
            state=self.state,
            rate_limit=rate_limit,
            primary=self._primary,
            creations=self._creations,
            faults=self._faults,
            requests=self.requests,
        )
        self.webhooks = WebhookSender(self.state, targets=webhooks)

    def next_issue_number(self, full_name: str) -> int:
        """Return the number the next issue of repository ``OWNER/NAME`` gets (1 if none)."""
        owner, _, name = full_name.partition("/")
        repo = self.store.get_repo(owner, name)
        return 1 if repo is None else self.store.next_issue_number(repo.id)

    def create_app(self, *, middlewares: Iterable[Middleware] = ()) -> web.Application:
        """Return the aiohttp application: the REST API under ``/api/v3`` and the web pages."""
        app = web.Application(middlewares=tuple(middlewares))
        app.router.add_route("*", API_PREFIX, self._dispatcher.handle)
        app.router.add_route("*", API_PREFIX + "/{tail:.*}", self._dispatcher.handle)
        WebPages(self.state).register(app.router)

        async def stop_webhooks(app: web.Application) -> None:
            await self.webhooks.close()

        app.on_cleanup.append(stop_webhooks)
        return app

    def add_webhook(self, url: str, *, secret: str | None) -> WebhookTarget:
        """Deliver ``issue_comment`` events to ``url``, signed with ``secret``."""
        return self.webhooks.add(WebhookTarget(url=url, secret=secret))

    def remove_webhook(self, target: WebhookTarget) -> None:
        """Stop delivering to a webhook target."""
        self.webhooks.remove(target)

    @property
    def deliveries(self) -> list[WebhookDelivery]:
        """Return every webhook delivery attempted so far, oldest first."""
        return self.webhooks.deliveries

    async def redeliver(self, delivery_id: str) -> WebhookDelivery:
        """Send a recorded webhook delivery again with the same id (a duplicate delivery)."""
        return await self.webhooks.redeliver(delivery_id)

    async def drain_webhooks(self) -> None:
        """Wait until every queued webhook delivery has been attempted."""
        await self.webhooks.drain()

    def inject_fault(
        self,
        *,
        method: str,
        path: str,
        status: int | None,
        times: int = 1,
        after_handling: bool = False,
        headers: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        drop_connection: bool = False,
        delay: float = 0.0,
        hold: bool = False,
    ) -> None:
        """Answer the next ``times`` matching API requests with a fault instead.

        ``path`` is a regular expression matched in full against the path after ``/api/v3``.
        With ``after_handling`` the real handler runs first (its changes stay), then the fault
        is answered: a 502 after a successful create. With ``drop_connection`` the connection
        is closed without any answer. ``delay`` holds each request that long first; with
        ``status=None`` that is the whole fault: a slow but working GitHub. With ``hold`` each
        request waits until ``release_held`` (or ``clear_faults``): before the handler, a hung
        GitHub; with ``after_handling``, its changes made but its answer not yet sent.
        """
        plan = FaultPlan(
            method=method.upper(),
            path=re.compile(path),
            status=status,
            after_handling=after_handling,
            headers=dict(headers or {}),
            body=None if body is None else dict(body),
            drop_connection=drop_connection,
            delay=delay,
            hold=hold,
        )
        self._faults.add(plan, times=times)

    @property
    def held_requests(self) -> int:
        """Return how many requests a ``hold`` fault holds right now."""
        return self._faults.held

    def release_held(self) -> None:
        """Let every request a ``hold`` fault holds go on."""
        self._faults.release()

    def clear_faults(self) -> None:
        """Forget every fault not yet used, and let the held requests go on."""
        self._faults.clear()

    def add_user(self, user: SandboxUser) -> None:
        """Register a user (or replace one with the same login)."""
        self.state.add_user(user)

    def add_repo(self, full_name: str) -> None:
        """Host one more repository ``owner/name``."""
        self.state.add_repo(full_name)

    def add_workflow(
        self, full_name: str, path: str, *, inputs: Sequence[str] = (), dispatchable: bool = True
    ) -> SandboxWorkflow:
        """Host a workflow file (``.github/workflows/x.yml``) in repository ``owner/name``."""
        self.state.add_repo(full_name)
        return self.state.workflows.add(
            full_name, path, inputs=tuple(inputs), dispatchable=dispatchable
        )

    @property
    def dispatches(self) -> list[DispatchRecord]:
        """Return every workflow and repository dispatch accepted so far, oldest first."""
        return self.state.workflows.dispatches

    @property
    def users(self) -> tuple[SandboxUser, ...]:
        """Return every registered user."""
        return self.state.users

    def close(self) -> None:
        """Close the SQLite store."""
        self.store.close()


@dataclass
class RunningSandbox:
    """A sandbox serving on a port, and the URLs to reach it."""

    sandbox: Sandbox
    api_url: str
    web_url: str
    runner: web.AppRunner
    # Set when started with a users file: people added to it are registered as it runs.
    users_watch: UsersFileWatch | None = None

    async def stop(self) -> None:
        """Stop serving (held requests are let go first); the sandbox's state stays readable."""
        self.sandbox.release_held()
        if self.users_watch is not None:
            await self.users_watch.stop()
        await self.runner.cleanup()


async def start_sandbox(
    sandbox: Sandbox,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    middlewares: Iterable[Middleware] = (),
    users_file: Path | None = None,
) -> RunningSandbox:
    """Serve a sandbox on ``host:port`` (port 0 picks a free one).

    With ``users_file`` (the file its users came from), users added to that file while it
    runs are registered (see :mod:`embedded_github.users_file`).
    """
    runner = web.AppRunner(sandbox.create_app(middlewares=middlewares), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound_host, bound_port = runner.addresses[0][:2]
    shown = f"[{bound_host}]" if ":" in str(bound_host) else str(bound_host)
    web_url = f"http://{shown}:{bound_port}"
    sandbox.webhooks.origin = web_url
    watch = None
    if users_file is not None:
        watch = UsersFileWatch(sandbox, users_file)
        watch.start()
    return RunningSandbox(
        sandbox=sandbox,
        api_url=f"{web_url}{API_PREFIX}",
        web_url=web_url,
        runner=runner,
        users_watch=watch,
    )
