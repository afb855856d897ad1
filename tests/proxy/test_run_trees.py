"""Runs as trees: past the threshold a run's steps open as child issues linked as sub-issues.

A real proxy (``create_app``) in front of the embedded GitHub, the official ``openai``
client as the agent, PyGithub for what GitHub then shows.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.stack import REPO, Stack, start_stack, stop_stack
from ticketing.store.model import Ticket

# Fast enough for a 60-step run: neither GitHub's nor ticketproxy's content pace holds it up.
FAST = {"writes_per_minute": 100_000.0, "writes_per_hour": 100_000.0, "lock_issues": False}

StartStack = Callable[..., Awaitable[Stack]]


@pytest.fixture
async def start_tree_stack(
    start_github_sandbox: Callable[..., Awaitable[RunningSandbox]],
    sandbox_config: SandboxConfig,
    tmp_path: Path,
) -> AsyncIterator[StartStack]:
    """Return a factory of stacks (settings overrides) over one unthrottled sandbox."""
    sandbox = await start_github_sandbox(creations_per_minute=100_000, creations_per_hour=100_000)
    started: list[Stack] = []

    async def start(**overrides: Any) -> Stack:
        stack = await start_stack(sandbox, sandbox_config, tmp_path, **{**FAST, **overrides})
        started.append(stack)
        return stack

    yield start
    for stack in started:
        await stop_stack(stack)


async def pending_step(stack: Stack, step: int, within: float = 10.0) -> Ticket:
    """Wait until step ``step`` of the run is open on GitHub; return its ticket."""
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        for ticket in stack.desk.store.pending_tickets():
            if ticket.step == step and ticket.issue_number is not None:
                return ticket
        await asyncio.sleep(0.01)
    raise AssertionError(f"step {step} was never opened")


def reference(ticket: Ticket) -> str:
    """Return the reference an editor signs for: the child's own issue, or the root's step."""
    assert ticket.issue_number is not None
    if ticket.own_issue or ticket.step == 1:
        return f"{REPO}#{ticket.issue_number}"
    return f"{REPO}#{ticket.issue_number}/{ticket.step}"


class Agent:
    """A chat agent that sends back each answer with its next question."""

    def __init__(self, stack: Stack) -> None:
        self.client = stack.openai()
        self.messages: list[dict[str, str]] = []

    def ask(self, step: int) -> asyncio.Task[Any]:
        """Send step ``step``: the conversation so far and a new question."""
        self.messages.append({"role": "user", "content": f"Question of step {step}?"})
        return asyncio.create_task(
            self.client.chat.completions.create(model="gpt-4o", messages=list(self.messages))
        )

    def heard(self, answer: str) -> None:
        """Keep the answer, as the agent sends it back in its next request."""
        self.messages.append({"role": "assistant", "content": answer})


async def run_step(stack: Stack, agent: Agent, step: int) -> tuple[Ticket, str]:
    """Ask step ``step``, answer it signed for its own reference, return what the agent got."""
    pending = agent.ask(step)
    ticket = await pending_step(stack, step)
    assert ticket.issue_number is not None
    text = f"Answer to step {step}."
    body = stack.signed(text, number=ticket.issue_number, ticket=reference(ticket))
    await stack.comment(ticket.issue_number, body)
    reply = await asyncio.wait_for(pending, 10)
    content = str(reply.choices[0].message.content)
    agent.heard(content)
    return ticket, content


def issue_data(stack: Stack, number: int) -> dict[str, Any]:
    """Return issue ``number`` as GitHub's JSON (PyGithub, on a worker thread's call)."""
    return dict(stack.github("ticketproxy-bot").get_repo(REPO).get_issue(number).raw_data)


def sub_issues(stack: Stack, number: int) -> list[Any]:
    """Return issue ``number``'s sub-issues as GitHub lists them (PyGithub)."""
    issue = stack.github("ticketproxy-bot").get_repo(REPO).get_issue(number)
    return list(issue.get_sub_issues())


async def test_sixty_step_run_becomes_a_root_with_children_past_the_threshold(
    start_tree_stack: StartStack,
) -> None:
    """Steps 51-60 open as sub-issues of the run's issue, each answered on its own reference."""
    # Answers arrive by webhook: the whole run takes seconds, so each poll would page
    # through every comment of the run again (its cursor's overlap covers them all).
    stack = await start_tree_stack(
        webhook_secret="tree-webhook-secret-0123456789", poll_interval=30.0
    )
    assert stack.settings.tree_after_steps == 50
    agent = Agent(stack)
    tickets: list[Ticket] = []
    for step in range(1, 61):
        ticket, content = await run_step(stack, agent, step)
        assert content == f"Answer to step {step}."
        tickets.append(ticket)
    await stack.desk.followups.drain()
    assert all(t.issue_number == 1 and not t.own_issue for t in tickets[:50])
    children = [t.issue_number for t in tickets[50:]]
    assert all(t.own_issue for t in tickets[50:])
    assert len(set(children)) == 10
    assert 1 not in children
    linked = await asyncio.to_thread(sub_issues, stack, 1)
    assert [issue.number for issue in linked] == children
    root = await asyncio.to_thread(issue_data, stack, 1)
    assert root["sub_issues_summary"] == {"total": 10, "completed": 10, "percent_completed": 100}
    # Closed when step 50, its last step comment, was delivered: the children came after.
    assert root["state"] == "closed"
    for number, step in zip(children, range(51, 61), strict=True):
        assert f"- [x] #{number} step {step}: answered" in root["body"]
        child = await asyncio.to_thread(issue_data, stack, number)
        assert child["state"] == "closed"
        assert child["parent_issue_url"].endswith("/issues/1")
    # Step 60's body is trimmed: the root's step in full, the other children one line each,
    # and none of the 49 step comments' conversation in between.
    last = await asyncio.to_thread(issue_data, stack, children[-1])
    assert "The run so far (trimmed)" in last["body"]
    assert "Question of step 1?" in last["body"]
    assert "Question of step 30?" not in last["body"]
    assert "Question of step 60?" in last["body"]
    for number, step in zip(children[:-1], range(51, 60), strict=True):
        assert (
            f"- #{number} step {step}: Question of step {step}\\? · alice · [`sha256:"
            in (last["body"])
        )


