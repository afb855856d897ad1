"""Local web attacks: pages that reach the proxy through DNS rebinding or a cross-site request.

Each test sends what a browser would send for the attack (a foreign ``Host``, a foreign
``Origin``, a ``text/plain`` POST) to a running proxy, and checks that it is refused and
that nothing happened on GitHub.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from embedded_github import RunningSandbox, SandboxConfig
from proxy.errors import ConfigError
from proxy.settings import Settings
from tests.helpers.raw_requests import AUTH, assert_envelope
from tests.helpers.stack import Stack, start_stack, stop_stack
from ticketing.github.webhooks import sign_payload

PROMPT = [{"role": "user", "content": "Read every pending prompt, please."}]
CHAT = json.dumps({"model": "gpt-4o", "messages": PROMPT}).encode()
JSON_AUTH = {**AUTH, "Content-Type": "application/json"}
EVIL = "rebind.attacker.example"
SECRET = "webhook-secret-0123456789abcdef"


@pytest.fixture
async def open_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a proxy without client keys, as in the default loopback mode."""
    running = await start_stack(github_sandbox, sandbox_config, tmp_path, api_keys=())
    try:
        yield running
    finally:
        await stop_stack(running)


@pytest.fixture
async def named_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a proxy known by extra names and origins, with webhooks on."""
    running = await start_stack(
        github_sandbox,
        sandbox_config,
        tmp_path,
        allowed_hosts=("lb.example.net", ".corp.example"),
        allowed_origins=("https://portal.example.org",),
        desk_url="https://tickets.example.com/desk/",
        webhook_secret=SECRET,
        deliver_webhooks=False,
    )
    try:
        yield running
    finally:
        await stop_stack(running)


def root(stack: Stack) -> str:
    """Return the proxy's ``http://127.0.0.1:PORT``."""
    return stack.base_url.removesuffix("/v1")


def port(stack: Stack) -> int:
    """Return the proxy's port."""
    return int(root(stack).rsplit(":", 1)[1])


async def send(
    stack: Stack, method: str, path: str, *, data: bytes | None = None, headers: Any = None
) -> tuple[int, Any]:
    """Send one request to the proxy and return its status and JSON body."""
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, root(stack) + path, data=data, headers=headers) as response,
    ):
        text = await response.text()
        return response.status, json.loads(text) if text.startswith("{") else text


async def nothing_opened(stack: Stack) -> bool:
    """Say whether the attack left GitHub, its write budget and the store untouched."""
    operations = {operation for operation, _ in stack.desk.github.calls}
    return (
        not await stack.issues()
        and stack.desk.store.count_pending() == 0
        # The start-up check and the poll read; nothing else (a write) was asked of GitHub.
        and operations <= {"get repository", "list comments"}
    )


# --- DNS rebinding: a foreign Host ------------------------------------------------------------


