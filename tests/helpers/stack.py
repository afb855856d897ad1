"""A whole ticketproxy on 127.0.0.1: the sandbox GitHub, the proxy, keys and editors.

Registered as a pytest plugin in ``tests/conftest.py``. Tests talk to the proxy with the
official ``openai`` client and to GitHub with PyGithub over HTTP, as real users would.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from github import Auth, Github
from openai import AsyncOpenAI

from auth.comment import text_digest
from auth.keyring import add_key_to_keyring
from auth.keys import SigningKey, generate_signing_key
from auth.roles import Act, Role
from auth.sign import sign_comment
from embedded_github import RunningSandbox, SandboxConfig, WebhookTarget
from proxy.access_log import AccessLog
from proxy.app import DESK, create_app
from proxy.desk_factories import build_coordinator
from proxy.settings import Settings
from ticketing.desk import Desk

REPO = "acme/agents"
CLIENT_KEY = "test-client-key-0123456789"


@dataclass
class Clock:
    """A clock tests can move; everything else runs in real time."""

    offset: timedelta = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset


@dataclass
class Stack:
    """A running proxy in front of a running sandbox, plus the people who answer."""

    sandbox: RunningSandbox
    config: SandboxConfig
    settings: Settings
    runner: web.AppRunner
    base_url: str
    keys: dict[str, SigningKey]
    clock: Clock
    tmp: Path
    clients: list[AsyncOpenAI] = field(default_factory=list)
    webhook: WebhookTarget | None = None

    @property
    def desk(self) -> Desk:
        return self.runner.app[DESK]

    @property
    def webhook_url(self) -> str:
        """Return the proxy's ``POST /github/webhook`` URL."""
        return self.base_url.removesuffix("/v1") + "/github/webhook"

    def token(self, login: str) -> str:
        return next(u.token for u in self.config.users if u.login == login)

    def github(self, login: str) -> Github:
        """Return a PyGithub client acting as ``login``."""
        return Github(
            base_url=self.sandbox.api_url,
            auth=Auth.Token(self.token(login)),
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=None,
            lazy=True,
        )

    def openai(self, **kwargs: Any) -> AsyncOpenAI:
        """Return an async openai client pointed at the proxy."""
        options: dict[str, Any] = {"max_retries": 0, "timeout": 30.0, "api_key": CLIENT_KEY}
        options.update(kwargs)
        client = AsyncOpenAI(base_url=self.base_url, **options)
        self.clients.append(client)
        return client

    async def issues(self) -> list[Any]:
        """Return every issue in the ticket repository, oldest first."""

        def fetch() -> list[Any]:
            repo = self.github("ticketproxy-bot").get_repo(REPO)
            return sorted(repo.get_issues(state="all"), key=lambda i: i.number)

        return await asyncio.to_thread(fetch)

    async def wait_for_issue(self, number: int = 1, within: float = 10.0) -> Any:
        """Wait until issue ``number`` exists and its ticket is set up (locked), and return it."""
        deadline = asyncio.get_running_loop().time() + within
        while True:
            known = self.desk.store.ticket_for_issue(number) is not None
            issues = [i for i in await self.issues() if i.number == number] if known else []
            if issues:
                return issues[0]
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"issue #{number} never appeared")
            await asyncio.sleep(0.05)

    def signed(
        self,
        text: str,
        *,
        number: int,
        signer: str = "alice",
        ticket: str | None = None,
        act: Act = Act.ANSWER,
        now: datetime | None = None,
        ttl: timedelta = timedelta(hours=1),
        judged: str | None = None,
    ) -> str:
        """Return a comment body signed with ``signer``'s key for issue ``number``.

        For an approval or rejection, ``judged`` is the answer text being judged.
        """
        return sign_comment(
            text,
            ticket=ticket or f"{REPO}#{number}",
            key=self.keys[signer],
            now=now or self.clock(),
            act=act,
            ttl=ttl,
            judged_digest=None if judged is None else text_digest(judged),
        )

    async def comment(self, number: int, body: str, *, author: str = "alice") -> Any:
        """Post a comment on issue ``number`` as ``author`` through PyGithub."""

        def post() -> Any:
            return self.github(author).get_repo(REPO).get_issue(number).create_comment(body)

        return await asyncio.to_thread(post)

    async def answer(self, number: int, text: str, *, signer: str = "alice") -> Any:
        """Post a correctly signed answer as ``signer``."""
        return await self.comment(
            number, self.signed(text, number=number, signer=signer), author=signer
        )

    async def comments(self, number: int) -> list[Any]:
        """Return the comments of issue ``number``."""

        def fetch() -> list[Any]:
            issue = self.github("ticketproxy-bot").get_repo(REPO).get_issue(number)
            return list(issue.get_comments())

        return await asyncio.to_thread(fetch)

    async def bot_replies(
        self, number: int, *, without: tuple[str, ...] = ("delivered",)
    ) -> list[str]:
        """Return the bot's comments on an issue, leaving out the kinds in ``without``.

        By default the delivery record is left out, so tests count the bot's replies to
        people (refusals, notices) only.
        """
        await self.desk.followups.drain()
        return [
            c.body
            for c in await self.comments(number)
            if c.user.login == "ticketproxy-bot"
            and not any(f"<!-- ticketproxy:reply {kind} -->" in c.body for kind in without)
        ]

    async def settle(self) -> None:
        """Poll once and finish every queued GitHub write."""
        await self.desk.poll_once()
        await self.desk.followups.drain()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def start_stack(
    sandbox: RunningSandbox, config: SandboxConfig, tmp: Path, **overrides: Any
) -> Stack:
    """Start a proxy against ``sandbox`` with keys for alice, bob (reviewer) and mallory.

    With ``webhook_secret=...`` the proxy takes webhooks and the sandbox delivers its comment
    events to it, signed with that secret (``deliver_webhooks=False`` to only configure it).
    ``coordinator_factory=...`` replaces how the desk coordinates with other replicas.
    """
    keyring = tmp / "keyring.json"
    keys: dict[str, SigningKey] = {}
    users = {u.login: u for u in config.users}
    roles = {
        "alice": (Role.EDITOR,),
        "bob": (Role.EDITOR, Role.REVIEWER),
        "mallory": (Role.REVIEWER,),
    }
    given_keys = overrides.pop("keys", None)
    if given_keys is not None:
        # A restart: the same people, the same keyring file.
        keys = given_keys
    else:
        for login, granted in roles.items():
            keys[login] = generate_signing_key(login=login)
            add_key_to_keyring(keyring, keys[login], roles=granted, user_id=users[login].id)
    clock = overrides.pop("clock", Clock())
    deliver_webhooks = overrides.pop("deliver_webhooks", True)
    # None: the proxy asks GitHub who it is (a GitHub App's bot).
    bot_login = overrides.pop("bot_login", "ticketproxy-bot")
    coordinator_factory = overrides.pop("coordinator_factory", build_coordinator)
    settings = Settings(
        github_repo=REPO,
        github_token=users["ticketproxy-bot"].token,
        github_api_url=sandbox.api_url,
        keyring_path=keyring,
        api_keys=(CLIENT_KEY,),
        data_dir=tmp / "data",
        poll_interval=0.05,
        max_wait=60.0,
        heartbeat_interval=0.2,
    )
    settings = replace(settings, **overrides)
    runner = web.AppRunner(
        create_app(
            settings, clock=clock, bot_login=bot_login, coordinator_factory=coordinator_factory
        ),
        access_log_class=AccessLog,
    )
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    stack = Stack(
        sandbox=sandbox,
        config=config,
        settings=settings,
        runner=runner,
        base_url=f"http://{host}:{port}/v1",
        keys=keys,
        clock=clock,
        tmp=tmp,
    )
    if settings.webhook_secret is not None and deliver_webhooks:
        stack.webhook = sandbox.sandbox.add_webhook(
            stack.webhook_url, secret=settings.webhook_secret
        )
    return stack


async def stop_stack(stack: Stack) -> None:
    if stack.webhook is not None:
        stack.sandbox.sandbox.remove_webhook(stack.webhook)
    for client in stack.clients:
        await client.close()
    await stack.runner.cleanup()


@pytest.fixture
async def stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a running ticketproxy in front of the sandbox."""
    running = await start_stack(github_sandbox, sandbox_config, tmp_path)
    try:
        yield running
    finally:
        await stop_stack(running)


@pytest.fixture
async def unlocked_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a stack that does not lock its tickets (TICKETPROXY_LOCK_ISSUES=false)."""
    running = await start_stack(github_sandbox, sandbox_config, tmp_path, lock_issues=False)
    try:
        yield running
    finally:
        await stop_stack(running)


@pytest.fixture
async def short_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a stack whose tickets expire after one second."""
    running = await start_stack(github_sandbox, sandbox_config, tmp_path, max_wait=1.0)
    try:
        yield running
    finally:
        await stop_stack(running)
