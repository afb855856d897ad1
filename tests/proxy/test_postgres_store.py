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
from proxy.desk_factories import open_store
from proxy.errors import ConfigError
from proxy.settings import Settings
from tests.helpers.postgres import PostgresServer
from tests.helpers.stack import Stack, start_stack, stop_stack
from ticketing.errors import StoreError, StoreUnavailable
from ticketing.store.model import TicketState
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


def test_the_database_url_is_read_from_the_environment_and_kept_out_of_repr() -> None:
    """TICKETPROXY_DATABASE_URL selects PostgreSQL; unset, SQLite; its password never shows."""
    url = "postgresql://tp:hunter2@db:5432/tickets"
    settings = Settings.from_env({"TICKETPROXY_DATABASE_URL": url})
    assert settings.database_url == url
    assert "hunter2" not in repr(settings)
    assert Settings.from_env({}).database_url is None


def test_a_database_url_of_another_scheme_is_refused_without_echoing_it() -> None:
    """A URL that is not postgresql:// is refused, naming the variable but not its secret."""
    with pytest.raises(ConfigError, match="TICKETPROXY_DATABASE_URL") as raised:
        Settings.from_env({"TICKETPROXY_DATABASE_URL": "mysql://user:hunter2@host/db"})
    assert "hunter2" not in str(raised.value)


def test_an_unreachable_database_at_start_up_is_an_error_for_the_operator(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    """A database that does not exist stops start-up with StoreError, not a 429 loop."""
    settings = Settings(
        github_repo="acme/agents",
        data_dir=tmp_path,
        database_url=postgres_server.url("no_such_database"),
    )
    with pytest.raises(StoreError, match="no_such_database") as raised:
        open_store(settings)
    assert not isinstance(raised.value, StoreUnavailable)


async def test_deadline_passing_while_the_database_is_down_keeps_the_client_until_it_is_back(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    tmp_path: Path,
    postgres_url: str,
    restarts_server: PostgresServer,
) -> None:
    """A deadline met by a passing outage is not a 429: the ticket expires once it is back."""
    stack = await start_stack(
        github_sandbox, sandbox_config, tmp_path, database_url=postgres_url, max_wait=3.0
    )
    try:
        waiting = asyncio.create_task(
            stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
        )
        await stack.wait_for_issue(1)
        await asyncio.to_thread(restarts_server.stop)
        await asyncio.sleep(4.0)  # the deadline passes while the database is down
        assert not waiting.done(), "the client was failed over the store's passing outage"
        await asyncio.to_thread(restarts_server.start)
        expired = await asyncio.wait_for(waiting, 30)
        assert expired.choices[0].message.tool_calls is None
        assert "no" in (expired.choices[0].message.content or "").lower()
        ticket = stack.desk.store.get_ticket(1)
        assert ticket is not None
        assert ticket.state == TicketState.EXPIRED
    finally:
        await stop_stack(stack)
