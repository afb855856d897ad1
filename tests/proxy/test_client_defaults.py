"""Defaults that work with every client: any model id, and heartbeats inside httpx's 5 s."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from embedded_github import RunningSandbox, SandboxConfig
from proxy.errors import ConfigError
from proxy.routing import HUMANS, load_routes
from proxy.settings import DEFAULT_HEARTBEAT_INTERVAL
from tests.helpers.stack import CLIENT_KEY, Stack, start_stack, stop_stack

# Longer than httpx's default 5 s read timeout.
WAIT = 6.0


@pytest.fixture
async def default_heartbeat_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a stack with the shipped heartbeat interval (the other stacks beat faster)."""
    running = await start_stack(
        github_sandbox, sandbox_config, tmp_path, heartbeat_interval=DEFAULT_HEARTBEAT_INTERVAL
    )
    try:
        yield running
    finally:
        await stop_stack(running)


async def test_agents_default_model_id_is_answered_by_people(stack: Stack) -> None:
    """gpt-4.1-mini, configured nowhere, opens a ticket; /v1/models still lists the known ids."""
    client = stack.openai()
    pending = asyncio.create_task(client.responses.create(model="gpt-4.1-mini", input="Hi"))
    await stack.wait_for_issue(1)
    await stack.answer(1, "Hello")
    response = await asyncio.wait_for(pending, 10)
    assert (response.model, response.output_text) == ("gpt-4.1-mini", "Hello")
    listed = [model.id for model in (await client.models.list()).data]
    assert "gpt-4o" in listed
    assert "gpt-4.1-mini" not in listed


def test_routes_file_sends_unlisted_ids_to_people_unless_it_says_refuse(tmp_path: Path) -> None:
    """A routes file lists models; ids it does not list go to people by default."""
    path = tmp_path / "routes.toml"
    path.write_text('[models."gpt-4o"]\n', encoding="utf-8")
    resolved = load_routes(path, {}).resolve("gpt-4.1-mini")
    assert resolved is not None
    assert resolved[1].kind == HUMANS
    path.write_text('unlisted = "refuse"\n[models."gpt-4o"]\n', encoding="utf-8")
    assert load_routes(path, {}).resolve("gpt-4.1-mini") is None


def test_unlisted_setting_that_is_neither_humans_nor_refuse_is_a_config_error(
    tmp_path: Path,
) -> None:
    """A misspelt unlisted value stops the start, naming both choices."""
    path = tmp_path / "routes.toml"
    path.write_text('unlisted = "upstream"\n[models."gpt-4o"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match='unlisted = "refuse"'):
        load_routes(path, {})


async def answer_after_wait(stack: Stack, text: str) -> None:
    """Answer issue 1 once the client has waited longer than its read timeout."""
    await stack.wait_for_issue(1)
    await asyncio.sleep(WAIT)
    await stack.answer(1, text)


async def test_plain_httpx_json_request_outlasts_its_default_read_timeout(
    default_heartbeat_stack: Stack,
) -> None:
    """Spaces every 2 s keep httpx's default 5 s read timeout from firing during a 6 s wait."""
    stack = default_heartbeat_stack
    answering = asyncio.create_task(answer_after_wait(stack, "Worth the wait."))
    async with httpx.AsyncClient() as client:
        reply = await client.post(
            f"{stack.base_url}/responses",
            headers={"Authorization": f"Bearer {CLIENT_KEY}"},
            json={"model": "gpt-4o", "input": "Take your time."},
        )
    await answering
    assert reply.status_code == 200
    assert reply.json()["output"][0]["content"][0]["text"] == "Worth the wait."


async def test_plain_httpx_stream_outlasts_its_default_read_timeout(
    default_heartbeat_stack: Stack,
) -> None:
    """SSE keep-alive comments every 2 s keep a streamed chat completion open for 6 s."""
    stack = default_heartbeat_stack
    answering = asyncio.create_task(answer_after_wait(stack, "Streamed late."))
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Later."}], "stream": True}
    texts: list[str] = []
    async with (
        httpx.AsyncClient() as client,
        client.stream(
            "POST",
            f"{stack.base_url}/chat/completions",
            headers={"Authorization": f"Bearer {CLIENT_KEY}"},
            json=body,
        ) as reply,
    ):
        async for line in reply.aiter_lines():
            if line.startswith("data: {"):
                choices = json.loads(line[6:])["choices"]
                texts += [c["delta"].get("content") or "" for c in choices]
    await answering
    assert "".join(texts) == "Streamed late."
