"""An Agent Protocol client over aiohttp, and the editor that answers a task's steps.

The editor signs each step's answer for that step's ticket (``owner/repo#N`` for the first,
``owner/repo#N/S`` for later ones), with ``--ask`` when it asks a question back.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from auth.sign import sign_comment
from embedded_github import RunningSandbox, SandboxConfig
from proxy.middleware import client_id_for
from tests.helpers.stack import CLIENT_KEY, Stack, start_stack, stop_stack
from ticketing.store.task_records import Page, StepStatus

AP = "/ap/v1/agent"


@dataclass
class AgentProtocol:
    """Plain HTTP calls to a stack's Agent Protocol, as any client makes them."""

    stack: Stack
    session: aiohttp.ClientSession
    key: str = CLIENT_KEY

    @property
    def root(self) -> str:
        return self.stack.base_url.removesuffix("/v1") + AP

    def headers(self, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}", **extra}

    async def call(
        self, method: str, path: str, *, json: Any = None, data: Any = None, raw: bool = False
    ) -> tuple[int, Any]:
        """Send one request; return its status and its JSON (or bytes with ``raw``)."""
        headers = self.headers()
        async with self.session.request(
            method, self.root + path, json=json, data=data, headers=headers
        ) as response:
            body = await response.read()
            if raw:
                return response.status, body
            return response.status, await response.json(content_type=None)

    async def create_task(self, text: str = "Summarise the report.", **extra: Any) -> str:
        status, task = await self.call("POST", "/tasks", json={"input": text, **extra})
        assert status == 200, task
        return str(task["task_id"])


async def wait_for_running_step(
    stack: Stack, task_id: str, step_id: str, within: float = 10.0
) -> Any:
    """Wait until a step's ticket is on GitHub; return the ticket."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        step = stack.desk.store.get_step(task_id, step_id)
        if step is not None and step.ticket_id is not None:
            ticket = stack.desk.store.get_ticket(step.ticket_id)
            if ticket is not None and ticket.issue_number is not None:
                return ticket
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"step {step_id} never got its ticket on GitHub")
        await asyncio.sleep(0.05)


async def answer_step(
    stack: Stack,
    task_id: str,
    step_id: str,
    text: str,
    *,
    ask: bool = False,
    signer: str = "alice",
) -> Any:
    """Sign ``text`` for the step's ticket (``--ask`` if asked) and post it on its issue."""
    ticket = await wait_for_running_step(stack, task_id, step_id)
    body = sign_comment(
        text,
        ticket=stack.desk.ticket_ref(ticket),
        key=stack.keys[signer],
        now=stack.clock(),
        ask=ask,
    )
    return await stack.comment(ticket.issue_number, body, author=signer)


async def scripted_editor(stack: Stack, answers: list[tuple[str, bool]]) -> None:
    """Answer each running step in turn: the texts given, signed ``--ask`` where marked."""
    client = client_id_for(CLIENT_KEY)
    answered: set[str] = set()
    while answers:
        tasks, _ = stack.desk.store.list_tasks(client, Page(1, 100))
        for task in tasks:
            steps, _ = stack.desk.store.list_steps(task.task_id, Page(1, 100))
            for step in steps:
                if step.status is StepStatus.RUNNING and step.step_id not in answered:
                    text, ask = answers.pop(0)
                    await answer_step(stack, task.task_id, step.step_id, text, ask=ask)
                    answered.add(step.step_id)
        await asyncio.sleep(0.1)


@pytest.fixture
async def ap_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a stack whose step POSTs wait two seconds before answering running."""
    running = await start_stack(
        github_sandbox, sandbox_config, tmp_path, step_wait=2.0, max_artifact_bytes=1024
    )
    try:
        yield running
    finally:
        await stop_stack(running)


@pytest.fixture
async def ap(ap_stack: Stack) -> AsyncIterator[AgentProtocol]:
    """Yield an Agent Protocol client of ``ap_stack`` with the stack's client key."""
    async with aiohttp.ClientSession() as session:
        yield AgentProtocol(ap_stack, session)
