"""smolagents' tool loop: its recorded steps, and a live ``ToolCallingAgent``, on one issue."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from tests.helpers.agent_runs import pending_issue, wait_for_step
from tests.helpers.autogpt_samples import send
from tests.helpers.smolagents_runs import RUNS, capture, first_answer
from tests.helpers.stack import CLIENT_KEY, REPO, Stack

FINAL = '```tool_call\n{"name": "final_answer", "arguments": {"answer": "Sunny in Paris"}}\n```'


async def answered(stack: Stack, request: dict[str, Any], answer: str, ticket: str) -> Any:
    """Send a recorded request, sign ``answer`` for ``ticket`` on its issue, return the reply."""
    pending = asyncio.create_task(send(stack, request))
    number = await pending_issue(stack)
    await stack.comment(number, stack.signed(answer, number=number, ticket=ticket))
    status, raw = await asyncio.wait_for(pending, 10)
    assert status == 200, raw
    return ChatCompletion.model_validate_json(raw)


def step_comments(comments: list[Any]) -> list[str]:
    return [c.body for c in comments if "<!-- ticketproxy:step " in c.body]


@pytest.mark.parametrize("run", sorted(RUNS))
async def test_smolagents_recorded_steps_land_on_one_issue_as_two_steps(
    stack: Stack, run: str
) -> None:
    """Step 2 re-sends step 1's call as ``Calling tools:`` text and is step 2 of issue 1."""
    first = await answered(stack, capture(run, 1), first_answer(run), f"{REPO}#1")
    assert first.choices[0].message.tool_calls
    second = await answered(stack, capture(run, 2), FINAL, f"{REPO}#1/2")
    (call,) = second.choices[0].message.tool_calls or []
    assert call.function.name == "final_answer"
    assert [i.number for i in await stack.issues()] == [1]
    await stack.desk.followups.drain()
    (step,) = step_comments(await stack.comments(1))
    assert "## Step 2" in step
    assert "Sunny in Paris" in step


async def test_similar_calling_tools_text_from_another_agent_opens_its_own_issue(
    stack: Stack,
) -> None:
    """The same echoed call under another agent's system prompt does not join the run."""
    await answered(stack, capture("call_only", 1), first_answer("call_only"), f"{REPO}#1")
    other = copy.deepcopy(capture("call_only", 2))
    other["body"]["messages"][0]["content"] = [{"type": "text", "text": "You are another agent."}]
    pending = asyncio.create_task(send(stack, other))
    await stack.wait_for_issue(2)
    assert sorted(i.number for i in await stack.issues()) == [1, 2]
    assert (await stack.desk.followups.drain()) is None
    assert step_comments(await stack.comments(1)) == []
    pending.cancel()


async def test_live_smolagents_tool_calling_agent_runs_on_one_issue(stack: Stack) -> None:
    """A real ToolCallingAgent's two steps are issue 1 and its step 2; it gets the answer."""
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    @tool
    def get_weather(city: str) -> str:
        """Return the weather in a city.

        Args:
            city: The city's name.
        """
        return f"Sunny in {city}"

    model = OpenAIServerModel(model_id="gpt-4o", api_base=stack.base_url, api_key=CLIENT_KEY)
    agent = ToolCallingAgent(tools=[get_weather], model=model, max_steps=3, verbosity_level=0)
    run = asyncio.create_task(asyncio.to_thread(agent.run, "What is the weather in Paris?"))
    await stack.wait_for_issue(1)
    await stack.answer(1, first_answer("call_only"))
    await wait_for_step(stack, 2)
    await stack.comment(1, stack.signed(FINAL, number=1, ticket=f"{REPO}#1/2"))
    assert await asyncio.wait_for(run, 30) == "Sunny in Paris"
    assert [i.number for i in await stack.issues()] == [1]
