"""A retry onto a live ticket re-attaches without the request key's lock.

The key lock serialises "find or open the ticket" across replicas. A replica killed while
it held the lock (right after opening the ticket, before letting go) leaves it held until
it lapses, 30 s with PostgreSQL or Redis. Re-attaching opens nothing, so a retry of a
request whose ticket is already open must not wait for that lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.stack import Stack, start_stack, stop_stack

QUESTION = [{"role": "user", "content": "Which branch should I deploy?"}]


@pytest.fixture
async def stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a running proxy on the embedded GitHub."""
    running = await start_stack(github_sandbox, sandbox_config, tmp_path)
    try:
        yield running
    finally:
        await stop_stack(running)


async def test_retry_is_not_held_up_by_a_key_lock_a_dead_replica_left(stack: Stack) -> None:
    """With the key's lock held and never let go, a retry still re-attaches and is answered."""
    first = asyncio.create_task(
        stack.openai().chat.completions.create(model="gpt-4o", messages=QUESTION)
    )
    await stack.wait_for_issue(1)
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    # A replica that died holding the key: the lock is taken and never released.
    held = asyncio.Event()
    never = asyncio.Event()

    async def dead_replica() -> None:
        async with stack.desk.coordinator.hold_key(ticket.request_key):
            held.set()
            await never.wait()

    holder = asyncio.create_task(dead_replica())
    await held.wait()
    retry = asyncio.create_task(
        stack.openai().chat.completions.create(model="gpt-4o", messages=QUESTION)
    )
    # Let the retry reach the desk before the answer does (else it is a retry of a delivered
    # answer, which needs no lock at all).
    await asyncio.sleep(0.5)
    assert not retry.done()
    await stack.answer(1, "Deploy `release-2.4`.")
    retried = await asyncio.wait_for(retry, 10)
    assert retried.choices[0].message.content == "Deploy `release-2.4`."
    answered = await asyncio.wait_for(first, 10)
    assert answered.choices[0].message.content == "Deploy `release-2.4`."
    assert [issue.number for issue in await stack.issues()] == [1]
    holder.cancel()
