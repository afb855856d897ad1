"""The ``/desk/`` page's JSON API, its access rules, and the sandbox's CORS for browsers."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from embedded_github import RunningSandbox
from proxy.desk_page import DeskPageSettings
from proxy.errors import ConfigError
from proxy.settings import Settings
from tests.helpers.desk_page import DESK_TOKEN, PROMPT, desk_url, get_json
from tests.helpers.review_flow import DANGEROUS, SHELL
from tests.helpers.stack import CLIENT_KEY, REPO, Stack


async def test_pending_ticket_is_listed_as_awaiting_an_answer(desk_stack: Stack) -> None:
    """A waiting request shows in the list with its issue, reference, state and age."""
    pending = asyncio.create_task(
        desk_stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    await desk_stack.wait_for_issue(1)
    status, data = await get_json(desk_url(desk_stack, "api/tickets"))
    pending.cancel()
    assert status == 200
    [ticket] = data["tickets"]
    assert ticket["number"] == 1
    assert ticket["ref"] == f"{REPO}#1"
    assert ticket["state"] == "awaiting answer"
    assert ticket["url"].endswith("/issues/1")
    assert 0 <= ticket["age_seconds"] < 60


async def test_ticket_detail_carries_its_body_template_and_reference(desk_stack: Stack) -> None:
    """One ticket's detail holds the issue body text, the answer template and ``owner/repo#N``."""
    pending = asyncio.create_task(
        desk_stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT, tools=SHELL)
    )
    await desk_stack.wait_for_issue(1)
    status, detail = await get_json(desk_url(desk_stack, "api/tickets/1"))
    pending.cancel()
    assert status == 200
    assert detail["ref"] == f"{REPO}#1"
    assert "Write the word hello" in detail["body"]
    assert "execute_shell" in detail["template"]
    assert detail["candidate"] is None


async def test_script_in_prompt_is_not_executable_on_the_desk(desk_stack: Stack) -> None:
    """The desk's ``body_html`` renders the ticket's tables and leaves prompt HTML inert."""
    prompt = [{"role": "user", "content": "Hi <img src=x onerror=alert(1)><script>x()</script>"}]
    pending = asyncio.create_task(
        desk_stack.openai().chat.completions.create(model="gpt-4o", messages=prompt)
    )
    await desk_stack.wait_for_issue(1)
    status, detail = await get_json(desk_url(desk_stack, "api/tickets/1"))
    pending.cancel()
    assert status == 200
    assert "<img src=x onerror=alert(1)>" in detail["body"]  # the raw text is kept
    assert "<table>" in detail["body_html"]
    assert "<img" not in detail["body_html"]
    assert "<script" not in detail["body_html"]
    assert "&lt;img src=x onerror=alert(1)&gt;" in detail["body_html"]


async def test_ticket_under_review_shows_the_candidate_digest_and_commands(
    desk_stack: Stack,
) -> None:
    """A held answer is shown with its digest and commands, for reviewers to sign against."""
    pending = asyncio.create_task(
        desk_stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT, tools=SHELL)
    )
    await desk_stack.wait_for_issue(1)
    await desk_stack.answer(1, DANGEROUS, signer="bob")
    await desk_stack.settle()
    status, detail = await get_json(desk_url(desk_stack, "api/tickets/1"))
    pending.cancel()
    assert status == 200
    assert detail["state"] == "needs review"
    candidate = detail["candidate"]
    assert candidate["signer"] == "bob"
    ticket = desk_stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    held = desk_stack.desk.store.pending_candidate(ticket.id)
    assert held is not None
    assert candidate["digest"] == held.digest
    assert any("rm -rf build" in command for command in candidate["commands"])


async def test_unknown_issue_is_not_found(desk_stack: Stack) -> None:
    """Asking for an issue with no pending ticket answers 404 with a reason."""
    status, data = await get_json(desk_url(desk_stack, "api/tickets/99"))
    assert status == 404
    assert "#99" in data["error"]


