"""The official a2a-sdk client, as a real process, against ticketproxy's A2A 1.0 front."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.agent_protocol import scripted_editor, wait_for_running_step
from tests.helpers.stack import CLIENT_KEY, Stack, start_stack, stop_stack
from ticketing.store.task_records import Page

CLIENT = Path(__file__).resolve().parents[1] / "helpers" / "a2a_client.py"
HAIKU = "Waves fold into foam\nsalt wind writes on the harbour\nnight takes the last boat"

pytestmark = pytest.mark.slow


@pytest.fixture
async def a2a_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a stack whose blocking sends wait up to five seconds."""
    running = await start_stack(github_sandbox, sandbox_config, tmp_path, step_wait=5.0)
    try:
        yield running
    finally:
        await stop_stack(running)


async def _start(stack: Stack, scenario: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(CLIENT),
        stack.base_url.removesuffix("/v1"),
        CLIENT_KEY,
        scenario,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _run(
    stack: Stack, scenario: str, answers: list[tuple[str, bool]] | None = None
) -> dict[str, Any]:
    """Run the client through ``scenario`` while the editor answers; return its report."""
    process = await _start(stack, scenario)
    editor = asyncio.create_task(scripted_editor(stack, list(answers or [])))
    try:
        out, err = await asyncio.wait_for(process.communicate(), 90)
    finally:
        editor.cancel()
    assert process.returncode == 0, err.decode()
    report: dict[str, Any] = json.loads(out.decode().splitlines()[-1])
    return report


def _issues_of(stack: Stack, task_id: str) -> set[int | None]:
    steps, _ = stack.desk.store.list_steps(task_id, Page(1, 100))
    tickets = [stack.desk.store.get_ticket(step.ticket_id or 0) for step in steps]
    return {ticket.issue_number for ticket in tickets if ticket is not None}


async def test_a2a_sdk_resolves_the_public_agent_card(a2a_stack: Stack) -> None:
    """The card, read without a key, offers JSON-RPC 1.0, streaming and the bearer key."""
    report = await _run(a2a_stack, "card")
    card = report["card"]
    assert card["supportedInterfaces"] == [
        {
            "url": a2a_stack.base_url.removesuffix("/v1") + "/a2a",
            "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0",
        }
    ]
    assert card["capabilities"]["streaming"] is True
    assert [skill["name"] for skill in card["skills"]] == ["Ask the team"]
    assert card["securitySchemes"]["clientKey"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    assert card["securityRequirements"] == [{"schemes": {"clientKey": {}}}]


async def test_a2a_sdk_blocking_send_returns_the_completed_task_with_its_answer_and_file(
    a2a_stack: Stack,
) -> None:
    """A blocking send waits for the signed answer: completed, text and file as artifacts."""
    answer = f"Here it is.\n\n```artifact path=out/haiku.txt\n{HAIKU}\n```"
    report = await _run(a2a_stack, "blocking", [(answer, False)])
    task = report["task"]
    assert task["state"] == "TASK_STATE_COMPLETED"
    artifacts = {artifact["name"]: artifact for artifact in task["artifacts"]}
    assert artifacts["answer"]["texts"] == ["Here it is."]
    assert artifacts["out/haiku.txt"]["raw"] == [HAIKU + "\n"]
    assert task["history"][0] == ["ROLE_USER", "Write a haiku about the sea."]
    assert report["schemes"] == ["clientKey"]


async def test_a2a_sdk_non_blocking_send_returns_working_then_polls_to_completed(
    a2a_stack: Stack,
) -> None:
    """``returnImmediately`` answers at once, working; GetTask later shows it completed."""
    report = await _run(a2a_stack, "non-blocking", [("Foam, wind, boat.", False)])
    assert report["first"]["state"] == "TASK_STATE_WORKING"
    assert report["task"]["state"] == "TASK_STATE_COMPLETED"
    assert report["listed"] == [report["task"]["id"]]


async def test_a2a_sdk_streamed_send_ends_completed(a2a_stack: Stack) -> None:
    """A streamed send begins with the task, then updates, and its last status is completed."""
    report = await _run(a2a_stack, "streamed", [("Foam, wind, boat.", False)])
    assert report["events"][0] == "task"
    assert report["events"][-1] == "status_update"
    assert "artifact_update" in report["events"]
    assert report["task"]["state"] == "TASK_STATE_COMPLETED"
    assert [a["texts"] for a in report["task"]["artifacts"]] == [["Foam, wind, boat."]]


async def test_a2a_sdk_input_required_turn_is_answered_on_the_same_task_and_issue(
    a2a_stack: Stack,
) -> None:
    """An answer signed ``--ask`` asks for input; the follow-up is the same issue's next step."""
    report = await _run(
        a2a_stack,
        "input-required",
        [("Which sea: the North Sea or the Adriatic?", True), ("Grey waves, cold salt.", False)],
    )
    first, task = report["first"], report["task"]
    assert first["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert first["status_text"] == "Which sea: the North Sea or the Adriatic?"
    assert task["id"] == first["id"]
    assert task["state"] == "TASK_STATE_COMPLETED"
    assert [role for role, _ in task["history"]] == [
        "ROLE_USER",
        "ROLE_AGENT",
        "ROLE_USER",
        "ROLE_AGENT",
    ]
    issues = _issues_of(a2a_stack, task["id"])
    assert len(issues) == 1
    assert None not in issues


async def test_a2a_sdk_cancel_closes_the_tasks_ticket(a2a_stack: Stack) -> None:
    """CancelTask on a working task: canceled, its ticket expired and its issue closed."""
    process = await _start(a2a_stack, "cancel")
    assert process.stdout is not None
    assert process.stdin is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    task_id = json.loads(line)["task_id"]
    steps, _ = a2a_stack.desk.store.list_steps(task_id, Page(1, 10))
    ticket = await wait_for_running_step(a2a_stack, task_id, steps[0].step_id)
    process.stdin.write(b"go\n")
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    report = json.loads(out.decode().splitlines()[-1])
    assert report["first"]["state"] == "TASK_STATE_WORKING"
    assert report["task"]["state"] == "TASK_STATE_CANCELED"
    after = a2a_stack.desk.store.get_ticket(ticket.id)
    assert after is not None
    assert after.state.value == "expired"
    await a2a_stack.desk.followups.drain()
    issue = await a2a_stack.wait_for_issue(ticket.issue_number)
    assert issue.state == "closed"
