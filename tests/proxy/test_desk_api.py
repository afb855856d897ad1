"""The desk API ``/desk/api/v1``: list, detail, signed comments posted as the editor, events.

Every response read here is checked against the API's OpenAPI description.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import aiohttp
from openapi_spec_validator import validate

from auth.roles import Act
from embedded_github import RunningSandbox, SandboxConfig
from proxy.desk_api.routes import openapi_description
from tests.helpers.desk_api import DeskApi, EventStream
from tests.helpers.desk_page import PROMPT, desk_url, start_desk_stack
from tests.helpers.review_flow import DANGEROUS, SHELL, ask
from tests.helpers.stack import REPO, Stack, stop_stack


def test_openapi_description_is_valid_openapi_3_1() -> None:
    """The packaged description passes openapi-spec-validator as OpenAPI 3.1."""
    description = openapi_description()
    assert description["openapi"].startswith("3.1")
    validate(description)


async def test_description_is_served_to_anyone(guarded_stack: Stack) -> None:
    """``openapi.json`` holds no ticket data: it is served without the desk token."""
    status, served = await DeskApi(guarded_stack).get("openapi.json")
    assert status == 200
    assert served == openapi_description()


async def test_pending_ticket_is_listed_with_age_deadline_run_and_step(desk_stack: Stack) -> None:
    """A waiting request is listed with its reference, title, age and deadline; no run."""
    pending = asyncio.create_task(
        desk_stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    await desk_stack.wait_for_issue(1)
    status, data = await DeskApi(desk_stack).get("tickets")
    pending.cancel()
    assert status == 200
    [entry] = data["tickets"]
    assert entry["number"] == 1
    assert entry["reference"] == f"{REPO}#1"
    assert entry["state"] == "open"
    assert entry["needs_review"] is False
    assert 0 <= entry["age"] < 60
    assert entry["deadline"] is not None
    assert entry["run"] is None
    assert entry["step"] is None
    assert entry["title"]


async def test_ticket_detail_gives_the_newest_message_apart_and_the_tools(
    desk_stack: Stack,
) -> None:
    """The detail splits the newest message from the conversation, with the tools' schemas."""
    messages = [
        {"role": "system", "content": "You are a **careful** agent."},
        *PROMPT,
    ]
    pending = asyncio.create_task(
        desk_stack.openai().chat.completions.create(model="gpt-4o", messages=messages, tools=SHELL)
    )
    await desk_stack.wait_for_issue(1)
    status, detail = await DeskApi(desk_stack).get("tickets/1")
    pending.cancel()
    assert status == 200
    assert "Write the word hello" in detail["newest_message"]["content"]
    assert [m["role"] for m in detail["conversation"]] == ["system"]
    assert "<strong>careful</strong>" in detail["conversation"][0]["content_html"]
    [tool] = detail["tools"]
    assert tool["name"] == "execute_shell"
    assert tool["parameters"]["required"] == ["command"]
    assert "execute_shell" in detail["answer_template"]
    assert detail["signing"] == {"ticket": f"{REPO}#1", "acts": ["answer"], "answer_sha256": None}
    assert detail["review"] is None
    assert detail["read_only"] is False


async def test_held_answer_shows_the_rule_that_matched_and_the_commands(
    desk_stack: Stack,
) -> None:
    """A held answer's detail names the policy rule, the exact commands and what to sign."""
    pending = await ask(desk_stack)
    await desk_stack.answer(1, DANGEROUS, signer="alice")
    await desk_stack.settle()
    api = DeskApi(desk_stack)
    status, detail = await api.get("tickets/1")
    assert status == 200
    review = detail["review"]
    assert review["signer"] == "alice"
    assert any("rm -rf build" in command for command in review["commands"])
    assert review["findings"]
    assert all(finding["rule"] for finding in review["findings"])
    assert detail["signing"]["acts"] == ["approve", "reject"]
    assert detail["signing"]["answer_sha256"] == review["answer_sha256"]
    _, held = await api.get("tickets?needs_review=true")
    assert [t["number"] for t in held["tickets"]] == [1]
    _, for_alice = await api.get("tickets?mine=alice")
    assert for_alice["tickets"] == []  # an editor only, and she signed it
    _, for_bob = await api.get("tickets?mine=bob")
    assert [t["number"] for t in for_bob["tickets"]] == [1]
    pending.cancel()


async def test_unreadable_filter_is_a_clear_400(desk_stack: Stack) -> None:
    """A state the list does not know is refused with the states it does."""
    status, data = await DeskApi(desk_stack).get("tickets?state=lost")
    assert status == 400
    assert "needs-review" in data["error"]


