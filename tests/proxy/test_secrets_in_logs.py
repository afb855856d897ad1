"""No secret the stack is given ever reaches a log record, in a typical run at DEBUG.

The stack runs with every secret configured (client key, GitHub token, desk token, webhook
secret, metrics token, an upstream model's key, the drafting model's key) and serves a
request answered by a person through a webhook, an upstream-routed request, desk reads with
the token in the header, a cookie and the query, and a metrics scrape. Every record that
reaches the root logger (the access log included) is then searched for every secret.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from auth.keys import signing_key_to_json
from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.desk_page import PROMPT, desk_url
from tests.helpers.drafting import DRAFT_KEY
from tests.helpers.stack import CLIENT_KEY, Stack, start_stack, stop_stack
from tests.helpers.upstream_stub import UpstreamStub, running_upstream_stub

DESK_TOKEN = "desk-token-never-logged-0123456789"
WEBHOOK_SECRET = "webhook-secret-never-logged-0123456789"
METRICS_TOKEN = "metrics-token-never-logged-0123456789"
UPSTREAM_KEY = "sk-upstream-key-never-logged-0123456789"
ROUTES = """
[models."gpt-4o"]
route = "humans"

[models."gpt-3.5-turbo"]
route = "upstream"
base_url = "{upstream}/"
api_key_env = "CHEAP_MODEL_KEY"
timeout = 5
"""


@pytest.fixture
async def upstream() -> AsyncIterator[UpstreamStub]:
    """Yield a running OpenAI-compatible upstream (the routed model and the drafter)."""
    async with running_upstream_stub() as stub:
        yield stub


@pytest.fixture
async def secret_stack(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    tmp_path: Path,
    upstream: UpstreamStub,
) -> AsyncIterator[Stack]:
    """Yield a stack with every secret ticketproxy takes configured."""
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES.format(upstream=upstream.base_url), encoding="utf-8")
    running = await start_stack(
        github_sandbox,
        sandbox_config,
        tmp_path,
        desk_token=DESK_TOKEN,
        webhook_secret=WEBHOOK_SECRET,
        metrics_token=METRICS_TOKEN,
        routes_path=routes,
        upstream_keys={"CHEAP_MODEL_KEY": UPSTREAM_KEY},
        draft_url=upstream.base_url,
        draft_key=DRAFT_KEY,
        # Webhooks bring the answer; a slow poll keeps the run on the webhook path.
        poll_interval=30.0,
    )
    try:
        yield running
    finally:
        await stop_stack(running)


def secrets_of(stack: Stack) -> dict[str, str]:
    """Return every secret the stack was given, by what it is."""
    known = {
        "client key": CLIENT_KEY,
        "desk token": DESK_TOKEN,
        "webhook secret": WEBHOOK_SECRET,
        "metrics token": METRICS_TOKEN,
        "upstream key": UPSTREAM_KEY,
        "draft key": DRAFT_KEY,
    }
    for user in stack.config.users:
        known[f"GitHub token of {user.login}"] = user.token
    for login, key in stack.keys.items():
        # The private part of each editor's key (they sign; the proxy never holds it).
        known[f"private key of {login}"] = json.loads(signing_key_to_json(key))["d"]
    assert stack.settings.github_token in known.values()
    return known


def record_text(record: logging.LogRecord) -> str:
    """Return everything a record carries: its message, traceback and every attribute."""
    text = f"{record.getMessage()}\n{record.__dict__!r}"
    if record.exc_info and record.exc_info[1] is not None:
        text += f"\n{record.exc_info[1]!r}"
    return text


async def drive_a_typical_run(stack: Stack, upstream: UpstreamStub) -> None:
    """Ask, answer (through a webhook), route upstream, read the desk, scrape the metrics."""
    client = stack.openai()
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    routed = await client.chat.completions.create(model="gpt-3.5-turbo", messages=PROMPT)
    assert routed.choices[0].message.content == "Hello from the upstream model."
    root = stack.base_url.removesuffix("/v1")
    async with aiohttp.ClientSession() as http:
        reads = [
            {"headers": {"Authorization": f"Bearer {DESK_TOKEN}"}},
            {"headers": {"Cookie": f"ticketproxy_desk_token={DESK_TOKEN}"}},
            {"params": {"token": DESK_TOKEN}},
        ]
        for read in reads:
            async with http.get(desk_url(stack, "api/tickets"), **read) as response:  # type: ignore[arg-type]
                assert response.status == 200
        async with http.get(desk_url(stack, "api/tickets/1"), params={"token": DESK_TOKEN}) as r:
            assert r.status == 200
        await stack.answer(1, "The workspace holds hello.txt.")
        completion = await asyncio.wait_for(pending, 20)
        assert completion.choices[0].message.content == "The workspace holds hello.txt."
        metrics = {"Authorization": f"Bearer {METRICS_TOKEN}"}
        async with http.get(root + "/metrics", headers=metrics) as response:
            assert response.status == 200
    delivered = [d for d in stack.sandbox.sandbox.deliveries if d.event == "issue_comment"]
    assert delivered
    assert all(d.status == 200 for d in delivered), delivered


async def test_no_secret_appears_in_any_log_record_of_a_typical_run(
    secret_stack: Stack, upstream: UpstreamStub, caplog: pytest.LogCaptureFixture
) -> None:
    """Every record at DEBUG, access log included, is free of every configured secret."""
    caplog.set_level(logging.DEBUG)
    await drive_a_typical_run(secret_stack, upstream)
    await secret_stack.desk.followups.drain()
    records = list(caplog.records)
    access = [r.getMessage() for r in records if r.name == "aiohttp.access"]
    # The run was logged: the desk read by ?token=, the webhook and the scrape are there.
    assert any("/desk/api/tickets?token=[redacted]" in line for line in access), access
    assert any("POST /github/webhook" in line for line in access), access
    assert any("GET /metrics" in line for line in access), access
    assert any(r.levelno == logging.DEBUG for r in records)
    leaks = [
        (what, record.name, record.getMessage()[:200])
        for record in records
        for what, secret in secrets_of(secret_stack).items()
        if secret in record_text(record)
    ]
    assert not leaks, leaks