async def test_desk_api_without_the_desk_token_is_refused(guarded_stack: Stack) -> None:
    """With a desk token configured, a request that does not carry it gets a 403."""
    status, data = await get_json(desk_url(guarded_stack, "api/tickets"))
    assert status == 403
    assert "TICKETPROXY_DESK_TOKEN" in data["error"]
    status, _ = await get_json(
        desk_url(guarded_stack, "api/tickets"), headers={"Authorization": "Bearer wrong-token"}
    )
    assert status == 403


async def test_desk_api_with_a_client_api_key_instead_of_the_desk_token_is_refused(
    guarded_stack: Stack,
) -> None:
    """An agent's /v1 client key does not open the editors' desk."""
    status, _ = await get_json(
        desk_url(guarded_stack, "api/tickets"), headers={"Authorization": f"Bearer {CLIENT_KEY}"}
    )
    assert status == 403


async def test_desk_api_accepts_the_desk_token_as_bearer_or_query(guarded_stack: Stack) -> None:
    """The desk token opens the API either as a bearer token or as ``?token=``."""
    bearer, _ = await get_json(
        desk_url(guarded_stack, "api/tickets"), headers={"Authorization": f"Bearer {DESK_TOKEN}"}
    )
    query, _ = await get_json(desk_url(guarded_stack, "api/tickets"), params={"token": DESK_TOKEN})
    assert (bearer, query) == (200, 200)


async def test_desk_config_names_the_github_api_and_repository(desk_stack: Stack) -> None:
    """The page learns GitHub's API base and the ticket repository from the proxy."""
    status, config = await get_json(desk_url(desk_stack, "api/config"))
    assert status == 200
    assert config == {"github_api_url": desk_stack.sandbox.api_url, "repo": REPO}


async def test_desk_page_allows_scripts_only_from_itself(desk_stack: Stack) -> None:
    """The page is served with a CSP that forbids inline and foreign scripts."""
    async with aiohttp.ClientSession() as session, session.get(desk_url(desk_stack)) as response:
        text = await response.text()
        policy = response.headers["Content-Security-Policy"]
    assert response.status == 200
    assert '<script src="/desk/desk.js"></script>' in text
    assert "script-src 'self';" in policy
    assert "frame-ancestors 'none'" in policy


def test_short_desk_token_is_refused_at_start_up() -> None:
    """A guessable desk token stops the start with the variable's name."""
    with pytest.raises(ConfigError, match="TICKETPROXY_DESK_TOKEN"):
        Settings.from_env({"TICKETPROXY_DESK_TOKEN": "short"})


def test_desk_token_is_kept_out_of_the_settings_repr() -> None:
    """Printing the desk settings never shows the token."""
    settings = DeskPageSettings.from_settings(
        Settings.from_env({"TICKETPROXY_DESK_TOKEN": DESK_TOKEN})
    )
    assert DESK_TOKEN not in repr(settings)


async def test_sandbox_answers_a_cors_preflight_for_posting_a_comment(
    github_sandbox: RunningSandbox,
) -> None:
    """A browser may POST a comment to the sandbox's API from another origin, as on GitHub."""
    url = f"{github_sandbox.api_url}/repos/{REPO}/issues/1/comments"
    headers = {
        "Origin": "http://127.0.0.1:1",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    async with aiohttp.ClientSession() as session:
        async with session.options(url, headers=headers) as response:
            preflight = response.status, dict(response.headers)
        async with session.get(f"{github_sandbox.api_url}/rate_limit") as response:
            plain = response.headers.get("Access-Control-Allow-Origin")
    status, allowed = preflight
    assert status == 204
    assert allowed["Access-Control-Allow-Origin"] == "*"
    assert "POST" in allowed["Access-Control-Allow-Methods"]
    assert "Authorization" in allowed["Access-Control-Allow-Headers"]
    assert plain == "*"
