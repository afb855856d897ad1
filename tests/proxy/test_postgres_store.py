"""ticketproxy on the PostgreSQL store, end to end: a whole stack with TICKETPROXY_DATABASE_URL.

The store's own behaviour is tested in ``tests/ticketing/store``; these tests show what a
client sees when the proxy runs on PostgreSQL, and when that database goes down.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.postgres import PostgresServer
from tests.helpers.stack import Stack, start_stack, stop_stack
from ticketing.store.postgres import PostgresTicketStore

PROMPT: Any = [{"role": "user", "content": "Which branch should I deploy?"}]
OTHER: Any = [{"role": "user", "content": "And which tag?"}]


@pytest.fixture
async def pg_stack(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    tmp_path: Path,
    postgres_url: str,
) -> AsyncIterator[Stack]:
    """Yield a running ticketproxy whose store is a fresh PostgreSQL database."""
    running = await start_stack(github_sandbox, sandbox_config, tmp_path, database_url=postgres_url)
    try:
        yield running
    finally:
        await stop_stack(running)


async def test_answer_is_released_through_the_postgresql_store(pg_stack: Stack) -> None:
    """With TICKETPROXY_DATABASE_URL set, a ticket lives in PostgreSQL and its answer returns."""
    assert isinstance(pg_stack.desk.store, PostgresTicketStore)
    assert not (pg_stack.settings.data_dir / "tickets.sqlite3").exists()
    waiting = asyncio.create_task(
        pg_stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    await pg_stack.wait_for_issue(1)
    await pg_stack.answer(1, "main")
    assert (await asyncio.wait_for(waiting, 15)).choices[0].message.content == "main"


async def test_database_down_gives_429_with_retry_after_and_the_waiting_ticket_is_kept(
    pg_stack: Stack, restarts_server: PostgresServer
) -> None:
    """With PostgreSQL down a new request gets a 429, never a 500; the waiting one completes."""
    client = pg_stack.openai()
    waiting = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await pg_stack.wait_for_issue(1)
    await asyncio.to_thread(restarts_server.stop)
    with pytest.raises(openai.RateLimitError) as caught:
        await client.chat.completions.create(model="gpt-4o", messages=OTHER)
    assert caught.value.code == "store_unavailable"
    assert int(caught.value.response.headers["retry-after"]) >= 1
    await asyncio.to_thread(restarts_server.start)
    await pg_stack.answer(1, "main, after the outage")
    answered = await asyncio.wait_for(waiting, 30)
    assert answered.choices[0].message.content == "main, after the outage"
    assert len(await pg_stack.issues()) == 1