async def test_signature_for_one_child_does_not_answer_the_next_child(
    start_tree_stack: StartStack,
) -> None:
    """A child's signed answer replayed on the next child's issue is refused there."""
    stack = await start_tree_stack(tree_after_steps=0)
    agent = Agent(stack)
    await run_step(stack, agent, 1)
    first_child, _ = await run_step(stack, agent, 2)
    assert first_child.own_issue
    pending = agent.ask(3)
    second_child = await pending_step(stack, 3)
    assert second_child.issue_number is not None
    assert second_child.issue_number != first_child.issue_number
    replayed = stack.signed(
        "Answer meant for the first child.",
        number=second_child.issue_number,
        ticket=reference(first_child),
    )
    await stack.comment(second_child.issue_number, replayed)
    await stack.settle()
    assert not pending.done()
    replies = await stack.bot_replies(second_child.issue_number)
    assert any("was not accepted" in reply for reply in replies), replies
    right = stack.signed(
        "The real answer.", number=second_child.issue_number, ticket=reference(second_child)
    )
    await stack.comment(second_child.issue_number, right)
    reply = await asyncio.wait_for(pending, 10)
    assert reply.choices[0].message.content == "The real answer."


async def test_crash_between_creating_a_child_and_linking_it_links_it_once(
    start_tree_stack: StartStack,
) -> None:
    """The desk stops with the link queued, unsent; after a restart it is linked exactly once."""
    stack = await start_tree_stack(tree_after_steps=0)
    agent = Agent(stack)
    await run_step(stack, agent, 1)
    # GitHub refuses every link for now: the write stays in the durable queue.
    stack.sandbox.sandbox.inject_fault(
        method="POST", path=r"/repos/acme/agents/issues/1/sub_issues", status=503, times=1000
    )
    pending = agent.ask(2)
    child = await pending_step(stack, 2)
    assert child.issue_number is not None
    await asyncio.sleep(0.2)
    assert await asyncio.to_thread(sub_issues, stack, 1) == []
    await stop_stack(stack)
    with pytest.raises(Exception):  # noqa: B017, PT011 (the stopped desk's answer varies)
        await asyncio.wait_for(pending, 10)
    stack.sandbox.sandbox.clear_faults()
    restarted = await start_tree_stack(tree_after_steps=0, keys=stack.keys)
    await restarted.desk.followups.drain()
    linked = await asyncio.to_thread(sub_issues, restarted, 1)
    assert [issue.number for issue in linked] == [child.issue_number]
    # The agent's retry re-attaches to the same child, answered on its own reference.
    retry = Agent(restarted)
    retry.messages = list(agent.messages)
    again = asyncio.create_task(
        retry.client.chat.completions.create(model="gpt-4o", messages=retry.messages)
    )
    body = restarted.signed(
        "After the restart.", number=child.issue_number, ticket=reference(child)
    )
    await restarted.comment(child.issue_number, body)
    reply = await asyncio.wait_for(again, 10)
    assert reply.choices[0].message.content == "After the restart."
    await restarted.desk.followups.drain()
    assert [i.number for i in await asyncio.to_thread(sub_issues, restarted, 1)] == [
        child.issue_number
    ]
    assert [i.number for i in await restarted.issues()] == [1, child.issue_number]


async def test_sub_issue_link_refused_by_github_is_logged_and_given_up_visibly(
    start_tree_stack: StartStack, caplog: pytest.LogCaptureFixture
) -> None:
    """A 422 on the link is a permanent refusal: logged as abandoned, the child still answers."""
    stack = await start_tree_stack(tree_after_steps=0)
    agent = Agent(stack)
    await run_step(stack, agent, 1)
    stack.sandbox.sandbox.inject_fault(
        method="POST",
        path=r"/repos/acme/agents/issues/1/sub_issues",
        status=422,
        body={"message": "Validation Failed", "documentation_url": "https://docs.github.com"},
    )
    with caplog.at_level(logging.ERROR, logger="ticketing.github.write_queue"):
        child, content = await run_step(stack, agent, 2)
        await stack.desk.followups.drain()
    assert content == "Answer to step 2."
    abandoned = [r.getMessage() for r in caplog.records if "abandoned" in r.getMessage()]
    assert any("link_sub_issue" in line and f"#{1}" in line for line in abandoned), abandoned
    assert await asyncio.to_thread(sub_issues, stack, 1) == []
    assert child.own_issue


async def test_expired_child_is_closed_and_shown_expired_in_the_roots_checklist(
    start_tree_stack: StartStack,
) -> None:
    """A child nobody answers in time closes, and the root's checklist ticks it as expired."""
    stack = await start_tree_stack(tree_after_steps=0, max_wait=1.0)
    agent = Agent(stack)
    await run_step(stack, agent, 1)
    pending = agent.ask(2)
    child = await pending_step(stack, 2)
    await asyncio.wait_for(pending, 10)  # the expiry's completion
    await stack.desk.followups.drain()
    root = await asyncio.to_thread(issue_data, stack, 1)
    assert f"- [x] #{child.issue_number} step 2: expired" in root["body"]
    assert child.issue_number is not None
    closed = await asyncio.to_thread(issue_data, stack, child.issue_number)
    assert closed["state"] == "closed"
