"""Real processes for the crash and failover tests: the sandbox GitHub and proxy replicas.

A :class:`Deployment` runs ``github-sandbox`` and ``ticketproxy serve`` as child processes
that tests kill with SIGKILL, restart, and run side by side as replicas on separate data
directories (as on separate hosts) sharing one PostgreSQL database.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
import secrets
import socket
import sqlite3
import urllib.request
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import openai
import psycopg

from auth.keyring import add_key_to_keyring
from auth.keys import SigningKey, generate_signing_key
from auth.roles import Role
from auth.sign import sign_comment
from embedded_github import SandboxConfig, SandboxUser, save_sandbox_config
from tests.helpers.processes import Child, alive_or_fail, healthy, wait_until
from ticketing.github.one_shot import post_comment_once

REPO = "acme/agents"
QUESTION = "Which branch should I deploy?"
START_TIMEOUT = 15.0


def free_port() -> int:
    """Return a port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Deployment:
    """A sandbox GitHub process, and a proxy process that can be killed and restarted.

    With ``database_url`` the proxy keeps its store in that PostgreSQL database, else in
    SQLite in its data directory.
    """

    def __init__(self, tmp: Path, database_url: str | None = None) -> None:
        """Write the users file and alice's key, and start the sandbox."""
        self.tmp = tmp
        self.database_url = database_url
        self.children: list[Child] = []
        self.bot = SandboxUser("ticketproxy-bot", 1, _token(), "admin")
        self.alice = SandboxUser("alice", 1001, _token(), "write")
        users = tmp / "sandbox-users.json"
        save_sandbox_config(users, SandboxConfig(users=(self.bot, self.alice), repos=(REPO,)))
        self.key: SigningKey = generate_signing_key(login="alice")
        self.keyring = tmp / "keyring.json"
        add_key_to_keyring(self.keyring, self.key, roles=[Role.EDITOR], user_id=self.alice.id)
        sandbox_port = free_port()
        self.api_url = f"http://127.0.0.1:{sandbox_port}/api/v3"
        sandbox = self._start(
            ["github-sandbox", "--port", str(sandbox_port), "--users", str(users)],
            {"TICKETPROXY_DATA_DIR": str(tmp / "sandbox")},
            "sandbox",
        )
        wait_until(
            lambda: alive_or_fail(sandbox) and "GitHub sandbox:" in sandbox.output(),
            within=START_TIMEOUT,
            what="the sandbox to start",
        )
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.data_dir = tmp / "proxy"
        self.proxy: Child | None = None

    def _start(self, argv: list[str], extra: dict[str, str], name: str) -> Child:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.tmp), **extra}
        child = Child(argv, env, self.tmp / f"{name}-{len(self.children)}.log")
        self.children.append(child)
        return child

    def start_proxy(self, **extra: str) -> Child:
        """Start ``ticketproxy serve`` against the sandbox and wait until it answers."""
        proxy = self.start_replica(self.port, self.data_dir, **extra)
        self.proxy = proxy
        return proxy

    def start_replica(self, port: int, data_dir: Path, **extra: str) -> Child:
        """Start one ``ticketproxy serve`` on ``port`` and ``data_dir``; wait until it answers.

        ``extra`` adds variables (``TICKETPROXY_POLL_LEASE="1"``, say) to its environment.
        """
        return self.start_serve(
            port,
            {
                "TICKETPROXY_GITHUB_TOKEN": self.bot.token,
                "TICKETPROXY_GITHUB_API_URL": self.api_url,
                "TICKETPROXY_GITHUB_REPO": REPO,
                "TICKETPROXY_KEYRING": str(self.keyring),
                "TICKETPROXY_DATA_DIR": str(data_dir),
                "TICKETPROXY_POLL_INTERVAL": "0.2",
                "TICKETPROXY_HEARTBEAT_INTERVAL": "0.2",
                "TICKETPROXY_WRITES_PER_MINUTE": "60",
                # On PostgreSQL a proxy killed while polling holds the poll lease until it
                # lapses; a restarted one (a new replica) polls once it has.
                "TICKETPROXY_POLL_LEASE": "1",
                **({"TICKETPROXY_DATABASE_URL": self.database_url} if self.database_url else {}),
                **extra,
            },
        )

    def start_serve(self, port: int, env: dict[str, str]) -> Child:
        """Start ``ticketproxy serve`` on loopback ``port`` with ``env``; wait until it answers."""
        proxy = self._start(["serve", "--host", "127.0.0.1", "--port", str(port)], env, "proxy")
        wait_until(
            lambda: alive_or_fail(proxy) and healthy(port),
            within=START_TIMEOUT,
            what="the proxy to start",
        )
        return proxy

    def deliver_comment_webhook(self, port: int, number: int, secret: str) -> int:
        """POST GitHub's signed ``issue_comment`` delivery of issue ``number``'s last comment.

        Built from the sandbox's own REST objects, as GitHub builds its payloads; return the
        proxy's status.
        """
        comment = self._get(f"/repos/{REPO}/issues/{number}/comments")[-1]
        payload = {
            "action": "created",
            "issue": self._get(f"/repos/{REPO}/issues/{number}"),
            "comment": comment,
            "repository": self._get(f"/repos/{REPO}"),
            "sender": comment["user"],
        }
        body = json.dumps(payload).encode()
        signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/github/webhook",
            data=body,
            headers={
                "Content-Type": "application/json",
                "X-GitHub-Event": "issue_comment",
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": f"sha256={signature}",
                "User-Agent": "GitHub-Hookshot/test",
            },
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)

    def _get(self, path: str) -> Any:
        request = urllib.request.Request(
            f"{self.api_url}{path}", headers={"Authorization": f"token {self.bot.token}"}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.load(response)

    def move_to_another_host(self) -> None:
        """Run the next proxy on another port with a data directory of its own."""
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.data_dir = self.tmp / f"proxy-{self.port}"

    def kill_proxy(self) -> None:
        """SIGKILL the running proxy."""
        assert self.proxy is not None
        self.proxy.kill_9()
        self.proxy = None

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """Read the proxy's ticket store, as any other process may (WAL allows it)."""
        if self.database_url is not None:
            with psycopg.connect(self.database_url, autocommit=True) as connection:
                return list(connection.execute(sql))
        with sqlite3.connect(self.data_dir / "tickets.sqlite3", timeout=5) as db:
            return list(db.execute(sql))

    def issues(self) -> list[dict[str, Any]]:
        """Return every issue of the ticket repository."""
        return list(self._get(f"/repos/{REPO}/issues?state=all"))

    def answer(self, number: int, text: str) -> None:
        """Post alice's signed answer on issue ``number``, as ``ticketproxy answer`` would."""
        body = sign_comment(
            text,
            ticket=f"{REPO}#{number}",
            key=self.key,
            now=datetime.now(UTC),
            ttl=timedelta(hours=1),
        )
        post_comment_once(
            api_url=self.api_url, token=self.alice.token, repo=REPO, number=number, body=body
        )

    def ask(
        self, pool: ThreadPoolExecutor, *, port: int | None = None, question: str = QUESTION
    ) -> Future[str | None]:
        """Ask ``question`` (of the proxy, or the replica on ``port``) in a thread."""
        base_url = self.base_url if port is None else f"http://127.0.0.1:{port}/v1"

        def call() -> str | None:
            with openai.OpenAI(
                base_url=base_url, api_key="unused", max_retries=0, timeout=30
            ) as client:
                completion = client.chat.completions.create(
                    model="gpt-4o", messages=[{"role": "user", "content": question}]
                )
            return completion.choices[0].message.content

        return pool.submit(call)

    def ask_and_hang_up(self) -> None:
        """Send the same request as ``ask``, read the 200, and hang up without the body."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            body = {"model": "gpt-4o", "messages": [{"role": "user", "content": QUESTION}]}
            connection.request(
                "POST",
                "/v1/chat/completions",
                body=json.dumps(body),
                headers={"Content-Type": "application/json", "Authorization": "Bearer unused"},
            )
            assert connection.getresponse().status == 200
        finally:
            connection.close()

    def context(self) -> str:
        """Return the proxy's queued writes and every proxy log, for a failure message."""
        try:
            rows = "\n".join(map(str, self.query("SELECT * FROM write_queue")))
        except (sqlite3.Error, psycopg.Error) as exc:
            rows = str(exc)
        logs = "\n".join(c.output() for c in self.children if c.log.name.startswith("proxy"))
        return f"write_queue:\n{rows}\nproxy logs:\n{logs}"

    def close(self) -> None:
        """Stop every child process."""
        for child in self.children:
            child.close()


def _token() -> str:
    return "ghp_" + secrets.token_urlsafe(27)[:36]
