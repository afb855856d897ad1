"""``GET /metrics``: the desk's figures read at scrape time, and the wait histogram."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client.parser import text_string_to_metric_families

from auth.verify import RejectReason
from embedded_github import RunningSandbox, SandboxConfig
from proxy.front_door import front_door
from proxy.metrics import TICKET_HEADER, ProxyMetrics
from proxy.middleware import ClientKeys
from proxy.origin_checks import LOOPBACK_NAMES, OriginPolicy
from tests.helpers.stack import CLIENT_KEY, REPO, Stack, start_stack, stop_stack

PROMPT = [{"role": "user", "content": "Count the files in the workspace."}]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def root_url(stack: Stack) -> str:
    """Return the proxy's address without the ``/v1`` suffix."""
    return stack.base_url.removesuffix("/v1")


async def scrape(stack: Stack) -> Samples:
    """Fetch ``/metrics`` (no client key) and return every sample by name and labels."""
    async with aiohttp.ClientSession() as http, http.get(root_url(stack) + "/metrics") as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain")
        text = await resp.text()
    return parse(text)


def parse(text: str) -> Samples:
    """Index Prometheus text exposition samples by (name, sorted labels)."""
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return samples


async def until(check: Callable[[], bool], within: float = 10.0) -> None:
    """Wait until ``check()`` holds."""
    deadline = asyncio.get_running_loop().time() + within
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.02)


async def test_metrics_are_served_without_a_client_key_with_every_family_at_rest(
    stack: Stack,
) -> None:
    """An idle proxy reports zero pending tickets, zero verdicts and an empty write queue."""
    samples = await scrape(stack)
    assert samples["ticketproxy_pending_tickets", ()] == 0
    assert samples["ticketproxy_answers_accepted_total", ()] == 0
    assert samples["ticketproxy_write_queue_depth", ()] == 0
    # Nothing waits, so the poller makes no request at all.
    assert samples["ticketproxy_polls_total", ()] == 0
    assert samples["ticketproxy_wait_seconds_count", ()] == 0
    for reason in RejectReason:
        assert samples["ticketproxy_answers_rejected_total", (("reason", reason.value),)] == 0


async def test_waiting_request_is_pending_until_its_answer_is_accepted_and_delivered(
    stack: Stack,
) -> None:
    """A waiting completion counts as pending; its delivery adds one acceptance and one wait."""
    client = stack.openai()
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    during = await scrape(stack)
    assert during["ticketproxy_pending_tickets", ()] == 1
    assert during["ticketproxy_wait_seconds_count", ()] == 0
    assert during["ticketproxy_github_calls_total", (("route", "create issue"), ("status", "2xx"))]
    await stack.answer(1, "There are 3 files.")
    completion = await asyncio.wait_for(pending, 10)
    assert completion.choices[0].message.content == "There are 3 files."
    after = await scrape(stack)
    assert after["ticketproxy_pending_tickets", ()] == 0
    assert after["ticketproxy_answers_accepted_total", ()] == 1
    assert after["ticketproxy_wait_seconds_count", ()] == 1
    assert after["ticketproxy_wait_seconds_sum", ()] > 0
    assert after["ticketproxy_github_rate_limit_remaining", ()] < 5000


async def test_comment_signed_for_another_ticket_is_counted_as_wrong_ticket(stack: Stack) -> None:
    """A signed comment naming another issue is rejected, and counted under its reason."""
    client = stack.openai()
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    await stack.comment(1, stack.signed("3 files", number=1, ticket=f"{REPO}#99"))
    await until(lambda: stack.desk.answers_rejected[RejectReason.WRONG_TICKET.value] == 1)
    samples = await scrape(stack)
    wrong = ("ticketproxy_answers_rejected_total", (("reason", "wrong_ticket"),))
    assert samples[wrong] == 1
    assert samples["ticketproxy_answers_accepted_total", ()] == 0
    assert samples["ticketproxy_pending_tickets", ()] == 1
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending


