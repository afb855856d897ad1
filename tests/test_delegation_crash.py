"""kill -9 of ``ticketproxy serve`` between a delegation's first and second child.

A real proxy process in front of the test's embedded GitHub, which outlives it. GitHub
opens the first child; it also opens the second but holds its answer, and the proxy is
killed with SIGKILL then. After a restart on the same data directory the missing child is
found (not opened again), recorded and linked once, and the agent's retry gets the
editor's final answer once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import openai
import pytest

from auth.delegation import Delegation, render_delegations
from auth.roles import Act
from auth.sign import sign_comment
from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.tree_deployment import FIRST, ISSUES, REPO, TreeDeployment, eventually

QUESTIONS = (
    Delegation("Is the index on orders.created_at still used?"),
    Delegation("Is last night's backup verified?", to="alice"),
)
FINAL = "Ship it: the index is unused and the backup is verified."


@pytest.fixture
async def deployment(
    start_github_sandbox: Callable[..., Awaitable[RunningSandbox]],
    sandbox_config: SandboxConfig,
    tmp_path: Path,
) -> AsyncIterator[TreeDeployment]:
    """Yield the embedded GitHub and a running proxy; no ticket yet."""
    sandbox = await start_github_sandbox()
    running = TreeDeployment(sandbox, sandbox_config, tmp_path)
    try:
        await running.start_proxy()
        yield running
    finally:
        await running.close()


async def bot_comments(deployment: TreeDeployment, number: int) -> list[str]:
    """Return the bodies of the bot's comments on issue ``number``."""
    status, comments = await deployment.github("GET", f"{ISSUES}/{number}/comments")
    assert status == 200
    return [c["body"] for c in comments if c["user"]["login"] == "ticketproxy-bot"]


async def issue_numbers(deployment: TreeDeployment) -> list[int]:
    """Return every issue's number on GitHub."""
    _, issues = await deployment.github("GET", f"{ISSUES}?state=all")
    return sorted(i["number"] for i in issues)


@pytest.mark.slow
async def test_kill_9_between_opening_a_delegations_first_and_second_child(
    deployment: TreeDeployment,
) -> None:
    """The restart finds the second child GitHub made, opens none twice, and delivers once."""
    sandbox = deployment.sandbox.sandbox
    waiting = deployment.ask(FIRST)
    await eventually(
        lambda: asyncio.sleep(0, deployment.query("SELECT state FROM tickets") == [("open",)]),
        what="the agent's issue #1 to open",
    )
    # The first child opens; the second is made by GitHub, whose answer is held.
    sandbox.inject_fault(method="POST", path=ISSUES, status=None)
    sandbox.inject_fault(method="POST", path=ISSUES, status=None, after_handling=True, hold=True)
    split = sign_comment(
        render_delegations(QUESTIONS),
        ticket=f"{REPO}#1",
        key=deployment.key,
        now=datetime.now(UTC),
        ttl=timedelta(hours=1),
        act=Act.DELEGATE,
        delegations=QUESTIONS,
    )
    status, _ = await deployment.github(
        "POST", f"{ISSUES}/1/comments", json={"body": split}, login="alice"
    )
    assert status == 201

    async def second_child_held() -> bool:
        return sandbox.held_requests == 1

    await eventually(second_child_held, what="GitHub to hold the second child's creation")
    deployment.kill_proxy()
    with pytest.raises(openai.APIConnectionError):
        await asyncio.wait_for(waiting, 10)
    assert await issue_numbers(deployment) == [1, 2, 3]
    assert deployment.query("SELECT position FROM delegations") == [(0,)]
    assert deployment.query("SELECT outcome FROM delegation_acts") == [(None,)]

    sandbox.clear_faults()
    await deployment.start_proxy()
    retry = deployment.ask(FIRST)

    async def resumed() -> bool:
        return deployment.query("SELECT outcome FROM delegation_acts") == [("opened",)]

    await eventually(resumed, what="the delegation to be resumed", within=15.0)
    assert deployment.query(
        "SELECT d.position, t.issue_number FROM delegations d"
        " JOIN tickets t ON t.id = d.child_id ORDER BY d.position"
    ) == [(0, 2), (1, 3)]

    async def linked() -> list[int] | None:
        status, children = await deployment.github("GET", f"{ISSUES}/1/sub_issues")
        numbers = [child["number"] for child in children] if status == 200 else []
        return sorted(numbers) if len(numbers) == 2 else None

    # Each linked once (in either order: the first link was claimed by the killed process).
    assert await eventually(linked, what="both children to be linked") == [2, 3]
    for number in (2, 3):
        await deployment.answer(number, f"Answer {number}.")

    async def listed() -> bool:
        replies = await bot_comments(deployment, 1)
        return any("Every sub-question of this ticket is answered" in b for b in replies)

    await eventually(listed, what="the children's answers on #1")
    # None opened twice; the second child's addressee pinged once.
    assert await issue_numbers(deployment) == [1, 2, 3]
    pings = [b for b in await bot_comments(deployment, 3) if b.startswith("@alice")]
    assert len(pings) == 1
    assert not retry.done()
    await deployment.answer(1, FINAL)
    assert await asyncio.wait_for(retry, 15) == FINAL

    async def delivered_once() -> bool:
        return deployment.query(
            "SELECT a.text, a.delivered_at IS NOT NULL FROM answers a"
            " JOIN tickets t ON t.id = a.ticket_id WHERE t.issue_number = 1"
        ) == [(FINAL, 1)]

    await eventually(delivered_once, what="the final answer to be recorded delivered, once")
