"""kill -9 recovery, for real: ``ticketproxy serve`` and ``github-sandbox`` as child processes.

Each test is named after the fault it survives. The proxy is killed with SIGKILL (no
clean-up runs), restarted on the same data directory, and the client's retry of the same
request must get the one signed answer: one issue, one accepted answer, one delivery. Each
runs on both stores: SQLite in the data directory, and a PostgreSQL database.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import socket
import sqlite3
import urllib.request
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import openai
import psycopg
import pytest

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

    def start_proxy(self) -> Child:
        """Start ``ticketproxy serve`` against the sandbox and wait until it answers."""
        proxy = self._start(
            ["serve", "--port", str(self.port)],
            {
                "TICKETPROXY_GITHUB_TOKEN": self.bot.token,
                "TICKETPROXY_GITHUB_API_URL": self.api_url,
                "TICKETPROXY_GITHUB_REPO": REPO,
                "TICKETPROXY_KEYRING": str(self.keyring),
                "TICKETPROXY_DATA_DIR": str(self.data_dir),
                "TICKETPROXY_POLL_INTERVAL": "0.2",
                "TICKETPROXY_HEARTBEAT_INTERVAL": "0.2",
                "TICKETPROXY_WRITES_PER_MINUTE": "60",
                **({"TICKETPROXY_DATABASE_URL": self.database_url} if self.database_url else {}),
            },
            "proxy",
        )
        wait_until(
            lambda: alive_or_fail(proxy) and healthy(self.port),
            within=START_TIMEOUT,
            what="the proxy to start",
        )
        self.proxy = proxy
        return proxy

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
        request = urllib.request.Request(
            f"{self.api_url}/repos/{REPO}/issues?state=all",
            headers={"Authorization": f"token {self.bot.token}"},
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            return list(json.load(response))

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

    def ask(self, pool: ThreadPoolExecutor) -> Future[str | None]:
        """Ask QUESTION with the blocking openai client, in a thread."""

        def call() -> str | None:
            with openai.OpenAI(
                base_url=self.base_url, api_key="unused", max_retries=0, timeout=30
            ) as client:
                completion = client.chat.completions.create(
                    model="gpt-4o", messages=[{"role": "user", "content": QUESTION}]
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


@pytest.fixture(params=["sqlite", "postgres"])
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    """Yield a running sandbox (and no proxy yet); every child is killed after the test.

    Each test runs twice: the proxy's store in SQLite, then in a PostgreSQL database.
    """
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    running = Deployment(tmp_path, database_url=url)
    try:
        yield running
    finally:
        running.close()


def assert_one_issue_closed_as_answered(deployment: Deployment) -> None:
    """Wait for the queued writes to land: one issue, closed, labelled answered."""

    def closed() -> list[dict[str, Any]] | None:
        issues = deployment.issues()
        labels = {label["name"] for issue in issues for label in issue["labels"]}
        done = all(issue["state"] == "closed" for issue in issues) and "answered" in labels
        return issues if done else None

    issues = wait_until(
        closed,
        within=10,
        what="the issue to be closed as answered",
        context=lambda: f"issues: {deployment.issues()}\n{deployment.context()}",
    )
    assert [issue["number"] for issue in issues] == [1]
    assert {label["name"] for label in issues[0]["labels"]} == {"ticketproxy", "answered"}


def kill_9_while_the_client_waits(deployment: Deployment) -> None:
    """Start the proxy, ask, and SIGKILL the proxy once the ticket is open."""
    deployment.start_proxy()
    with ThreadPoolExecutor(max_workers=1) as pool:
        waiting = deployment.ask(pool)
        wait_until(
            lambda: deployment.query("SELECT state, issue_number FROM tickets") == [("open", 1)],
            within=10,
            what="ticket 1 to be open",
        )
        deployment.kill_proxy()
        with pytest.raises(openai.APIConnectionError):
            waiting.result(timeout=10)


def assert_the_retry_gets_the_one_answer(deployment: Deployment, text: str) -> None:
    """Start the proxy, retry the request: it gets ``text``, delivered once, one issue."""
    deployment.start_proxy()
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert deployment.ask(pool).result(timeout=15) == text

    # The client may read the answer a moment before the proxy records the delivery.
    wait_until(
        lambda: deployment.query("SELECT state FROM tickets") == [("delivered",)],
        within=5,
        what="the delivery to be recorded",
    )
    assert deployment.query("SELECT text, delivered_at IS NOT NULL FROM answers") == [(text, 1)]
    assert_one_issue_closed_as_answered(deployment)


@pytest.mark.slow
def test_kill_9_while_the_client_waits_loses_nothing_and_the_retry_gets_the_answer(
    deployment: Deployment,
) -> None:
    """Killed mid-wait, answered while down, restarted: the retry gets the one answer."""
    kill_9_while_the_client_waits(deployment)
    deployment.answer(1, "Deploy `release-2.3`.")
    assert_the_retry_gets_the_one_answer(deployment, "Deploy `release-2.3`.")


@pytest.mark.slow
def test_kill_9_of_one_replica_and_a_retry_to_another_host_gets_the_answer_once(
    postgres_url: str, tmp_path: Path
) -> None:
    """On PostgreSQL, a retry sent to a replica on another host re-attaches to the ticket."""
    deployment = Deployment(tmp_path, database_url=postgres_url)
    try:
        kill_9_while_the_client_waits(deployment)
        deployment.answer(1, "Deploy `release-2.4`.")
        # Replica B: another port and a data directory of its own, as on another host.
        deployment.move_to_another_host()
        assert_the_retry_gets_the_one_answer(deployment, "Deploy `release-2.4`.")
        assert list(tmp_path.glob("**/tickets.sqlite3")) == []
    finally:
        deployment.close()


@pytest.mark.slow
def test_kill_9_after_the_answer_was_accepted_but_before_delivery_delivers_it_once(
    deployment: Deployment,
) -> None:
    """Accepted, then killed before any client got it: the retry gets it; one delivery."""
    proxy = deployment.start_proxy()
    deployment.ask_and_hang_up()
    wait_until(
        lambda: "client disconnected while waiting" in proxy.output(),
        within=10,
        what="the proxy to notice the client left",
    )
    deployment.answer(1, "Deploy `main`.")
    wait_until(
        lambda: deployment.query("SELECT state FROM tickets") == [("answered",)],
        within=10,
        what="the answer to be accepted",
    )
    deployment.kill_proxy()
    assert deployment.query("SELECT delivered_at FROM answers") == [(None,)]

    deployment.start_proxy()
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert deployment.ask(pool).result(timeout=15) == "Deploy `main`."
        # A second retry re-reads the same answer; it is not a second delivery.
        assert deployment.ask(pool).result(timeout=15) == "Deploy `main`."

    wait_until(
        lambda: deployment.query("SELECT id, state FROM tickets") == [(1, "delivered")],
        within=5,
        what="the delivery to be recorded",
    )
    assert deployment.query("SELECT COUNT(*), COUNT(delivered_at) FROM answers") == [(1, 1)]
    assert_one_issue_closed_as_answered(deployment)
    # Delivered once: one close was sent (a concurrent delivery's close is cancelled unsent;
    # this other process may see it between its two commits, hence the wait).
    wait_until(
        lambda: (
            deployment.query(
                "SELECT COUNT(*) FROM write_queue WHERE kind = 'close' AND failure IS NULL"
            )
            == [(1,)]
        ),
        within=5,
        what="exactly one close of the issue",
        context=deployment.context,
    )
    assert (
        deployment.query(
            "SELECT kind, failure FROM write_queue WHERE failure NOT LIKE 'cancelled:%'"
        )
        == []
    )