async def test_signed_answer_posted_through_the_api_is_delivered(desk_stack: Stack) -> None:
    """A comment signed client-side and posted with the editor's token answers the agent."""
    client = desk_stack.openai()
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await desk_stack.wait_for_issue(1)
    signed = desk_stack.signed("hello.txt is written.", number=1, signer="alice")
    async with EventStream(desk_stack) as events:
        status, posted = await DeskApi(desk_stack).post_comment(
            1, signed, github_token=desk_stack.token("alice")
        )
        assert status == 201
        assert posted["comment"]["author"] == "alice"
        assert posted["act"] == "answer"
        completion = await asyncio.wait_for(pending, 10)
        assert completion.choices[0].message.content == "hello.txt is written."
        await events.until({"ticket.delivered"})
    [comment] = [c for c in await desk_stack.comments(1) if c.id == posted["comment"]["id"]]
    assert comment.user.login == "alice"


async def test_reviewer_approval_posted_through_the_api_releases_the_answer(
    desk_stack: Stack,
) -> None:
    """A reviewer's approval, signed over the held answer's digest, releases it."""
    pending = await ask(desk_stack)
    await desk_stack.answer(1, DANGEROUS, signer="alice")
    await desk_stack.settle()
    approval = desk_stack.signed(
        "Looks fine.", number=1, signer="bob", act=Act.APPROVE, judged=DANGEROUS
    )
    status, posted = await DeskApi(desk_stack).post_comment(
        1, approval, github_token=desk_stack.token("bob")
    )
    assert status == 201
    assert posted["act"] == "approve"
    completion = await asyncio.wait_for(pending, 10)
    [call] = completion.choices[0].message.tool_calls or []
    assert call.function.name == "execute_shell"


async def test_events_tell_a_ticket_opened_then_held_for_review(desk_stack: Stack) -> None:
    """The stream tells ``ticket.opened`` and ``ticket.held_for_review`` as they happen."""
    async with EventStream(desk_stack) as events:
        pending = await ask(desk_stack)
        await events.until({"ticket.opened"})
        await desk_stack.answer(1, DANGEROUS, signer="bob")
        await desk_stack.settle()
        await events.until({"ticket.held_for_review"})
        opened = next(data for name, data in events.seen if name == "ticket.opened")
        assert opened == {"number": 1, "reference": f"{REPO}#1", "state": "open", "step": 1}
    pending.cancel()


async def test_events_need_the_desk_token(guarded_stack: Stack) -> None:
    """The event stream is the desk's: without its token it is refused."""
    status, data = await DeskApi(guarded_stack).get("events")
    assert status == 403
    assert "TICKETPROXY_DESK_TOKEN" in data["error"]


async def test_page_talks_only_to_its_own_server_through_the_versioned_api(
    desk_stack: Stack,
) -> None:
    """The page's script uses ``/desk/api/v1`` only, and its CSP lets it reach no GitHub."""
    async with aiohttp.ClientSession() as session:
        async with session.get(desk_url(desk_stack)) as response:
            policy = response.headers["Content-Security-Policy"]
        async with session.get(desk_url(desk_stack, "desk.js")) as response:
            script = await response.text()
    assert "connect-src 'self';" in policy
    assert "/desk/api/v1/" in script
    assert re.search(r"/desk/api/(?!v1/)", script) is None
    assert "/repos/" not in script


async def test_events_tell_a_ticket_nobody_answered_expired(short_stack: Stack) -> None:
    """A ticket past its deadline is told as ``ticket.expired``, so views drop it."""
    async with EventStream(short_stack) as events:
        pending = asyncio.create_task(
            short_stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
        )
        await events.until({"ticket.opened", "ticket.expired"})
        await asyncio.wait_for(pending, 10)


async def test_open_event_stream_does_not_hold_up_shutdown(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """Stopping the server ends an open event stream at once instead of waiting for it."""
    stack = await start_desk_stack(github_sandbox, sandbox_config, tmp_path)
    async with EventStream(stack):
        started = asyncio.get_running_loop().time()
        await stop_stack(stack)
        assert asyncio.get_running_loop().time() - started < 2.0


async def test_secret_in_the_prompt_never_reaches_a_desk_api_client(desk_stack: Stack) -> None:
    """A key the agent pasted is redacted in the list, the parts and the body alike."""
    secret = "ghp_" + "a1B2c3D4e5" * 4
    prompt = [{"role": "user", "content": f"Use the token {secret} to open a PR."}]
    pending = asyncio.create_task(
        desk_stack.openai().chat.completions.create(model="gpt-4o", messages=prompt)
    )
    await desk_stack.wait_for_issue(1)
    api = DeskApi(desk_stack)
    _, listed = await api.get("tickets")
    _, detail = await api.get("tickets/1")
    pending.cancel()
    assert secret not in json.dumps(listed)
    assert secret not in json.dumps(detail)
    assert "open a PR" in detail["newest_message"]["content"]
