"""Failover between two live replicas, for real: two ``ticketproxy serve`` processes with data
directories of their own (as on two hosts), one PostgreSQL database, the sandbox GitHub, and
no Redis. Each test is named after the fault it survives; the poll lease is one second.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest

from tests.helpers.deployment import Deployment, free_port
from tests.helpers.processes import Child, wait_until

SECRET = "webhook-secret-0123456789abcdef"
LEASE = 1.0  # TICKETPROXY_POLL_LEASE of every proxy a Deployment starts


@pytest.fixture
def deployment(postgres_url: str, tmp_path: Path) -> Iterator[Deployment]:
    """Yield a running sandbox whose proxies keep their store in one PostgreSQL database."""
    running = Deployment(tmp_path, database_url=postgres_url)
    try:
        yield running
    finally:
        running.close()


def start(
    deployment: Deployment, name: str, port: int | None = None, **extra: str
) -> tuple[Child, int]:
    """Start a replica on a port and a data directory of its own; return it and its port."""
    port = free_port() if port is None else port
    child = deployment.start_replica(
        port,
        deployment.tmp / name,
        TICKETPROXY_WEBHOOK_SECRET=SECRET,
        **extra,
    )
    return child, port


def lease_holder(deployment: Deployment) -> str | None:
    """Return who holds the poll lease now, if anyone."""
    rows = deployment.query(
        "SELECT holder FROM coordination_leases WHERE name = 'poll'"
        " AND expires_at > extract(epoch FROM clock_timestamp())"
    )
    return str(rows[0][0]) if rows else None


def tickets(deployment: Deployment) -> int:
    """Return how many tickets the store holds."""
    return int(deployment.query("SELECT COUNT(*) FROM tickets")[0][0])


def open_ticket_count(deployment: Deployment, count: int) -> bool:
    """Say whether ``count`` tickets are open, each with its issue."""
    rows = deployment.query("SELECT COUNT(*) FROM tickets WHERE issue_number IS NOT NULL")
    return rows == [(count,)]


@pytest.mark.slow
def test_a_webhook_on_b_releases_clients_waiting_on_a_and_b_for_a_ticket_a_opened(
    deployment: Deployment,
) -> None:
    """Polling idle, the webhook B takes releases B's client and, through NOTIFY, A's."""
    _, port_a = start(deployment, "host-a", TICKETPROXY_POLL_INTERVAL="3600")
    _, port_b = start(deployment, "host-b", TICKETPROXY_POLL_INTERVAL="3600")
    with ThreadPoolExecutor(max_workers=2) as pool:
        on_a = deployment.ask(pool, port=port_a)
        wait_until(lambda: open_ticket_count(deployment, 1), within=10, what="A's ticket")
        on_b = deployment.ask(pool, port=port_b)  # the same request: re-attaches on B
        time.sleep(1.0)  # the polls a new ticket wakes are over; the next is in an hour
        deployment.answer(1, "Deploy `release-3.0`.")
        assert deployment.deliver_comment_webhook(port_b, 1, SECRET) == 200
        assert on_b.result(timeout=10) == "Deploy `release-3.0`."
        assert on_a.result(timeout=10) == "Deploy `release-3.0`."
    assert deployment.query("SELECT COUNT(*) FROM answers") == [(1,)]
    assert [issue["number"] for issue in deployment.issues()] == [1]


@pytest.mark.slow
def test_the_poll_lease_moves_to_b_within_its_lease_time_when_a_is_killed(
    deployment: Deployment,
) -> None:
    """A is kill -9ed while polling; B holds the lease within a lease time and finds answers."""
    replica_a, port_a = start(deployment, "host-a")
    with ThreadPoolExecutor(max_workers=1) as pool:
        waiting = deployment.ask(pool, port=port_a)  # a pending ticket keeps A polling
        first = wait_until(lambda: lease_holder(deployment), within=10, what="A's lease")
        _, port_b = start(deployment, "host-b")
        time.sleep(LEASE)
        assert lease_holder(deployment) == first
        replica_a.process.send_signal(signal.SIGKILL)
        replica_a.process.wait(timeout=5)
        killed = time.monotonic()
        with pytest.raises(openai.APIConnectionError):
            waiting.result(timeout=10)
        second = wait_until(
            lambda: (holder := lease_holder(deployment)) not in (None, first) and holder,
            within=LEASE * 3,
            what="B to take the lease",
            context=deployment.context,
        )
        # A renewed for the lease plus its poll pause (0.2 s); B looks every third of it.
        assert time.monotonic() - killed <= LEASE + 0.2 + LEASE / 3 + 0.5
        assert second != first
        deployment.answer(1, "Deploy `release-3.1`.")  # found by B's polls: no webhook here
        assert deployment.ask(pool, port=port_b).result(timeout=10) == "Deploy `release-3.1`."


@pytest.mark.slow
def test_kill_9_of_a_while_b_runs_and_the_retry_to_b_gets_the_answer_once(
    deployment: Deployment,
) -> None:
    """A client waiting on A, which is kill -9ed, retries to the live B and gets it, once."""
    replica_a, port_a = start(deployment, "host-a")
    _, port_b = start(deployment, "host-b")
    with ThreadPoolExecutor(max_workers=1) as pool:
        waiting = deployment.ask(pool, port=port_a)
        wait_until(lambda: open_ticket_count(deployment, 1), within=10, what="A's ticket")
        replica_a.process.send_signal(signal.SIGKILL)
        replica_a.process.wait(timeout=5)
        with pytest.raises(openai.APIConnectionError):
            waiting.result(timeout=10)
        deployment.answer(1, "Deploy `release-3.2`.")
        assert deployment.ask(pool, port=port_b).result(timeout=15) == "Deploy `release-3.2`."
    wait_until(
        lambda: deployment.query("SELECT state FROM tickets") == [("delivered",)],
        within=5,
        what="the delivery to be recorded",
    )
    assert deployment.query("SELECT COUNT(*), COUNT(delivered_at) FROM answers") == [(1, 1)]
    assert [issue["number"] for issue in deployment.issues()] == [1]


AGENTS, QUESTIONS = 3, 3


def ask_either(deployment: Deployment, ports: list[int], first: int, question: str) -> str:
    """Ask as an agent behind a load balancer does: on a refused or cut request, the other."""
    deadline = time.monotonic() + 30
    turn = first
    while True:
        port = ports[turn % len(ports)]
        try:
            with ThreadPoolExecutor(max_workers=1) as pool:
                answer = deployment.ask(pool, port=port, question=question).result(timeout=30)
            assert answer is not None
            return answer
        except (openai.APIConnectionError, openai.APIStatusError):
            assert time.monotonic() < deadline, f"no replica answered {question!r}"
            turn += 1
            time.sleep(0.1)


def answer_every_open_issue(deployment: Deployment, stop: threading.Event) -> None:
    """Answer each open issue's question ``Qa-i`` with ``Aa-i``, once, until stopped."""
    answered: set[int] = set()
    while not stop.is_set():
        for issue in deployment.issues():
            found = re.search(r"Q(\d+)-(\d+)", issue.get("body") or "")
            if issue["state"] == "open" and issue["number"] not in answered and found:
                deployment.answer(issue["number"], f"A{found[1]}-{found[2]}")
                answered.add(issue["number"])
        stop.wait(0.1)


