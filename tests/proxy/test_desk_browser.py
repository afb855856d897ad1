"""The desk page in real headless Chromium: import a key, sign in the browser, post, deliver.

Needs Debian's Chromium at /usr/bin/chromium (``apt-get install chromium``); Playwright drives
it and never downloads a browser of its own. Skipped when Chromium is missing, except in CI
(``CI=true``), where a missing browser fails the run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auth.keyring import Keyring
from auth.keys import write_signing_key
from auth.verify import Accepted, verify_comment
from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.agent_runs import signed_claims, wait_for_step
from tests.helpers.desk_browser import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    desk_page,
    open_ticket,
    require_chromium,
    sign_and_post,
)
from tests.helpers.desk_page import PROMPT, desk_url, start_desk_stack
from tests.helpers.drafting import DRAFT, drafted, start_draft_stack
from tests.helpers.review_flow import DANGEROUS, SHELL
from tests.helpers.stack import REPO, Stack, stop_stack
from tests.helpers.upstream_stub import running_upstream_stub
from ticketing.store.model import TicketState

README_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "desk.png"
ANSWER = "  Done: hello.txt now holds hello.\r\nSigned in the browser.  "

playwright_api = require_chromium()


async def test_answer_signed_in_the_browser_reaches_the_openai_client(
    desk_stack: Stack, tmp_path: Path
) -> None:
    """Alice imports her key file, signs on /desk/, posts to GitHub, and the agent gets it."""
    key_file = tmp_path / "alice.key.json"
    write_signing_key(key_file, desk_stack.keys["alice"])
    secret_d = json.loads(key_file.read_text())["d"]
    pending = asyncio.create_task(
        desk_stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    await desk_stack.wait_for_issue(1)
    sent: list[str] = []
    async with playwright_api.async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        try:
            page = await browser.new_page(viewport={"width": 1100, "height": 720})
            page.on("request", lambda r: sent.append(f"{r.url} {r.post_data or ''}"))
            await page.goto(desk_url(desk_stack))
            await page.set_input_files("#key-file", str(key_file))
            # Locator waits, not wait_for_function: the page's CSP forbids eval.
            await page.locator("#key-info", has_text="alice").wait_for()
            await page.click("li[data-number='1']")
            await page.wait_for_selector("#ticket:not([hidden])")
            await page.fill("#answer", ANSWER)
            await page.click("#sign")
            await playwright_api.expect(page.locator("#signed")).to_have_value(
                re.compile("ticketproxy-signature")
            )
            signed = await page.input_value("#signed")
            stored = await page.evaluate(
                """() => new Promise((resolve) => {
                    const open = indexedDB.open("ticketproxy-desk", 1);
                    open.onsuccess = () => {
                      const get = open.result.transaction("keys").objectStore("keys")
                        .get("signer");
                      get.onsuccess = () => resolve({
                        extractable: get.result.key.extractable,
                        algorithm: get.result.key.algorithm.name,
                        login: get.result.login,
                      });
                    };
                  })"""
            )
            await page.fill("#gh-token", desk_stack.token("alice"))
            await page.click("#post")
            await page.locator("#status", has_text="Posted").wait_for()
            # Live: the list shows the answer delivered once the agent has it, no reload.
            await playwright_api.expect(page.locator("li[data-number='1']")).to_contain_text(
                "delivered"
            )
            await page.evaluate("document.querySelector('main').scrollTo(0, 0)")
            shot = (
                README_SCREENSHOT
                if os.environ.get("TICKETPROXY_SCREENSHOT") == "1"
                else tmp_path / "desk.png"
            )
            await page.screenshot(path=str(shot))
            assert shot.stat().st_size > 10_000
        finally:
            await browser.close()
    completion = await asyncio.wait_for(pending, 10)
    assert completion.choices[0].message.content == ANSWER.replace("\r\n", "\n").strip()
    assert stored == {"extractable": False, "algorithm": "Ed25519", "login": "alice"}
    assert not any(secret_d in request for request in sent)
    verdict = verify_comment(
        signed,
        author_login="alice",
        author_id=next(u.id for u in desk_stack.config.users if u.login == "alice"),
        ticket=f"{REPO}#1",
        keyring=Keyring.load(desk_stack.settings.keyring_path),
        now=datetime.now(UTC),
        is_jti_used=lambda jti: False,
    )
    assert isinstance(verdict, Accepted), verdict


async def held_for_review(stack: Stack) -> asyncio.Task[Any]:
    """Ask with the shell tool, have alice answer a risky command, and wait for the hold."""
    pending = asyncio.create_task(
        stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT, tools=SHELL)
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, DANGEROUS, signer="alice")
    await stack.settle()
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    assert ticket.state is TicketState.NEEDS_REVIEW
    return pending


async def test_reviewer_approving_on_the_page_releases_the_held_answer(
    desk_stack: Stack, tmp_path: Path
) -> None:
    """Bob opens the held answer, clicks Approve and posts; the agent receives the command."""
    pending = await held_for_review(desk_stack)
    async with desk_page(desk_stack, "bob", tmp_path) as page:
        await open_ticket(page)
        await playwright_api.expect(page.locator("#cand-commands")).to_contain_text("rm -rf build")
        await playwright_api.expect(page.locator("#sign")).to_be_hidden()
        await sign_and_post(page, "#approve")
    completion = await asyncio.wait_for(pending, 10)
    [call] = completion.choices[0].message.tool_calls
    assert call.function.name == "execute_shell"
    assert json.loads(call.function.arguments) == {"command": "rm -rf build"}


async def test_late_live_event_keeps_the_review_note_being_written(
    desk_stack: Stack, tmp_path: Path
) -> None:
    """An event arriving late for the open ticket re-reads it, but keeps the reviewer's note."""
    pending = await held_for_review(desk_stack)
    async with desk_page(desk_stack, "bob", tmp_path) as page:
        await open_ticket(page)
        await page.fill("#answer", "Half a note about the build dir")
        # The page shows it held for review; an event saying "open" makes it read it again.
        async with page.expect_response(lambda response: "/api/v1/tickets/1" in response.url):
            await page.evaluate("onDeskEvent('ticket.opened', {number: 1, state: 'open'})")
        await page.evaluate("new Promise((done) => setTimeout(done, 100))")
        await playwright_api.expect(page.locator("#answer")).to_have_value(
            "Half a note about the build dir"
        )
        await playwright_api.expect(page.locator("#reject")).to_be_visible()
    pending.cancel()