async def test_github_failures_are_counted_by_route_and_status(stack: Stack) -> None:
    """A 502 from GitHub on issue creation shows up as ``route="create issue", status="502"``."""
    stack.sandbox.sandbox.inject_fault(
        method="POST", path=r"/repos/acme/agents/issues", status=502, times=1
    )
    client = stack.openai()
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    samples = await scrape(stack)
    assert samples["ticketproxy_github_calls_total", (("route", "create issue"), ("status", "502"))]
    assert samples["ticketproxy_github_calls_total", (("route", "create issue"), ("status", "2xx"))]
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending


async def test_request_refused_before_waiting_is_not_a_wait(stack: Stack) -> None:
    """A 400 (no messages) opens no ticket and adds nothing to the wait histogram."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            stack.base_url + "/chat/completions",
            json={"model": "gpt-4o"},
            headers={"Authorization": f"Bearer {CLIENT_KEY}"},
        ) as resp,
    ):
        assert resp.status == 400
    samples = await scrape(stack)
    assert samples["ticketproxy_wait_seconds_count", ()] == 0
    assert samples["ticketproxy_pending_tickets", ()] == 0


async def test_openmetrics_is_served_to_a_scraper_that_asks_for_it(stack: Stack) -> None:
    """``Accept: application/openmetrics-text`` gets OpenMetrics, ending in ``# EOF``."""
    accept = "application/openmetrics-text; version=1.0.0"
    async with (
        aiohttp.ClientSession() as http,
        http.get(root_url(stack) + "/metrics", headers={"Accept": accept}) as resp,
    ):
        assert resp.headers["Content-Type"].startswith("application/openmetrics-text")
        text = await resp.text()
    assert text.rstrip().endswith("# EOF")
    assert "ticketproxy_pending_tickets 0" in text


class FakeMonotonic:
    """A monotonic clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_wait_histogram_observes_the_handler_time_of_ticket_backed_answers_only() -> None:
    """The middleware times a ticket-backed 200 by the injected clock and skips other answers."""
    clock = FakeMonotonic()
    metrics = ProxyMetrics(desk=lambda: None, monotonic=clock)

    async def answered(request: web.Request) -> web.Response:
        clock.now += 42.0
        return web.json_response({"ok": True}, headers={TICKET_HEADER: "https://x/1"})

    async def plain(request: web.Request) -> web.Response:
        clock.now += 7.0
        return web.json_response({"ok": True})

    door = front_door(OriginPolicy(names=LOOPBACK_NAMES), ClientKeys(()), metrics=metrics)
    app = web.Application(middlewares=[door])
    app.router.add_get("/answered", answered)
    app.router.add_get("/plain", plain)
    async with TestClient(TestServer(app, host="127.0.0.1", port=0)) as client:
        assert (await client.get("/answered")).status == 200
        assert (await client.get("/plain")).status == 200
    body, _ = metrics.render("")
    samples = parse(body.decode())
    assert samples["ticketproxy_wait_seconds_count", ()] == 1
    assert samples["ticketproxy_wait_seconds_sum", ()] == 42.0
    assert samples["ticketproxy_wait_seconds_bucket", (("le", "60.0"),)] == 1
    assert samples["ticketproxy_wait_seconds_bucket", (("le", "30.0"),)] == 0
    assert ("ticketproxy_pending_tickets", ()) not in samples


async def test_metrics_with_a_token_refuse_a_scrape_without_it_and_serve_one_with_it(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """With TICKETPROXY_METRICS_TOKEN, /metrics is a 401 without the bearer token."""
    token = "metrics-token-0123456789"
    running = await start_stack(github_sandbox, sandbox_config, tmp_path, metrics_token=token)
    url = root_url(running) + "/metrics"
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(url) as bare:
                assert bare.status == 401
                assert "TICKETPROXY_METRICS_TOKEN" in await bare.text()
            wrong = {"Authorization": "Bearer metrics-token-0123456780"}
            async with http.get(url, headers=wrong) as forged:
                assert forged.status == 401
            right = {"Authorization": f"Bearer {token}"}
            async with http.get(url, headers=right) as scraped:
                assert scraped.status == 200
                assert "ticketproxy_pending_tickets" in await scraped.text()
            # Health probes stay open: an orchestrator has no token to give.
            async with http.get(root_url(running) + "/healthz") as health:
                assert health.status == 200
    finally:
        await stop_stack(running)
