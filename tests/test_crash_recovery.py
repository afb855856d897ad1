"""kill -9 recovery, for real: ``ticketproxy serve`` and ``github-sandbox`` as child processes.

Each test is named after the fault it survives. The proxy is killed with SIGKILL (no
clean-up runs), restarted on the same data directory, and the client's retry of the same
request must get the one signed answer: one issue, one accepted answer, one delivery. Each
runs on both stores: SQLite in the data directory, and a PostgreSQL database.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.helpers.deployment import Deployment
from tests.helpers.processes import wait_until


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