async def test_reviewer_rejecting_on_the_page_keeps_the_answer_from_the_agent(
    desk_stack: Stack, tmp_path: Path
) -> None:
    """Bob rejects the held answer on the page; the agent never gets it, only the expiry."""
    pending = await held_for_review(desk_stack)
    async with desk_page(desk_stack, "bob", tmp_path) as page:
        await open_ticket(page)
        await page.fill("#answer", "Deleting the build directory is not wanted here.")
        await sign_and_post(page, "#reject")
        await desk_stack.settle()
        ticket = desk_stack.desk.store.ticket_for_issue(1)
        assert ticket is not None
        assert ticket.state is TicketState.OPEN
        desk_stack.clock.offset += timedelta(minutes=5)
        desk_stack.desk.poke()
        completion = await asyncio.wait_for(pending, 10)
        # The expired ticket stays on the list for an hour, read-only.
        await page.click("#refresh")
        await playwright_api.expect(page.locator("li[data-number='1']")).to_contain_text("expired")
        await open_ticket(page)
        await playwright_api.expect(page.locator("#read-only")).to_be_visible()
        await playwright_api.expect(page.locator("#answering")).to_be_hidden()
    message = completion.choices[0].message
    assert message.tool_calls is None
    assert message.content.startswith("No human answered this request in time.")
    assert "rm -rf" not in message.content


async def test_signing_the_draft_unchanged_on_the_page_releases_it_to_the_agent(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """One click on "Sign the draft unchanged" signs and posts the draft; the agent gets it."""
    # (Editing the draft and signing the edit is tested without a browser in test_drafts.)
    async with running_upstream_stub(text=DRAFT) as stub:
        stack = await start_draft_stack(github_sandbox, sandbox_config, tmp_path, stub.base_url)
        try:
            pending = asyncio.create_task(
                stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
            )
            await drafted(stack)
            async with desk_page(stack, "alice", tmp_path) as page:
                await open_ticket(page)
                await playwright_api.expect(page.locator("#draft-text")).to_have_text(DRAFT)
                await playwright_api.expect(page.locator("#draft-model")).to_have_text("gpt-4o")
                # "Edit the draft" only fills the answer box: nothing is signed or posted.
                await page.click("#edit-draft")
                await playwright_api.expect(page.locator("#answer")).to_have_value(DRAFT)
                await playwright_api.expect(page.locator("#signed")).to_have_value("")
                await page.click("#sign-draft")
                await page.locator("#status", has_text="Posted").wait_for()
            completion = await asyncio.wait_for(pending, 10)
        finally:
            await stop_stack(stack)
    assert completion.choices[0].message.content == DRAFT


async def test_editor_answers_the_second_step_of_an_agent_run_from_the_page(
    desk_stack: Stack, tmp_path: Path
) -> None:
    """Alice signs step 2 of a run on the page: it is signed for ``#1/2`` and reaches the agent."""
    client = desk_stack.openai()
    question = [{"role": "user", "content": "What is 2+2?"}]
    first = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=question))
    await desk_stack.wait_for_issue(1)
    await desk_stack.answer(1, "4")
    delivered = (await asyncio.wait_for(first, 10)).choices[0].message.content
    follow_up = [
        *question,
        {"role": "assistant", "content": delivered},
        {"role": "user", "content": "And times 3?"},
    ]
    second = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=follow_up))
    await wait_for_step(desk_stack, 2)
    answer = "12, signed for step 2 in the browser."
    async with desk_page(desk_stack, "alice", tmp_path) as page:
        await open_ticket(page)
        await playwright_api.expect(page.locator("#ticket-link")).to_have_text(f"{REPO}#1/2")
        await page.fill("#answer", answer)
        await sign_and_post(page, "#sign")
    reply = await asyncio.wait_for(second, 10)
    assert reply.choices[0].message.content == answer
    posted = [c.body for c in await desk_stack.comments(1) if c.user.login == "alice"][-1]
    assert answer in posted
    assert signed_claims(posted)["aud"] == f"{REPO}#1/2"