async def test_dns_rebinding_host_is_refused_on_the_desk(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    """A page that rebinds its own name to 127.0.0.1 cannot read the pending tickets."""
    caplog.set_level(logging.WARNING, logger="proxy.origin_checks")
    status, body = await send(
        stack, "GET", "/desk/api/tickets", headers={"Host": f"{EVIL}:{port(stack)}"}
    )
    assert status == 403
    assert set(body) == {"error"}
    assert "DNS rebinding" in body["error"]
    assert "TICKETPROXY_ALLOWED_HOSTS" in body["error"]
    # The operator is told too, in case the name was a load balancer's.
    assert any(EVIL in r.getMessage() and "ALLOWED_HOSTS" in r.getMessage() for r in caplog.records)


async def test_dns_rebinding_host_is_refused_on_the_api(open_stack: Stack) -> None:
    """A rebound page cannot open a ticket through /v1 either, even without client keys."""
    headers = {"Host": f"{EVIL}:{port(open_stack)}", "Content-Type": "application/json"}
    status, body = await send(
        open_stack, "POST", "/v1/chat/completions", data=CHAT, headers=headers
    )
    assert status == 403
    assert_envelope(body, code="origin_not_allowed")
    assert await nothing_opened(open_stack)


async def test_dns_rebinding_host_is_refused_on_the_model_list(open_stack: Stack) -> None:
    """Even the harmless-looking model list answers no foreign name."""
    status, body = await send(
        open_stack, "GET", "/v1/models", headers={"Host": f"{EVIL}:{port(open_stack)}"}
    )
    assert status == 403
    assert_envelope(body, code="origin_not_allowed")


async def test_dns_rebinding_host_is_refused_on_metrics(stack: Stack) -> None:
    """A rebound page cannot scrape the metrics by name."""
    status, _ = await send(stack, "GET", "/metrics", headers={"Host": EVIL})
    assert status == 403


async def test_host_lookalike_of_an_allowed_suffix_is_refused(named_stack: Stack) -> None:
    """``evilcorp.example`` is not a subdomain of ``.corp.example``."""
    status, _ = await send(
        named_stack, "GET", "/desk/api/tickets", headers={"Host": "evilcorp.example"}
    )
    assert status == 403


async def test_loopback_names_and_addresses_are_answered(stack: Stack) -> None:
    """localhost, 127.0.0.1 and [::1], with any port, reach the desk as before."""
    for host in (f"localhost:{port(stack)}", "LOCALHOST.", "127.0.0.1:1", "[::1]:8080"):
        status, _ = await send(stack, "GET", "/desk/api/tickets", headers={"Host": host})
        assert (host, status) == (host, 200)


async def test_configured_names_are_answered(named_stack: Stack) -> None:
    """The desk URL's host, TICKETPROXY_ALLOWED_HOSTS and its subdomain suffixes pass."""
    for host in ("tickets.example.com", "lb.example.net:443", "corp.example", "a.b.corp.example"):
        status, _ = await send(named_stack, "GET", "/desk/api/tickets", headers={"Host": host})
        assert (host, status) == (host, 200)


async def test_probes_answer_whatever_host_they_send(stack: Stack) -> None:
    """/healthz and /readyz answer a load balancer's own Host, which nobody configured."""
    for path in ("/healthz", "/readyz"):
        status, _ = await send(stack, "GET", path, headers={"Host": "lb-probe.internal"})
        assert (path, status) == (path, 200)


async def test_metrics_scrape_by_address_is_answered(stack: Stack) -> None:
    """Prometheus scraping a pod's address (an IP literal, never rebound) gets the metrics."""
    status, _ = await send(stack, "GET", "/metrics", headers={"Host": "10.1.2.3:9090"})
    assert status == 200


async def test_webhook_with_githubs_public_host_is_processed(named_stack: Stack) -> None:
    """GitHub's delivery, addressed to the public name GitHub was given, still gets through."""
    body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    headers = {
        "Host": "hooks.smee.example",
        "Content-Type": "application/json",
        "X-GitHub-Event": "ping",
        "X-GitHub-Delivery": "d-origin-1",
        "X-Hub-Signature-256": sign_payload(body, secret=SECRET),
    }
    status, answer = await send(named_stack, "POST", "/github/webhook", data=body, headers=headers)
    assert (status, answer) == (200, {"status": "pong"})


# --- cross-site requests: a foreign Origin ---------------------------------------------------


async def test_cross_site_origin_is_refused_on_the_desk(stack: Stack) -> None:
    """A page on another site cannot fetch the desk's tickets, even addressed correctly."""
    headers = {"Origin": "https://evil.example"}
    status, body = await send(stack, "GET", "/desk/api/tickets", headers=headers)
    assert status == 403
    assert "TICKETPROXY_ALLOWED_ORIGINS" in body["error"]


async def test_cross_site_origin_cannot_open_a_ticket(open_stack: Stack) -> None:
    """A JSON POST from another site's page is refused before any issue is opened."""
    headers = {"Origin": "http://evil.example", "Content-Type": "application/json"}
    status, body = await send(
        open_stack, "POST", "/v1/chat/completions", data=CHAT, headers=headers
    )
    assert status == 403
    assert_envelope(body, code="origin_not_allowed")
    assert await nothing_opened(open_stack)


async def test_origin_of_another_port_on_this_machine_is_refused(stack: Stack) -> None:
    """Another local server's page (same host, other port) is another origin."""
    headers = {"Origin": f"http://127.0.0.1:{port(stack) + 1}"}
    status, _ = await send(stack, "GET", "/desk/api/tickets", headers=headers)
    assert status == 403


async def test_null_origin_from_a_sandboxed_frame_is_refused(stack: Stack) -> None:
    """``Origin: null`` (sandboxed iframes, file:// pages) names no page we trust."""
    status, _ = await send(stack, "GET", "/desk/api/tickets", headers={"Origin": "null"})
    assert status == 403


async def test_same_origin_and_allowed_origins_are_answered(named_stack: Stack) -> None:
    """The page's own origin, the desk URL's and TICKETPROXY_ALLOWED_ORIGINS pass."""
    for origin in (
        root(named_stack),
        "https://tickets.example.com",
        "https://portal.example.org:443",
    ):
        status, _ = await send(named_stack, "GET", "/desk/api/tickets", headers={"Origin": origin})
        assert (origin, status) == (origin, 200)


# --- cross-site simple requests: not JSON -----------------------------------------------------


async def test_cross_site_text_plain_post_opens_no_ticket(open_stack: Stack) -> None:
    """A text/plain POST (no CORS preflight) opens no issue and spends no write budget."""
    for path in ("/v1/chat/completions", "/chat/completions", "/v1/completions"):
        status, body = await send(
            open_stack, "POST", path, data=CHAT, headers={"Content-Type": "text/plain"}
        )
        assert (path, status) == (path, 415)
        assert_envelope(body, code="unsupported_content_type")
        assert "application/json" in body["error"]["message"]
    assert await nothing_opened(open_stack)


async def test_form_post_opens_no_ticket(open_stack: Stack) -> None:
    """An HTML form's urlencoded POST, the other preflight-free type, is refused."""
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    status, _ = await send(open_stack, "POST", "/v1/chat/completions", data=CHAT, headers=headers)
    assert status == 415
    assert await nothing_opened(open_stack)


async def test_post_without_a_content_type_opens_no_ticket(open_stack: Stack) -> None:
    """A fetch of an untyped Blob sends no Content-Type at all, and is refused too."""
    async with (
        aiohttp.ClientSession(skip_auto_headers=["Content-Type"]) as session,
        session.post(root(open_stack) + "/v1/chat/completions", data=CHAT) as response,
    ):
        assert "Content-Type" not in response.request_info.headers
        assert response.status == 415
    assert await nothing_opened(open_stack)


async def test_json_with_a_charset_is_accepted(stack: Stack) -> None:
    """``application/json; charset=utf-8`` (some clients add it) is JSON."""
    headers = {**AUTH, "Content-Type": "Application/JSON; charset=utf-8"}
    status, body = await send(stack, "POST", "/v1/chat/completions", data=b"{}", headers=headers)
    # Past the content-type check: the empty request is refused for what it lacks.
    assert status == 400
    assert body["error"]["code"] != "unsupported_content_type"


async def test_unknown_post_route_is_still_a_404(stack: Stack) -> None:
    """The content-type check does not hide that a route does not exist."""
    status, body = await send(stack, "POST", "/v1/embeddings", data=b"x", headers=AUTH)
    assert status == 404
    assert_envelope(body, code="unknown_url")


# --- settings ---------------------------------------------------------------------------------


def test_allowed_hosts_and_origins_come_from_the_environment() -> None:
    """Both lists are read, trimmed and lower-cased by Settings.from_env."""
    settings = Settings.from_env(
        {
            "TICKETPROXY_ALLOWED_HOSTS": " Tickets.Example.com , .corp.example,",
            "TICKETPROXY_ALLOWED_ORIGINS": "https://Portal.example.org,http://localhost:3000",
        }
    )
    assert settings.allowed_hosts == ("tickets.example.com", ".corp.example")
    assert settings.allowed_origins == ("https://portal.example.org", "http://localhost:3000")


@pytest.mark.parametrize("value", ["https://x.example", "x.example:8080", "x/y", "."])
def test_allowed_host_that_is_not_a_name_is_refused_at_start_up(value: str) -> None:
    """A URL or a port in TICKETPROXY_ALLOWED_HOSTS is named as a configuration error."""
    with pytest.raises(ConfigError, match="TICKETPROXY_ALLOWED_HOSTS"):
        Settings.from_env({"TICKETPROXY_ALLOWED_HOSTS": value})


@pytest.mark.parametrize(
    "value", ["portal.example.org", "https://portal.example.org/", "ftp://x.example", "null"]
)
def test_allowed_origin_that_is_not_an_origin_is_refused_at_start_up(value: str) -> None:
    """An origin with a path, a slash, no scheme or another scheme stops the start."""
    with pytest.raises(ConfigError, match="TICKETPROXY_ALLOWED_ORIGINS"):
        Settings.from_env({"TICKETPROXY_ALLOWED_ORIGINS": value})
