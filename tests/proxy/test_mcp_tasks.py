"""MCP tasks over /mcp: a tool call returned at once, polled, cancelled, across a restart."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from embedded_github import RunningSandbox, SandboxConfig
from proxy.mcp.tasks import PAGE_SIZE
from tests.helpers.stack import CLIENT_KEY, Stack, start_stack, stop_stack

OTHER_KEY = "other-client-key-9876543210"


@pytest.fixture
async def two_key_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a stack that takes two client keys."""
    running = await start_stack(
        github_sandbox, sandbox_config, tmp_path, api_keys=(CLIENT_KEY, OTHER_KEY)
    )
    try:
        yield running
    finally:
        await stop_stack(running)


async def _call(
    stack: Stack, method: str, params: dict[str, Any], *, key: str = CLIENT_KEY
) -> dict[str, Any]:
    """Send one JSON-RPC request to /mcp as a plain HTTP client; return the response."""
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"}
    url = stack.base_url.removesuffix("/v1") + "/mcp"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json=body, headers=headers) as response,
    ):
        assert response.status == 200, await response.text()
        found: dict[str, Any] = await response.json()
        return found


async def _start(stack: Stack, question: str = "Deploy now?", **extra: Any) -> str:
    params = {"name": "ask_team", "arguments": {"question": question}, "task": {"ttl": 60000}}
    created = await _call(stack, "tools/call", {**params, **extra})
    task = created["result"]["task"]
    assert task["status"] == "working"
    return str(task["taskId"])


async def test_a_task_augmented_call_returns_at_once_and_its_result_waits(stack: Stack) -> None:
    """The call returns a working task; tasks/result gives the signed answer once posted."""
    task_id = await _start(stack)
    await stack.wait_for_issue(1)
    status = await _call(stack, "tasks/get", {"taskId": task_id})
    assert status["result"]["status"] == "working"
    waiting = asyncio.create_task(_call(stack, "tasks/result", {"taskId": task_id}))
    await asyncio.sleep(0.3)
    assert not waiting.done()
    await stack.answer(1, "Yes, go.")
    result = (await waiting)["result"]
    assert result["structuredContent"]["answer"] == "Yes, go."
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    listed = await _call(stack, "tasks/list", {})
    assert [(t["taskId"], t["status"]) for t in listed["result"]["tasks"]] == [
        (task_id, "completed")
    ]


async def test_tasks_result_for_another_clients_task_is_not_found(two_key_stack: Stack) -> None:
    """Another client key cannot read, wait on or cancel a task: it is not found."""
    task_id = await _start(two_key_stack)
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        refused = await _call(two_key_stack, method, {"taskId": task_id}, key=OTHER_KEY)
        assert refused["error"]["code"] == -32602
        assert "not found" in refused["error"]["message"]
    listed = await _call(two_key_stack, "tasks/list", {}, key=OTHER_KEY)
    assert listed["result"]["tasks"] == []


async def test_cancel_closes_the_ticket_and_leaves_no_result(stack: Stack) -> None:
    """tasks/cancel closes the ticket's issue; the task is cancelled and has no result."""
    task_id = await _start(stack)
    await stack.wait_for_issue(1)
    cancelled = await _call(stack, "tasks/cancel", {"taskId": task_id})
    assert cancelled["result"]["status"] == "cancelled"
    await stack.settle()
    (issue,) = await stack.issues()
    assert issue.state == "closed"
    result = await _call(stack, "tasks/result", {"taskId": task_id})
    assert result["error"]["code"] == -32602


async def test_cancel_after_the_answer_was_delivered_is_refused(stack: Stack) -> None:
    """A task whose answer was delivered cannot be cancelled: it is already completed."""
    task_id = await _start(stack)
    await stack.wait_for_issue(1)
    await stack.answer(1, "Done.")
    await _call(stack, "tasks/result", {"taskId": task_id})
    refused = await _call(stack, "tasks/cancel", {"taskId": task_id})
    assert refused["error"]["code"] == -32602
    assert "already completed" in refused["error"]["message"]


async def test_a_task_survives_a_restart_and_its_result_comes_after_reconnecting(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """A task created before a restart is found after it, and tasks/result gives the answer."""
    first = await start_stack(github_sandbox, sandbox_config, tmp_path)
    try:
        task_id = await _start(first)
        await first.wait_for_issue(1)
    finally:
        await stop_stack(first)
    second = await start_stack(github_sandbox, sandbox_config, tmp_path, keys=first.keys)
    try:
        status = await _call(second, "tasks/get", {"taskId": task_id})
        assert status["result"]["status"] == "working"
        await second.answer(1, "Answered after the restart.")
        result = await _call(second, "tasks/result", {"taskId": task_id})
        assert result["result"]["structuredContent"]["answer"] == "Answered after the restart."
    finally:
        await stop_stack(second)


async def test_a_task_call_with_refused_arguments_is_an_invalid_params_error(stack: Stack) -> None:
    """A task-augmented call whose arguments the schema refuses creates no task and no ticket."""
    params = {"name": "ask_team", "arguments": {"question": ""}, "task": {}}
    refused = await _call(stack, "tools/call", params)
    assert refused["error"]["code"] == -32602
    assert await stack.issues() == []


async def test_a_task_call_with_a_negative_ttl_opens_no_ticket(stack: Stack) -> None:
    """A task-augmented call whose ttl is not a positive number is refused before any ticket."""
    params = {"name": "ask_team", "arguments": {"question": "Q?"}, "task": {"ttl": -5}}
    refused = await _call(stack, "tools/call", params)
    assert refused["error"]["code"] == -32602
    assert "ttl" in refused["error"]["message"]
    assert await stack.issues() == []


async def test_tasks_list_pages_with_an_opaque_cursor(stack: Stack) -> None:
    """More tasks than a page: nextCursor leads to the rest, each task listed once."""
    started = [await _start(stack) for _ in range(PAGE_SIZE + 1)]
    first = (await _call(stack, "tasks/list", {}))["result"]
    assert len(first["tasks"]) == PAGE_SIZE
    cursor = first["nextCursor"]
    assert isinstance(cursor, str)
    rest = (await _call(stack, "tasks/list", {"cursor": cursor}))["result"]
    assert "nextCursor" not in rest
    listed = [t["taskId"] for t in first["tasks"] + rest["tasks"]]
    assert sorted(listed) == sorted(started)


async def test_forged_tasks_list_cursor_is_invalid_params(stack: Stack) -> None:
    """A cursor this server never gave is JSON-RPC's invalid params, not an empty page."""
    for forged in ("not a cursor", "W10", 42):
        refused = await _call(stack, "tasks/list", {"cursor": forged})
        assert refused["error"]["code"] == -32602
        assert "cursor" in refused["error"]["message"]
