"""docker-compose.yml's topology run for real on loopback, without Docker.

Two ``ticketproxy serve`` replicas with the compose file's ``x-replica`` environment, one
PostgreSQL, Debian's nginx with ``deploy/nginx.conf``, and ``deploy/agent.py``, wired as
the compose file wires them (see ``tests/helpers/compose_topology.py`` for what is moved
onto loopback). Everything reaches the replicas through nginx, as agents do in the compose.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import re
import time
from collections.abc import Iterator

import pytest

from tests.helpers.compose_topology import Topology
from tests.helpers.deployment import Deployment
from tests.helpers.postgres import PostgresServer
from tests.helpers.processes import Child, alive_or_fail, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def topology(
    postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Topology]:
    """Yield the compose file's services running on loopback, shared by this file's tests."""
    deployment = Deployment(tmp_path_factory.mktemp("compose"))
    try:
        running = Topology(deployment, postgres_server)
    except BaseException:
        deployment.close()
        raise
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def compose(topology: Topology) -> Topology:
    """Return the topology with both replicas running (a test before may have killed one)."""
    topology.ensure_running()
    return topology


def issue_asking(deployment: Deployment, question: str) -> int:
    """Return the number of the one issue whose body asks ``question``."""
    found = [i["number"] for i in deployment.issues() if question in (i.get("body") or "")]
    assert len(found) <= 1, f"{question!r} opened issues {found}"
    return found[0] if found else 0


def agent_answers(agent: Child) -> list[str]:
    """Return the answers the agent printed so far."""
    return re.findall(r"^answer: (.*)$", agent.output(), flags=re.MULTILINE)


def wait_for_issue(compose: Topology, question: str) -> int:
    """Wait until ``question`` is an issue, and return its number."""
    return int(
        wait_until(
            lambda: issue_asking(compose.deployment, question),
            within=15,
            what=f"an issue asking {question!r}",
        )
    )


@contextlib.contextmanager
def open_stream(compose: Topology, question: str) -> Iterator[http.client.HTTPResponse]:
    """POST a streamed completion to nginx as the agent service would; yield the 200."""
    connection = http.client.HTTPConnection("127.0.0.1", compose.port, timeout=10)
    body = {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": question}]}
    connection.request(
        "POST",
        "/v1/chat/completions",
        body=json.dumps(body),
        # The name the agent service reaches nginx by, which nginx passes on to the replica.
        headers={
            "Host": "ticketproxy:8080",
            "Content-Type": "application/json",
            "Authorization": f"Bearer {compose.client_key}",
        },
    )
    try:
        response = connection.getresponse()
        assert response.status == 200, response.read()
        yield response
    finally:
        connection.close()


def test_the_agent_service_asks_through_nginx_and_prints_the_signed_answer(
    compose: Topology,
) -> None:
    """deploy/agent.py's question becomes an issue; the signed answer reaches its stdout."""
    agent = compose.start_agent("Which branch goes out today?")
    number = wait_for_issue(compose, "Which branch goes out today? (round 1)")
    compose.deployment.answer(number, "Deploy `main`.")
    wait_until(
        lambda: alive_or_fail(agent) and agent_answers(agent),
        within=15,
        what="the agent to print the answer",
    )
    assert agent_answers(agent) == ["Deploy `main`."]
    agent.kill_9()


def test_a_streamed_completion_passes_nginx_unbuffered_heartbeats_first(
    compose: Topology,
) -> None:
    """SSE heartbeats arrive through nginx while people think, then the answer and [DONE]."""
    with open_stream(compose, "Stream me the branch name.") as response:
        assert response.getheader("Content-Type", "").startswith("text/event-stream")
        received = b""
        deadline = time.monotonic() + 5
        while received.count(b": keep-alive") < 2:
            assert time.monotonic() < deadline, f"no heartbeats through nginx: {received!r}"
            received += response.read1(4096)
        assert b"data:" not in received  # nothing but heartbeats before anyone answered
        number = wait_for_issue(compose, "Stream me the branch name.")
        compose.deployment.answer(number, "Deploy `stream-1`.")
        while b"data: [DONE]" not in received:
            chunk = response.read1(4096)
            assert chunk, f"the stream ended early: {received!r}"
            received += chunk
    events = [line[6:] for line in received.decode().splitlines() if line.startswith("data: {")]
    deltas = [json.loads(event)["choices"][0]["delta"].get("content") or "" for event in events]
    assert "".join(deltas) == "Deploy `stream-1`."


def test_kill_9_of_the_replica_serving_the_agent_and_its_retry_via_nginx_gets_the_answer_once(
    compose: Topology,
) -> None:
    """The agent's replica dies mid-wait; its retry re-attaches through nginx, answered once."""
    question = "Which branch after the crash?"
    agent = compose.start_agent(question)
    number = wait_for_issue(compose, f"{question} (round 1)")
    serving = compose.serving(number)
    time.sleep(1.0)  # the 200 and heartbeats are on their way: the client is cut mid-answer
    logged = len(compose.nginx_errors())
    compose.kill_9(serving)
    compose.deployment.answer(number, "Deploy `release-4.0`.")
    wait_until(
        lambda: alive_or_fail(agent) and agent_answers(agent),
        within=20,
        what="the agent's retry to get the answer",
        context=compose.deployment.context,
    )
    agent.kill_9()
    assert agent_answers(agent) == ["Deploy `release-4.0`."]
    # nginx could not pass the request on (it had begun to answer): the agent retried.
    cut = f'upstream: "http://127.0.0.1:{compose.ports[serving]}/v1/chat/completions"'
    lines = compose.nginx_errors()[logged:].splitlines()
    assert any("closed connection while reading upstream" in ln and cut in ln for ln in lines)
    assert issue_asking(compose.deployment, question) == number  # re-attached: no new issue
    delivered = (
        "SELECT COUNT(*), COUNT(a.delivered_at) FROM answers a JOIN tickets t"
        f" ON t.id = a.ticket_id WHERE t.issue_number = {number}"
    )
    wait_until(
        lambda: compose.deployment.query(delivered) == [(1, 1)],
        within=5,
        what="the one delivery to be recorded",
    )


def test_nginx_passes_a_new_request_refused_by_a_dead_replica_to_the_live_one(
    compose: Topology,
) -> None:
    """With replica-a killed, every new request through nginx is served, by replica-b."""
    dead = f"127.0.0.1:{compose.ports['replica-a']}"
    compose.kill_9("replica-a")
    logged = len(compose.nginx_errors())
    # Round robin sends one of a worker's two requests to replica-a first; a worker that saw
    # replica-a fail in an earlier test skips it for its fail_timeout (5 s).
    deadline = time.monotonic() + 8
    for attempt in itertools.count():
        with open_stream(compose, f"Is replica-b there? ({attempt})") as response:
            assert response.read1(4096).startswith(b": keep-alive")
        if dead in compose.nginx_errors()[logged:] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    refused = compose.nginx_errors()[logged:]
    assert f'upstream: "http://{dead}/v1/chat/completions"' in refused
    assert "Connection refused" in refused
