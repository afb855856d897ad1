"""pydantic-ai's chat and Responses models, each with a tool and a structured output."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

from tests.helpers.agent_runs import wait_for_step
from tests.helpers.stack import REPO, Stack


class Weather(BaseModel):
    """The structured output the agent asks for."""

    city: str
    sunny: bool


def block(name: str, arguments: dict[str, object]) -> str:
    """Return a signed answer's ``tool_call`` block."""
    return f"```tool_call\n{json.dumps({'name': name, 'arguments': arguments})}\n```"


@pytest.mark.parametrize("model_class", [OpenAIChatModel, OpenAIResponsesModel])
async def test_pydantic_ai_agent_with_a_tool_and_structured_output_runs_on_one_issue(
    stack: Stack, model_class: type[OpenAIChatModel] | type[OpenAIResponsesModel]
) -> None:
    """The tool call, then the output tool with a Weather, answered as two steps of issue 1."""
    provider = OpenAIProvider(openai_client=stack.openai())
    agent = Agent(
        model_class("gpt-4.1-mini", provider=provider),
        output_type=Weather,
        instructions="Answer with the weather.",
    )
    asked: list[str] = []

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Return the weather in a city."""
        asked.append(city)
        return "Sunny"

    run = asyncio.create_task(agent.run("Is it sunny in Paris?"))
    await stack.wait_for_issue(1)
    await stack.answer(1, block("get_weather", {"city": "Paris"}))
    await wait_for_step(stack, 2)
    # pydantic-ai asks for its structured output as a call to its `final_result` tool.
    issue = await stack.wait_for_issue(1)
    assert "final\\_result" in issue.body
    answer = block("final_result", {"city": "Paris", "sunny": True})
    await stack.comment(1, stack.signed(answer, number=1, ticket=f"{REPO}#1/2"))
    result = await asyncio.wait_for(run, 15)
    assert asked == ["Paris"]
    assert result.output == Weather(city="Paris", sunny=True)
    assert [i.number for i in await stack.issues()] == [1]


@pytest.mark.parametrize("model_class", [OpenAIChatModel, OpenAIResponsesModel])
async def test_pydantic_ai_native_output_is_a_json_schema_answer_checked_before_release(
    stack: Stack, model_class: type[OpenAIChatModel] | type[OpenAIResponsesModel]
) -> None:
    """NativeOutput asks for a JSON Schema: a mismatch is held, a matching answer is the output."""
    provider = OpenAIProvider(openai_client=stack.openai())
    agent = Agent(model_class("gpt-4.1-mini", provider=provider), output_type=NativeOutput(Weather))
    run = asyncio.create_task(agent.run("Is it sunny in Paris?"))
    await stack.wait_for_issue(1)
    await stack.answer(1, '{"city": "Paris"}')
    await stack.settle()
    (reply,) = await stack.bot_replies(1)
    assert "sunny" in reply
    assert not run.done()
    await stack.answer(1, '{"city": "Paris", "sunny": false}')
    result = await asyncio.wait_for(run, 15)
    assert result.output == Weather(city="Paris", sunny=False)


@pytest.mark.parametrize("model_class", [OpenAIChatModel, OpenAIResponsesModel])
async def test_pydantic_ai_streamed_run_reads_the_answer_as_its_output(
    stack: Stack, model_class: type[OpenAIChatModel] | type[OpenAIResponsesModel]
) -> None:
    """``run_stream`` reads the streamed answer as its text output."""
    provider = OpenAIProvider(openai_client=stack.openai())
    agent = Agent(model_class("gpt-4.1-mini", provider=provider))

    async def streamed() -> str:
        async with agent.run_stream("Say hello.") as response:
            return await response.get_output()

    run = asyncio.create_task(streamed())
    await stack.wait_for_issue(1)
    await stack.answer(1, "Hello from a human.")
    assert await asyncio.wait_for(run, 15) == "Hello from a human."
