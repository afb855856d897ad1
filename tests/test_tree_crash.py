"""kill -9 between opening a run's child issue and linking it: one child, linked once.

A real ``ticketproxy serve`` process (``TICKETPROXY_TREE_AFTER_STEPS=1``: step 2 of a run
opens as a child issue) in front of the test's embedded GitHub, which outlives the proxy and
refuses or holds the request at which the proxy is killed with SIGKILL. The proxy restarts on
the same data directory; the agent retries the same request and gets the answer signed for
the child's own reference. Each test is named after the moment the kill lands.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import openai
import pytest

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.tree_deployment import (
    ANSWER_1,
    FIRST,
    ISSUES,
    ROOT_LINKS,
    SECOND,
    TreeDeployment,
    eventually,
)


@pytest.fixture
async def deployment(
    start_github_sandbox: Callable[..., Awaitable[RunningSandbox]],
    sandbox_config: SandboxConfig,
    tmp_path: Path,
) -> AsyncIterator[TreeDeployment]:
    """Yield the embedded GitHub and a proxy answered through step 1 of a run (issue #1)."""
    sandbox = await start_github_sandbox()
    running = TreeDeployment(sandbox, sandbox_config, tmp_path)
    try:
        await running.start_proxy()
        first = running.ask(FIRST)

        async def opened() -> bool:
            return running.query("SELECT state, issue_number FROM tickets") == [("open", 1)]

        await eventually(opened, what="the run's issue #1 to open")
        await running.answer(1, "Deploy `release-2.3`.")
        assert await asyncio.wait_for(first, 15) == "Deploy `release-2.3`."
        yield running
    finally:
        await running.close()


async def kill_9_while_the_agent_waits(
    deployment: TreeDeployment, moment: Callable[[], Awaitable[Any]], what: str
) -> None:
    """Ask step 2, SIGKILL the proxy once ``moment`` comes; the agent's request fails."""
    waiting = deployment.ask(FIRST, ANSWER_1, SECOND)
    await eventually(moment, what=what)
    deployment.kill_proxy()
    with pytest.raises(openai.APIConnectionError):
        await asyncio.wait_for(waiting, 10)


async def assert_the_retry_gets_the_childs_answer_once(deployment: TreeDeployment) -> None:
    """Restart; the agent's retry re-attaches to the one child, linked once under #1."""
    deployment.sandbox.sandbox.clear_faults()
    await deployment.start_proxy()
    retry = deployment.ask(FIRST, ANSWER_1, SECOND)

    async def child_open() -> bool:
        return deployment.step_two() == [("open", 2, 1)]

    await eventually(
        child_open, what="step 2 to be open as child issue #2", context=deployment.step_two
    )
    await deployment.answer(2, "Migration 0042.")
    assert await asyncio.wait_for(retry, 15) == "Migration 0042."

    async def delivered() -> bool:
        return deployment.step_two() == [("delivered", 2, 1)]

    await eventually(
        delivered, what="the child's answer to be delivered", context=deployment.step_two
    )
    # One answer, signed for the child's own reference, delivered once.
    assert deployment.query(
        "SELECT a.text, a.delivered_at IS NOT NULL FROM answers a"
        " JOIN tickets t ON t.id = a.ticket_id WHERE t.step = 2"
    ) == [("Migration 0042.", 1)]

    async def linked() -> tuple[list[int], list[int]] | None:
        found = await deployment.issues_and_links()
        return found if found[1] else None

    # One child issue for step 2 (no second one opened), linked once under the root.
    assert await eventually(linked, what="the child to be linked") == ([1, 2], [2])
    status, parent = await deployment.github("GET", f"{ISSUES}/2/parent")
    assert (status, parent["number"]) == (200, 1)

    async def link_done() -> bool:
        # The queued link is done (a dead process's claim on it runs out first), not given up.
        rows = deployment.query(
            "SELECT done_at, failure FROM write_queue WHERE kind = 'link_sub_issue'"
        )
        return len(rows) == 1 and rows[0][0] is not None and rows[0][1] is None

    await eventually(link_done, what="the queued link to be done", context=deployment.link_requests)


@pytest.mark.slow
async def test_kill_9_after_the_child_issue_was_opened_but_before_its_link_was_queued(
    deployment: TreeDeployment,
) -> None:
    """GitHub opened the child, the proxy died before hearing so: the retry finds and links it."""
    sandbox = deployment.sandbox.sandbox
    sandbox.inject_fault(method="POST", path=ISSUES, status=None, after_handling=True, hold=True)

    async def child_created_unanswered() -> bool:
        return sandbox.held_requests == 1

    await kill_9_while_the_agent_waits(
        deployment, child_created_unanswered, "GitHub to hold the child's creation"
    )
    assert deployment.step_two() == [("creating", None, 1)]
    assert await deployment.issues_and_links() == ([1, 2], [])
    assert deployment.link_requests() == []
    await assert_the_retry_gets_the_childs_answer_once(deployment)
    assert deployment.link_requests() == [201]


@pytest.mark.slow
async def test_kill_9_while_github_refuses_the_link_of_an_opened_child(
    deployment: TreeDeployment,
) -> None:
    """The child is open but its link fails when the proxy dies: the restart links it once."""
    deployment.sandbox.sandbox.inject_fault(method="POST", path=ROOT_LINKS, status=503, times=1000)

    async def link_refused() -> bool:
        return 503 in deployment.link_requests()

    await kill_9_while_the_agent_waits(deployment, link_refused, "the link to be refused")
    assert await deployment.issues_and_links() == ([1, 2], [])
    await assert_the_retry_gets_the_childs_answer_once(deployment)
    assert [s for s in deployment.link_requests() if s != 503] == [201]


@pytest.mark.slow
async def test_kill_9_after_github_accepted_the_link_but_before_it_was_marked_done(
    deployment: TreeDeployment,
) -> None:
    """GitHub linked the child, the proxy died before hearing so: it is not linked twice."""
    sandbox = deployment.sandbox.sandbox
    sandbox.inject_fault(
        method="POST", path=ROOT_LINKS, status=None, after_handling=True, hold=True
    )

    async def link_made_unanswered() -> bool:
        return sandbox.held_requests == 1

    await kill_9_while_the_agent_waits(
        deployment, link_made_unanswered, "GitHub to hold the link's answer"
    )
    assert deployment.query(
        "SELECT COUNT(*) FROM write_queue WHERE kind = 'link_sub_issue' AND done_at IS NULL"
    ) == [(1,)]
    assert await deployment.issues_and_links() == ([1, 2], [2])
    await assert_the_retry_gets_the_childs_answer_once(deployment)
    # The one link is the held one (answered once let go); the restart sent none.
    assert deployment.link_requests() == [201]
