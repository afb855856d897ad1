"""What a ticket costs in GitHub writes: github.com allows a token 500 content writes an hour.

``python -m bench.write_cost`` measures the same over many tickets; these pin the count.
"""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta

from tests.helpers.agent_runs import wait_for_step
from tests.helpers.stack import REPO, Stack

_WRITES = frozenset({"POST", "PATCH", "PUT", "DELETE"})
_NUMBER = re.compile(r"/[0-9]+(?=/|$)")


def bot_writes(stack: Stack, since: int) -> list[str]:
    """Return the bot's writes recorded since request ``since``, as ``PATCH …/{n} [fields]``."""
    return [
        f"{r.method} {_NUMBER.sub('/{n}', r.path)} {list(r.fields)}"
        for r in stack.sandbox.sandbox.requests[since:]
        if r.login == "ticketproxy-bot" and r.method in _WRITES
    ]


async def test_answered_ticket_costs_four_writes_with_one_patch_to_close_and_label(
    stack: Stack,
) -> None:
    """Open (labels in the body), lock, close with the answered label, and the delivered note."""
    client = stack.openai()
    question = [{"role": "user", "content": "What is 2+2?"}]
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=question))
    await stack.wait_for_issue(1)
    await stack.answer(1, "4")
    await asyncio.wait_for(pending, 10)
    await stack.desk.followups.drain()
    issues = f"/repos/{REPO}/issues"
    assert sorted(bot_writes(stack, 0)) == sorted(
        [
            f"POST {issues} ['body', 'labels', 'title']",
            f"PUT {issues}/{{n}}/lock []",
            f"PATCH {issues}/{{n}} ['labels', 'state', 'state_reason']",
            f"POST {issues}/{{n}}/comments ['body']",
        ]
    )
    [issue] = await stack.issues()
    assert issue.state == "closed"
    assert {label.name for label in issue.labels} == {"ticketproxy", "answered"}


async def test_next_step_of_a_run_reopens_and_relabels_in_one_patch(stack: Stack) -> None:
    """A run's step costs its comment, one reopening PATCH, one closing PATCH and the note."""
    client = stack.openai()
    question = [{"role": "user", "content": "What is 2+2?"}]
    first = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=question))
    await stack.wait_for_issue(1)
    await stack.answer(1, "4")
    await asyncio.wait_for(first, 10)
    await stack.desk.followups.drain()
    since = len(stack.sandbox.sandbox.requests)
    follow_up = [
        *question,
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "x3?"},
    ]
    second = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=follow_up))
    await wait_for_step(stack, 2)
    await stack.desk.followups.drain()
    [issue] = await stack.issues()
    assert issue.state == "open"
    assert {label.name for label in issue.labels} == {"ticketproxy", "awaiting-answer"}
    await stack.comment(1, stack.signed("12", number=1, ticket=f"{REPO}#1/2"))
    await asyncio.wait_for(second, 10)
    await stack.desk.followups.drain()
    issue_path = f"/repos/{REPO}/issues/{{n}}"
    assert sorted(bot_writes(stack, since)) == sorted(
        [
            f"POST {issue_path}/comments ['body']",
            f"PATCH {issue_path} ['labels', 'state']",
            f"PATCH {issue_path} ['labels', 'state', 'state_reason']",
            f"POST {issue_path}/comments ['body']",
        ]
    )


async def test_answer_no_client_has_taken_is_labelled_answered_after_a_moment(
    stack: Stack,
) -> None:
    """With its client gone, an accepted answer still shows "answered" on the open issue."""
    client = stack.openai()
    question = [{"role": "user", "content": "What is 2+2?"}]
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=question))
    await stack.wait_for_issue(1)
    pending.cancel()
    await stack.answer(1, "4")
    await stack.desk.poll_once()
    # The label waits for a delivery that does not come; the test moves the clock past it.
    stack.clock.offset += timedelta(seconds=5)
    await stack.desk.followups.drain()
    [issue] = await stack.issues()
    assert issue.state == "open"
    assert {label.name for label in issue.labels} == {"ticketproxy", "answered"}
