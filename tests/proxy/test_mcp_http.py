"""MCP over streamable HTTP at /mcp, with the official Python SDK client as a process."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from auth.roles import Act
from tests.helpers.mcp_runs import (
    answer_when_open,
    approving_call,
    held_for_review,
    judge,
    mcp_url,
    run_sdk_client,
)
from tests.helpers.stack import CLIENT_KEY, Stack

pytestmark = pytest.mark.slow
# The bot's reply to a signed answer the agent cannot use, saying why.
_REFUSED = "<!-- ticketproxy:reply unreleasable -->"


async def test_python_sdk_asks_the_team_and_gets_the_signed_answer(stack: Stack) -> None:
    """ask_team over streamable HTTP returns the signed text, its signer, URL and digest."""
    editor = asyncio.create_task(answer_when_open(stack, "Yes, ship it on Monday.", after=1))
    report = await run_sdk_client(stack, [["ask_team", {"question": "Can we ship?"}]])
    await editor
    assert report["tools"] == {
        "ask_team": "Ask the team",
        "request_approval": "Request the team's approval",
    }
    (result,) = report["calls"]
    assert result["isError"] is False
    assert result["structuredContent"]["answer"] == "Yes, ship it on Monday."
    assert result["structuredContent"]["signer"] == "alice"
    assert result["structuredContent"]["digest"].startswith("sha256:")
    assert "Yes, ship it on Monday." in result["content"][0]["text"]
    assert result["_meta"]["ticketproxy"]["ticket_url"].endswith("/issues/1")
    assert result["progress"] > 0
    (issue,) = await stack.issues()
    assert "Can we ship?" in issue.body


async def test_answer_schema_gives_the_answer_object_as_structured_content(stack: Stack) -> None:
    """With answer_schema, structuredContent is the signed answer object itself."""
    schema = {
        "type": "object",
        "properties": {"ship": {"type": "boolean"}},
        "required": ["ship"],
    }
    editor = asyncio.create_task(answer_when_open(stack, '{"ship": true}'))
    report = await run_sdk_client(
        stack, [["ask_team", {"question": "Ship?", "answer_schema": schema}]]
    )
    await editor
    assert report["calls"][0]["structuredContent"] == {"ship": True}


async def test_answer_failing_the_answer_schema_is_held_and_the_editor_told(stack: Stack) -> None:
    """An answer that fails answer_schema is not released; the editor is told why."""
    schema = {"type": "object", "properties": {"ship": {"type": "boolean"}}, "required": ["ship"]}

    async def editor() -> None:
        await stack.wait_for_issue(1)
        await stack.answer(1, '{"ship": "maybe"}')
        for _ in range(100):
            await stack.settle()
            if any(_REFUSED in reply for reply in await stack.bot_replies(1)):
                break
        else:
            raise AssertionError("the editor was never told why the answer was refused")
        await stack.answer(1, '{"ship": false}')

    task = asyncio.create_task(editor())
    report = await run_sdk_client(
        stack, [["ask_team", {"question": "Ship?", "answer_schema": schema}]]
    )
    await task
    assert report["calls"][0]["structuredContent"] == {"ship": False}
    replies = await stack.bot_replies(1)
    assert any(_REFUSED in reply and "boolean" in reply for reply in replies)


async def test_unknown_tool_is_a_json_rpc_error(stack: Stack) -> None:
    """Calling a tool the server does not offer is JSON-RPC's invalid params."""
    report = await run_sdk_client(stack, [["delete_repository", {}]])
    assert report["calls"][0]["error"]["code"] == -32602
    assert "Unknown tool" in report["calls"][0]["error"]["message"]
    assert await stack.issues() == []


async def test_arguments_not_matching_the_input_schema_are_a_tool_error(stack: Stack) -> None:
    """Arguments the input schema refuses are a tool error naming them; no ticket opens."""
    report = await run_sdk_client(stack, [["ask_team", {"question": 42}]])
    result = report["calls"][0]
    assert result["isError"] is True
    assert "question" in result["content"][0]["text"]
    assert await stack.issues() == []


