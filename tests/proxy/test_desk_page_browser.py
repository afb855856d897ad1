"""The answer page made good, in real headless Chromium: rendered messages, the tool form,
one-click sign-and-post, live updates without a reload, and a reviewer's one-click approval.

Set ``TICKETPROXY_SCREENSHOT=1`` to refresh the README's ``docs/desk-page.png``.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from aiohttp import web

from auth.jwk import ES256
from auth.keyring import add_key_to_keyring
from auth.keys import generate_signing_key, public_jwk
from auth.roles import Role
from tests.helpers.desk_browser import (
    browser_page,
    desk_page,
    open_ticket,
    require_chromium,
)
from tests.helpers.desk_page import desk_url
from tests.helpers.review_flow import DANGEROUS, SHELL
from tests.helpers.stack import REPO, Stack
from ticketing.render.schema_skeleton import schema_skeleton
from ticketing.render.templates import answer_template
from ticketing.request import ChatRequest, Message, ResponseFormat, ToolSpec
from ticketing.store.model import TicketState

playwright_api = require_chromium()
expect = playwright_api.expect

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "desk-page.png"
NOTE_TOOL: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "save_note",
            "description": "Save a note in the team's notebook.",
            "parameters": {
                "type": "object",
                "properties": {
                    "title": {"type": "string", "description": "the note's title"},
                    "priority": {"type": "string", "enum": ["low", "high"]},
                    "copies": {"type": "integer", "minimum": 1},
                    "pinned": {"type": "boolean"},
                },
                "required": ["title", "priority"],
            },
        },
    }
]
NOTE_PROMPT = [
    {"role": "system", "content": "You keep the team's notebook."},
    {"role": "user", "content": "Hello."},
    {"role": "assistant", "content": "Hello! What shall I note?"},
    {
        "role": "user",
        "content": "Note **the release plan**:\n\n| day | task |\n|---|---|\n| Mon | freeze |\n",
    },
]


def ask_for_note(stack: Stack) -> asyncio.Task[Any]:
    """Ask, with the note tool offered, in the background."""
    return asyncio.create_task(
        stack.openai().chat.completions.create(
            model="gpt-4o", messages=NOTE_PROMPT, tools=NOTE_TOOL
        )
    )


async def test_tool_call_form_signed_and_posted_in_one_key_press_is_delivered_live(
    desk_stack: Stack, tmp_path: Path
) -> None:
    """A ticket appears on the open page, j opens it, the form fills, Ctrl+Enter signs and
    posts, and the page shows it delivered: no reload, and the agent gets the exact call."""
    async with desk_page(desk_stack, "alice", tmp_path, key_name="{login}.key") as page:
        await expect(page.locator("#live")).to_have_text("● live")
        pending = ask_for_note(desk_stack)
        # Live: the new ticket is listed without a reload or a click on refresh.
        await page.locator("li[data-number='1']").wait_for()
        await page.keyboard.press("Escape")  # out of the token field, then the next ticket
        await page.keyboard.press("j")
        await page.locator("#status", has_text=f"Opened {REPO}#1").wait_for()
        newest = page.locator("#newest")
        await expect(newest.locator("strong")).to_have_text("the release plan")
        await expect(newest.locator("table td").first).to_have_text("Mon")
        await expect(page.locator("#earlier")).not_to_have_attribute("open", "")
        await expect(page.locator("#earlier-count")).to_have_text("3 messages")
        await page.fill("[data-field='title']", "Release plan: freeze on Monday")
        await page.select_option("[data-field='priority']", label="high")
        await page.fill("[data-field='copies']", "2")
        await page.select_option("[data-field='pinned']", "false")
        if os.environ.get("TICKETPROXY_SCREENSHOT") == "1":
            await page.screenshot(path=str(SCREENSHOT))
        answer = await page.input_value("#answer")
        await page.focus("#answer")
        await page.keyboard.press("Control+Enter")
        await page.locator("#status", has_text="Posted").wait_for()
        completion = await asyncio.wait_for(pending, 10)
        await expect(page.locator("#ticket-state")).to_have_text("delivered")
        await expect(page.locator("li[data-number='1']")).to_contain_text("delivered")
    # In the order the desk API gives the schema's properties, as the template has them.
    arguments = {"copies": 2, "pinned": False, "priority": "high"}
    arguments["title"] = "Release plan: freeze on Monday"
    call = json.dumps({"name": "save_note", "arguments": arguments}, indent=2)
    assert answer == f"```tool_call\n{call}\n```"
    [made] = completion.choices[0].message.tool_calls
    assert made.function.name == "save_note"
    assert json.loads(made.function.arguments) == arguments


async def test_form_missing_a_required_argument_is_refused_before_signing(
    desk_stack: Stack, tmp_path: Path
) -> None:
    """An empty required field and a fraction for an integer stop the signing: nothing posted."""
    pending = ask_for_note(desk_stack)
    await desk_stack.wait_for_issue(1)
    try:
        async with desk_page(desk_stack, "alice", tmp_path) as page:
            await open_ticket(page)
            await page.select_option("[data-field='priority']", label="low")
            await page.fill("[data-field='copies']", "1.5")
            await page.click("#sign-post")
            status = page.locator("#status.error")
            await expect(status).to_contain_text("fix the form first")
            await expect(status).to_contain_text("title is required")
            await expect(status).to_contain_text("copies must be a whole number")
            await expect(page.locator("#signed")).to_have_value("")
            await expect(page.locator(".field-error").last).to_have_text(" is required")
            # Free text stays possible: the same ticket answered in words instead.
            await page.uncheck("#form-mode")
            await page.fill("#answer", "No note needed: the plan is already in the wiki.")
            await page.click("#sign-post")
            await page.locator("#status", has_text="Posted").wait_for()
        completion = await asyncio.wait_for(pending, 10)
    finally:
        pending.cancel()
    message = completion.choices[0].message
    assert message.tool_calls is None
    assert message.content == "No note needed: the plan is already in the wiki."
    bodies = [c.body for c in await desk_stack.comments(1) if c.user.login == "alice"]
    assert len(bodies) == 1


async def test_reviewer_sees_the_matched_rule_and_approves_in_one_click(
    desk_stack: Stack, tmp_path: Path
) -> None:
    """bob sees the rule that held the answer and its exact command; one click releases it."""
    pending = asyncio.create_task(
        desk_stack.openai().chat.completions.create(
            model="gpt-4o", messages=NOTE_PROMPT, tools=SHELL
        )
    )
    await desk_stack.wait_for_issue(1)
    async with desk_page(desk_stack, "bob", tmp_path) as page:
        await open_ticket(page)
        await expect(page.locator("#sign-post")).to_be_visible()
        await desk_stack.answer(1, DANGEROUS, signer="alice")
        # Live: the open ticket turns into a review without a reload.
        await expect(page.locator("#ticket-state")).to_have_text("needs review")
        await expect(page.locator("#cand-findings")).to_contain_text("shell and code execution")
        await expect(page.locator("#cand-commands")).to_contain_text("rm -rf build")
        await expect(page.locator("#sign-post")).to_be_hidden()
        await page.click("#approve")
        await page.locator("#status", has_text="Posted").wait_for()
        completion = await asyncio.wait_for(pending, 10)
        await expect(page.locator("#ticket-state")).to_have_text("delivered")
    [call] = completion.choices[0].message.tool_calls
    assert json.loads(call.function.arguments) == {"command": "rm -rf build"}
    ticket = desk_stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    assert ticket.state is TicketState.DELIVERED


async def test_script_handlers_javascript_links_and_remote_images_in_a_prompt_stay_inert(
    desk_stack: Stack,
) -> None:
    """Agent text with script, an onerror image, a javascript: link and a remote image is
    shown as inert text on the page: nothing runs and nothing is fetched."""
    fetched: list[str] = []

    async def pixel(request: web.Request) -> web.Response:
        fetched.append(request.path)
        return web.Response(body=b"GIF89a", content_type="image/gif")

    tracker = web.Application()
    tracker.router.add_get("/{name}", pixel)
    runner = web.AppRunner(tracker)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    hostile = (
        "**Fix it** <script>document.title='pwned'</script>"
        " <img src=x onerror=\"document.title='pwned'\">\n\n"
        "[click me](javascript:document.title='pwned') "
        '<a href="javascript:alert(1)">raw link</a>\n\n'
        f"![tracker](http://127.0.0.1:{port}/pixel.gif)\n\n"
        "```\ncode stays code\n```\n"
    )
    pending = asyncio.create_task(
        desk_stack.openai().chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": hostile}]
        )
    )
    await desk_stack.wait_for_issue(1)
    dialogs: list[str] = []
    try:
        async with browser_page() as page:
            page.on("dialog", lambda dialog: dialogs.append(dialog.message))
            await page.goto(desk_url(desk_stack))
            await page.click("li[data-number='1']")
            await page.locator("#newest strong", has_text="Fix it").wait_for()
            seen = await page.evaluate(
                """() => {
                  const body = document.querySelector("#newest");
                  return {
                    title: document.title,
                    scripts: body.querySelectorAll("script").length,
                    images: body.querySelectorAll("img").length,
                    handlers: [...body.querySelectorAll("*")].filter(
                      (e) => [...e.attributes].some((a) => a.name.startsWith("on"))).length,
                    hrefs: [...body.querySelectorAll("a")].map((a) => a.getAttribute("href")),
                    code: body.querySelector("pre code").textContent,
                    text: body.textContent,
                  };
                }"""
            )
            await page.locator("#newest", has_text="click me").click()
            title = await page.title()
    finally:
        pending.cancel()
        await asyncio.gather(pending, return_exceptions=True)
        await runner.cleanup()
    assert (seen["title"], title) == ("ticketproxy desk", "ticketproxy desk")
    assert (seen["scripts"], seen["images"], seen["handlers"]) == (0, 0, 0)
    assert not [href for href in seen["hrefs"] if href and "javascript" in href.lower()]
    assert seen["code"] == "code stays code\n"
    for shown in ("<script>", "onerror=", "javascript:", "image not loaded: tracker"):
        assert shown in seen["text"]
    assert fetched == []
    assert dialogs == []


async def test_p256_key_file_from_keygen_signs_an_answer_the_desk_accepts(
    desk_stack: Stack, tmp_path: Path
) -> None:
    """A P-256 (ES256) key file, as ``keygen --alg ES256`` writes, imports and signs."""
    key = generate_signing_key(login="alice", alg=ES256)
    alice = next(user for user in desk_stack.config.users if user.login == "alice")
    add_key_to_keyring(desk_stack.settings.keyring_path, key, roles=[Role.EDITOR], user_id=alice.id)
    desk_stack.keys["alice"] = key
    pending = asyncio.create_task(
        desk_stack.openai().chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Say yes."}]
        )
    )
    await desk_stack.wait_for_issue(1)
    async with desk_page(desk_stack, "alice", tmp_path, key_name="{login}.key") as page:
        await expect(page.locator("#key-info")).to_contain_text("ES256")
        await open_ticket(page)
        await page.fill("#answer", "Yes, signed with P-256.")
        await page.click("#sign-post")
        await page.locator("#status", has_text="Posted").wait_for()
    completion = await asyncio.wait_for(pending, 10)
    assert completion.choices[0].message.content == "Yes, signed with P-256."


async def test_public_key_file_is_refused_by_the_key_picker(
    desk_stack: Stack, tmp_path: Path
) -> None:
    """A public JWK (no ``d``) given as the key file is refused, and no key is kept."""
    public = tmp_path / "alice.pub.key"
    key = desk_stack.keys["alice"]
    public.write_text(json.dumps({**public_jwk(key), "login": "alice"}))
    async with browser_page() as page:
        await page.goto(desk_url(desk_stack))
        await page.set_input_files("#key-file", str(public))
        await expect(page.locator("#status.error")).to_contain_text("holds a public key")
        await expect(page.locator("#key-info")).to_have_text("No key imported.")


async def test_an_empty_list_reloaded_live_does_not_wipe_a_key_import_error(
    desk_stack: Stack, tmp_path: Path
) -> None:
    """A public key is refused, then the list reloads (as a live event makes it): the error
    stays, where "No ticket is waiting." replaced it before the editor could read it."""
    public = tmp_path / "alice.pub.key"
    public.write_text(json.dumps({**public_jwk(desk_stack.keys["alice"]), "login": "alice"}))
    async with browser_page() as page:
        await page.goto(desk_url(desk_stack))
        await expect(page.locator("#live")).to_have_text("● live")
        await expect(page.locator("#status")).to_have_text("No ticket is waiting.")
        await page.set_input_files("#key-file", str(public))
        await expect(page.locator("#status.error")).to_contain_text("holds a public key")
        await page.evaluate("loadTickets()")
        await expect(page.locator("#status.error")).to_contain_text("holds a public key")


async def test_form_writes_the_tool_call_block_byte_for_byte_as_the_answer_template(
    desk_stack: Stack,
) -> None:
    """Given the template's own arguments, the form's text is the answer template exactly,
    even with backticks and non-ASCII in the values and a content part before the block."""
    tool = ToolSpec(
        name="query",
        parameters={
            "type": "object",
            "properties": {
                "sql": {"type": "string", "enum": ["```sql```", "ü"]},
                "limit": {"type": "integer"},
                "place": {"type": "string", "const": "Zürich"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["sql"],
        },
    )
    schema = {"type": "object", "properties": {"why": {"type": "string"}}}
    requests = [
        ChatRequest(model="m", messages=(Message(role="user", content="hi"),), tools=(tool,)),
        ChatRequest(
            model="m",
            messages=(Message(role="user", content="hi"),),
            tools=(tool,),
            response_format=ResponseFormat(type="json_schema", name="why", schema=schema),
        ),
    ]
    async with browser_page() as page:
        await page.goto(desk_url(desk_stack))
        for request in requests:
            template = answer_template(request)
            assert template is not None
            made = await page.evaluate(
                """([template, name, args]) => {
                  const call = templateCall(template);
                  const text = [call.text, toolCallBlock(name, args)].filter(Boolean);
                  return { tool: call.tool, text: text.join("\\n\\n") };
                }""",
                [template, tool.name, schema_skeleton(tool.parameters)],
            )
            assert made == {"tool": "query", "text": template}
