"""openai-agents on its default path (the Responses API) with one function tool."""

from __future__ import annotations

import asyncio
import json

from agents import (
    Agent,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from pydantic import BaseModel

from tests.helpers.agent_runs import wait_for_step
from tests.helpers.stack import REPO, Stack


async def test_openai_agents_run_with_a_tool_lands_on_one_issue_as_two_steps(stack: Stack) -> None:
    """The Agents SDK's tool call and its follow-up are answered as steps of one issue."""
    set_tracing_disabled(True)
    ran: list[str] = []

    @function_tool
    def list_folder(folder: str) -> str:
        """List the files in a folder."""
        ran.append(folder)
        return "README.md"

    model = OpenAIResponsesModel(model="gpt-4.1-mini", openai_client=stack.openai())
    agent = Agent(name="Clerk", instructions="Answer briefly.", tools=[list_folder], model=model)
    run = asyncio.create_task(
        Runner.run(agent, "What is in the workspace?", run_config=RunConfig(tracing_disabled=True))
    )
    issue = await stack.wait_for_issue(1)
    assert "list_folder" in issue.body
    call = json.dumps({"name": "list_folder", "arguments": {"folder": "."}})
    await stack.answer(1, f"```tool_call\n{call}\n```")
    await wait_for_step(stack, 2)
    await stack.comment(1, stack.signed("Only README.md.", number=1, ticket=f"{REPO}#1/2"))
    result = await asyncio.wait_for(run, 15)
    assert ran == ["."]
    assert result.final_output == "Only README.md."
    assert [i.number for i in await stack.issues()] == [1]


class Verdict(BaseModel):
    """The structured output the agent asks people for."""

    safe: bool
    reason: str


async def test_openai_agents_structured_output_is_a_json_schema_answer_checked_before_release(
    stack: Stack,
) -> None:
    """An agent with an ``output_type`` gets the person's JSON, checked against its schema.

    The Agents SDK asks for it through ``text.format`` (a strict JSON Schema): the ticket
    shows the schema's skeleton, an answer that does not fit is held back, and a fitting one
    becomes the run's typed final output.
    """
    set_tracing_disabled(True)
    model = OpenAIResponsesModel(model="gpt-4.1-mini", openai_client=stack.openai())
    agent = Agent(name="Judge", instructions="Judge the command.", output_type=Verdict, model=model)
    run = asyncio.create_task(
        Runner.run(agent, "Is `ls -la` safe to run?", run_config=RunConfig(tracing_disabled=True))
    )
    issue = await stack.wait_for_issue(1)
    assert '"safe"' in issue.body
    await stack.answer(1, '{"safe": "yes"}')
    await stack.answer(1, json.dumps({"safe": True, "reason": "It only lists files."}))
    result = await asyncio.wait_for(run, 15)
    assert result.final_output == Verdict(safe=True, reason="It only lists files.")
    assert [i.number for i in await stack.issues()] == [1]