async def test_answer_schema_that_is_not_a_json_schema_is_a_tool_error(stack: Stack) -> None:
    """An answer_schema that is not a valid JSON Schema is refused before any ticket."""
    bad = {"type": "object", "properties": {"ship": {"type": "yes-or-no"}}}
    report = await run_sdk_client(
        stack, [["ask_team", {"question": "Ship?", "answer_schema": bad}]]
    )
    result = report["calls"][0]
    assert result["isError"] is True
    assert "not a valid JSON Schema" in result["content"][0]["text"]
    assert await stack.issues() == []


async def _post(stack: Stack, headers: dict[str, str]) -> tuple[int, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(mcp_url(stack), json=body, headers=headers) as response,
    ):
        return response.status, await response.json(content_type=None)


async def test_no_client_key_is_refused_with_401(stack: Stack) -> None:
    """A message without a bearer client key is refused 401, as a JSON-RPC error."""
    status, body = await _post(stack, {})
    assert status == 401
    assert body["error"]["code"] == -32600


async def test_missing_or_wrong_key_401_names_the_bearer_scheme(stack: Stack) -> None:
    """A 401 of /mcp carries WWW-Authenticate: Bearer (RFC 6750), invalid_token if one was sent."""
    for headers, challenge in (
        ({}, 'Bearer realm="ticketproxy"'),
        ({"Authorization": "Bearer wrong"}, 'Bearer realm="ticketproxy", error="invalid_token"'),
    ):
        async with (
            aiohttp.ClientSession() as session,
            session.post(mcp_url(stack), json={}, headers=headers) as response,
        ):
            assert response.status == 401
            assert response.headers["WWW-Authenticate"] == challenge


async def test_hostile_origin_is_refused(stack: Stack) -> None:
    """A page of another origin (DNS rebinding, cross-site) is refused 403 before the key."""
    status, body = await _post(
        stack, {"Authorization": f"Bearer {CLIENT_KEY}", "Origin": "https://evil.example"}
    )
    assert status == 403
    assert "origin" in body["error"]["message"]


async def test_repeated_identical_call_re_attaches_to_the_open_ticket(stack: Stack) -> None:
    """The same call from the same key, repeated while it waits, opens no second ticket."""
    first = asyncio.create_task(run_sdk_client(stack, [["ask_team", {"question": "Same?"}]]))
    await stack.wait_for_issue(1)
    second = asyncio.create_task(run_sdk_client(stack, [["ask_team", {"question": "Same?"}]]))
    await asyncio.sleep(1.0)
    await stack.answer(1, "One ticket.")
    reports = await asyncio.gather(first, second)
    assert [r["calls"][0]["structuredContent"]["answer"] for r in reports] == ["One ticket."] * 2
    assert len(await stack.issues()) == 1


async def test_request_approval_is_approved_only_after_a_reviewers_signed_approval(
    stack: Stack,
) -> None:
    """The editor's approving call is held until a reviewer signs; then approved names them."""
    arguments = {"action": "Deploy", "command": "make deploy"}
    call = approving_call(arguments)

    async def team() -> None:
        await stack.wait_for_issue(1)
        await stack.answer(1, call, signer="alice")
        await held_for_review(stack)
        await asyncio.sleep(0.5)
        assert not approval.done()
        await judge(stack, call, reviewer="bob", act=Act.APPROVE, note="Looks fine.")

    approval = asyncio.create_task(run_sdk_client(stack, [["request_approval", arguments]]))
    await team()
    report = await approval
    result = report["calls"][0]["structuredContent"]
    assert result["approved"] is True
    assert result["reviewers"] == ["bob"]
    assert result["ticket_url"].endswith("/issues/1")


async def test_request_approval_refused_in_text_is_approved_false_with_the_reason(
    stack: Stack,
) -> None:
    """A plain-text signed answer refuses: approved false with its reason, not a tool error."""
    editor = asyncio.create_task(answer_when_open(stack, "No deploys on Friday."))
    report = await run_sdk_client(stack, [["request_approval", {"action": "Deploy to production"}]])
    await editor
    result = report["calls"][0]
    assert result["isError"] is False
    assert result["structuredContent"]["approved"] is False
    assert result["structuredContent"]["reason"] == "No deploys on Friday."