async def test_desk_token_in_the_fragment_never_reaches_the_server(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Opened as /desk/#token=T, the page lists tickets and no request carries T in its URL."""
    token = "desk-token-in-the-fragment-0123456789"
    stack = await start_desk_stack(github_sandbox, sandbox_config, tmp_path, desk_token=token)
    caplog.set_level(logging.INFO, logger="aiohttp.access")
    sent: list[str] = []
    pending = asyncio.create_task(
        stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    try:
        await stack.wait_for_issue(1)
        async with playwright_api.async_playwright() as driver:
            browser = await driver.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
            )
            try:
                page = await browser.new_page()
                page.on("request", lambda r: sent.append(r.url))
                await page.goto(desk_url(stack) + f"#token={token}")
                await page.locator("li[data-number='1']").wait_for()
                shown = page.url
            finally:
                await browser.close()
    finally:
        pending.cancel()
        await asyncio.gather(pending, return_exceptions=True)
        await stop_stack(stack)
    assert token not in shown
    assert sent
    assert not [url for url in sent if token in url]
    assert not [r for r in caplog.records if token in r.getMessage()]


# A prompt that runs script wherever a page passes raw HTML through: it names the page.
ONERROR_PROMPT = [
    {"role": "user", "content": "Fix it <img src=x onerror=\"document.title='pwned'\"> now."}
]


async def test_img_onerror_in_prompt_runs_no_script_on_the_issue_page_or_the_desk(
    desk_stack: Stack,
) -> None:
    """The prompt's ``<img onerror>`` is inert text on both pages; the ticket's table renders.

    The ticket fences the prompt, so a comment pasting it raw, with a table, is posted too:
    the sanitiser alone stands between that comment and the issue page.
    """
    pending = asyncio.create_task(
        desk_stack.openai().chat.completions.create(model="gpt-4o", messages=ONERROR_PROMPT)
    )
    await desk_stack.wait_for_issue(1)
    pasted = f"{ONERROR_PROMPT[0]['content']}\n\n| a |\n|---|\n| b |\n"
    await desk_stack.comment(1, pasted, author="alice")
    dialogs: list[str] = []
    async with playwright_api.async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        try:
            page = await browser.new_page()
            page.on("dialog", lambda dialog: dialogs.append(dialog.message))
            seen = []
            for url, opened in (
                (f"{desk_stack.sandbox.web_url}/{REPO}/issues/1", ".markdown-body table"),
                (desk_url(desk_stack), None),
            ):
                await page.goto(url)
                if opened is None:
                    await page.click("li[data-number='1']")
                    await page.click("#ticket-full summary")
                    await page.locator("#ticket-body table").wait_for()
                body = "#ticket-body" if opened is None else ".markdown-body"
                seen.append(
                    await page.evaluate(
                        """(body) => ({
                          title: document.title,
                          tables: document.querySelectorAll(body + " table").length,
                          bodies: document.querySelectorAll(body).length,
                          images: document.querySelectorAll(body + " img").length,
                          handlers: [...document.querySelectorAll(body + " *")].filter(
                            (e) => [...e.attributes].some((a) => a.name.startsWith("on"))
                          ).length,
                          shown: [...document.querySelectorAll(body)].every(
                            (b) => b.textContent.includes("onerror=")
                          ),
                        })""",
                        body,
                    )
                )
        finally:
            await browser.close()
    pending.cancel()
    issue_page, desk = seen
    assert (issue_page["bodies"], desk["bodies"]) == (2, 1)  # the issue and the comment
    assert issue_page["tables"] >= 2
    for page_seen in seen:
        assert page_seen["title"] != "pwned"
        assert page_seen["tables"] >= 1
        assert page_seen["images"] == 0
        assert page_seen["handlers"] == 0
        assert page_seen["shown"] is True
    assert dialogs == []
