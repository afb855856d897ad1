"""A real ``ticketproxy serve`` process that a test can kill -9 and restart, and its GitHub.

Shared by the crash tests of runs as trees (``tests/test_tree_crash.py``) and of
delegation (``tests/test_delegation_crash.py``): the test's embedded GitHub outlives the
proxy, which restarts on the same data directory.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import openai
from openai.types.chat import ChatCompletionMessageParam

from auth.keyring import add_key_to_keyring
from auth.keys import generate_signing_key
from auth.roles import Role
from auth.sign import sign_comment
from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.processes import Child, alive_or_fail
from tests.helpers.stack import free_port

REPO = "acme/agents"
ISSUES = f"/repos/{REPO}/issues"
ROOT_LINKS = rf"{ISSUES}/1/sub_issues"
FIRST: ChatCompletionMessageParam = {"role": "user", "content": "Which branch should I deploy?"}
ANSWER_1: ChatCompletionMessageParam = {"role": "assistant", "content": "Deploy `release-2.3`."}
SECOND: ChatCompletionMessageParam = {
    "role": "user",
    "content": "And which database migration goes with it?",
}


async def eventually(
    check: Callable[[], Awaitable[Any]],
    *,
    what: str,
    within: float = 10.0,
    context: Callable[[], Any] = lambda: "",
) -> Any:
    """Await ``check`` until it returns something truthy, and return that."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        result = await check()
        if result:
            return result
        assert asyncio.get_running_loop().time() < deadline, (
            f"timed out waiting for {what}\n{context()}"
        )
        await asyncio.sleep(0.05)


class TreeDeployment:
    """The test's embedded GitHub, and a proxy process that can be killed and restarted."""

    def __init__(self, sandbox: RunningSandbox, config: SandboxConfig, tmp: Path) -> None:
        """Write alice's key into a keyring; no proxy runs yet."""
        self.sandbox = sandbox
        self.tmp = tmp
        self.tokens = {user.login: user.token for user in config.users}
        self.key = generate_signing_key(login="alice")
        self.keyring = tmp / "keyring.json"
        add_key_to_keyring(self.keyring, self.key, roles=[Role.EDITOR], user_id=1001)
        self.port = free_port()
        self.data_dir = tmp / "proxy"
        self.children: list[Child] = []
        self.proxy: Child | None = None
        self.http = aiohttp.ClientSession()

    async def start_proxy(self) -> None:
        """Start ``ticketproxy serve`` on the data directory and wait until it answers."""
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(self.tmp),
            "TICKETPROXY_GITHUB_TOKEN": self.tokens["ticketproxy-bot"],
            "TICKETPROXY_GITHUB_API_URL": self.sandbox.api_url,
            "TICKETPROXY_GITHUB_REPO": REPO,
            "TICKETPROXY_KEYRING": str(self.keyring),
            "TICKETPROXY_DATA_DIR": str(self.data_dir),
            "TICKETPROXY_POLL_INTERVAL": "0.2",
            "TICKETPROXY_HEARTBEAT_INTERVAL": "0.2",
            "TICKETPROXY_WRITES_PER_MINUTE": "600",
            "TICKETPROXY_TREE_AFTER_STEPS": "1",
        }
        log = self.tmp / f"proxy-{len(self.children)}.log"
        proxy = Child(["serve", "--port", str(self.port)], env, log)
        self.children.append(proxy)

        async def healthy() -> bool:
            alive_or_fail(proxy)
            try:
                async with self.http.get(f"http://127.0.0.1:{self.port}/healthz") as answer:
                    return answer.status == 200
            except aiohttp.ClientError:
                return False

        await eventually(healthy, what="the proxy to start", within=15.0)
        self.proxy = proxy

    def kill_proxy(self) -> None:
        """SIGKILL the running proxy."""
        assert self.proxy is not None
        self.proxy.kill_9()
        self.proxy = None

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """Read the proxy's ticket store, as any other process may (WAL allows it)."""
        with sqlite3.connect(self.data_dir / "tickets.sqlite3", timeout=5) as db:
            return list(db.execute(sql))

    def ask(self, *messages: ChatCompletionMessageParam) -> asyncio.Task[str | None]:
        """Send a chat completion with the official client; a task for its answer."""

        async def call() -> str | None:
            async with openai.AsyncOpenAI(
                base_url=f"http://127.0.0.1:{self.port}/v1",
                api_key="unused",
                max_retries=0,
                timeout=30,
            ) as client:
                completion = await client.chat.completions.create(
                    model="gpt-4o", messages=list(messages)
                )
            return completion.choices[0].message.content

        return asyncio.create_task(call())

    async def github(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        """Call the embedded GitHub's API as the bot (or ``login``); return status and JSON."""
        login = kwargs.pop("login", "ticketproxy-bot")
        headers = {"Authorization": f"token {self.tokens[login]}"}
        url = f"{self.sandbox.api_url}{path}"
        async with self.http.request(method, url, headers=headers, **kwargs) as answer:
            return answer.status, await answer.json()

    async def answer(self, number: int, text: str) -> None:
        """Post alice's answer signed for issue ``number``'s own reference."""
        body = sign_comment(
            text,
            ticket=f"{REPO}#{number}",
            key=self.key,
            now=datetime.now(UTC),
            ttl=timedelta(hours=1),
        )
        status, _ = await self.github(
            "POST", f"{ISSUES}/{number}/comments", json={"body": body}, login="alice"
        )
        assert status == 201

    def step_two(self) -> list[tuple[Any, ...]]:
        """Return step 2's ticket rows: state, issue number, whether it has an issue of its own."""
        return self.query("SELECT state, issue_number, own_issue FROM tickets WHERE step = 2")

    async def issues_and_links(self) -> tuple[list[int], list[int]]:
        """Return every issue's number, and the numbers of the root's sub-issues, on GitHub."""
        _, issues = await self.github("GET", f"{ISSUES}?state=all")
        status, children = await self.github("GET", f"{ISSUES}/1/sub_issues")
        assert status == 200
        return sorted(i["number"] for i in issues), [child["number"] for child in children]

    def link_requests(self) -> list[int]:
        """Return the status of every sub-issue link GitHub was sent under the root."""
        return [
            r.status
            for r in self.sandbox.sandbox.requests
            if r.method == "POST" and r.path == ROOT_LINKS
        ]

    async def close(self) -> None:
        """Kill every proxy still running, let held requests go, close the HTTP session."""
        for child in self.children:
            child.close()
        self.sandbox.sandbox.release_held()
        await self.http.close()