@pytest.mark.slow
def test_a_rolling_restart_of_both_replicas_under_load_loses_and_duplicates_nothing(
    deployment: Deployment,
) -> None:
    """Agents ask steadily while A, then B, are stopped and started: one issue per question."""
    replicas = {name: start(deployment, name) for name in ("host-a", "host-b")}
    ports = [port for _, port in replicas.values()]
    stop = threading.Event()
    answerer = threading.Thread(target=answer_every_open_issue, args=(deployment, stop))
    answerer.start()

    def agent(number: int) -> list[str]:
        return [
            ask_either(deployment, ports, number, f"Q{number}-{i}: which branch?")
            for i in range(QUESTIONS)
        ]

    try:
        with ThreadPoolExecutor(max_workers=AGENTS) as agents:
            work = [agents.submit(agent, number) for number in range(AGENTS)]
            for step, (name, (child, port)) in enumerate(replicas.items()):
                # Each restart once more tickets are open: it cuts requests in flight.
                wait_until(
                    lambda step=step: tickets(deployment) >= 2 + 3 * step, within=20, what="load"
                )
                child.process.send_signal(signal.SIGTERM)
                child.process.wait(timeout=15)
                start(deployment, name, port)
            results = [future.result(timeout=60) for future in work]
    finally:
        stop.set()
        answerer.join(timeout=10)
    assert results == [[f"A{a}-{i}" for i in range(QUESTIONS)] for a in range(AGENTS)]
    issues = deployment.issues()
    assert sorted(issue["number"] for issue in issues) == list(range(1, AGENTS * QUESTIONS + 1))
    assert deployment.query("SELECT COUNT(*), COUNT(DISTINCT ticket_id) FROM answers") == [
        (AGENTS * QUESTIONS, AGENTS * QUESTIONS)
    ]
