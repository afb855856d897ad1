"""Stored responses through the real openai package: chaining, retrieve, delete, input items."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest
from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool

from tests.helpers.agent_runs import wait_for_step
from tests.helpers.stack import REPO, Stack

TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "list_folder",
        "description": "List the files in a folder.",
        "parameters": {
            "type": "object",
            "properties": {"folder": {"type": "string"}},
            "required": ["folder"],
            "additionalProperties": False,
        },
        "strict": True,
    }
]
LIST_CALL = {"name": "list_folder", "arguments": {"folder": "."}}
CALL = "```tool_call\n" + json.dumps(LIST_CALL) + "\n```"


async def answered(stack: Stack, number: int, text: str, **body: Any) -> Any:
    """Create a response with the async client, answer issue ``number`` with ``text``."""
    pending = asyncio.create_task(stack.openai().responses.create(model="gpt-4o", **body))
    await stack.wait_for_issue(number)
    await stack.answer(number, text)
    return await asyncio.wait_for(pending, 10)


async def chained_run(stack: Stack) -> tuple[Any, Any]:
    """Ask with a tool, get a function call, send its output by previous_response_id alone."""
    question = "What files are in the workspace?"
    first = await answered(stack, 1, CALL, input=question, tools=TOOLS, instructions="Be brief.")
    [call] = first.output
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "README.md"}
    second = asyncio.create_task(
        stack.openai().responses.create(
            model="gpt-4o",
            previous_response_id=first.id,
            input=[output],
            tools=TOOLS,
            instructions="Be brief.",
        )
    )
    await wait_for_step(stack, 2)
    await stack.comment(1, stack.signed("Only README.md.", number=1, ticket=f"{REPO}#1/2"))
    return first, await asyncio.wait_for(second, 10)


async def test_previous_response_id_after_a_function_call_is_the_next_step_of_one_issue(
    stack: Stack,
) -> None:
    """The output sent with previous_response_id alone is step 2 of the first issue."""
    first, second = await chained_run(stack)
    assert second.output_text == "Only README.md."
    assert second.previous_response_id == first.id
    assert second.id != first.id
    assert [i.number for i in await stack.issues()] == [1]
    marker = "<!-- ticketproxy:reply step -->"
    [step] = [c.body for c in await stack.comments(1) if marker in c.body]
    # The step shows what is new (the tool's output), not the question asked in step 1.
    assert "README.md" in step
    assert "What files are in the workspace?" not in step


async def test_input_items_list_the_previous_responses_items_then_its_own(stack: Stack) -> None:
    """input_items holds the question, the call, then the output; desc first by default."""
    first, second = await chained_run(stack)
    client = stack.openai()
    newest = await client.responses.input_items.list(second.id)
    assert newest.data[0].type == "function_call_output"
    pages = client.responses.input_items.list(second.id, limit=1, order="asc")
    items = [item async for item in pages]
    assert [item.type for item in items] == ["message", "function_call", "function_call_output"]
    assert items[1].call_id == first.output[0].call_id
    assert len({item.id for item in items}) == 3


async def test_retrieve_is_in_progress_while_people_think_then_completed(stack: Stack) -> None:
    """GET /v1/responses/{id} says in_progress until the signed answer, then completed."""
    client = stack.openai()
    stream = await client.responses.create(model="gpt-4o", input="What is 2+2?", stream=True)
    events = aiter(stream)
    created = await anext(events)
    await stack.wait_for_issue(1)
    waiting = await client.responses.retrieve(created.response.id)
    assert waiting.status == "in_progress"
    assert waiting.output == []
    await stack.answer(1, "4")
    async for _ in events:
        pass
    done = await client.responses.retrieve(created.response.id)
    assert done.status == "completed"
    assert done.output_text == "4"
    assert done.store is True


async def test_deleted_response_is_gone_but_its_issue_stays(stack: Stack) -> None:
    """After DELETE, retrieve and previous_response_id are 404s; the issue is untouched."""
    client = stack.openai()
    response = await answered(stack, 1, "4", input="What is 2+2?")
    await client.responses.delete(response.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(response.id)
    with pytest.raises(openai.NotFoundError) as caught:
        await client.responses.create(
            model="gpt-4o", previous_response_id=response.id, input="and 3+3?"
        )
    assert caught.value.body["param"] == "previous_response_id"  # type: ignore[index]
    assert [i.number for i in await stack.issues()] == [1]
    assert stack.desk.store.answer_for(1) is not None


async def test_retried_request_after_delete_does_not_bring_the_response_back(
    stack: Stack,
) -> None:
    """A retry of the deleted response's request re-attaches, and the response stays gone."""
    client = stack.openai()
    response = await answered(stack, 1, "4", input="What is 2+2?")
    await client.responses.delete(response.id)
    again = await client.responses.create(model="gpt-4o", input="What is 2+2?")
    assert again.id == response.id
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(response.id)


async def test_openai_agents_chains_its_run_with_previous_response_id(stack: Stack) -> None:
    """openai-agents with auto_previous_response_id, then a second turn by its last id."""

    @function_tool
    def list_folder(folder: str) -> str:
        """List the files in a folder."""
        return "README.md"

    model = OpenAIResponsesModel(model="gpt-4.1-mini", openai_client=stack.openai())
    agent = Agent(name="Clerk", instructions="Answer briefly.", tools=[list_folder], model=model)
    config = RunConfig(tracing_disabled=True)
    run = asyncio.create_task(
        Runner.run(
            agent, "What is in the workspace?", run_config=config, auto_previous_response_id=True
        )
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, CALL)
    await wait_for_step(stack, 2)
    await stack.comment(1, stack.signed("Only README.md.", number=1, ticket=f"{REPO}#1/2"))
    result = await asyncio.wait_for(run, 15)
    assert result.final_output == "Only README.md."
    follow = asyncio.create_task(
        Runner.run(
            agent,
            "And how big is it?",
            run_config=config,
            previous_response_id=result.last_response_id,
        )
    )
    await wait_for_step(stack, 3)
    await stack.comment(1, stack.signed("12 bytes.", number=1, ticket=f"{REPO}#1/3"))
    second = await asyncio.wait_for(follow, 15)
    assert second.final_output == "12 bytes."
    assert [i.number for i in await stack.issues()] == [1]


async def step_comment(stack: Stack, number: int, within: float = 10.0) -> str:
    """Return the bot's step comment on issue ``number`` once it is posted.

    The step's ticket is pending before its comment is posted, and the delivered notice of
    the step before it may come after that comment: neither "the newest comment" will do.
    """
    marker = "<!-- ticketproxy:reply step -->"
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        found = [c.body for c in await stack.comments(number) if marker in c.body]
        if found:
            return found[-1]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no step comment on issue #{number}")


async def test_item_reference_to_an_earlier_answer_reads_as_that_answer(stack: Stack) -> None:
    """An item_reference to a stored output item (as the Vercel AI SDK sends) is that item."""
    question = {"role": "user", "content": "Say hello, then ask me something."}
    first = await answered(stack, 1, "Hello. What is your name?", input=[question])
    [message] = first.output
    again = {"role": "user", "content": "Ada."}
    reference = {"type": "item_reference", "id": message.id}
    second = asyncio.create_task(
        stack.openai().responses.create(model="gpt-4o", input=[question, reference, again])
    )
    await wait_for_step(stack, 2)
    step = await step_comment(stack, 1)
    assert "Ada." in step
    await stack.comment(1, stack.signed("Hi Ada.", number=1, ticket=f"{REPO}#1/2"))
    reply = await asyncio.wait_for(second, 10)
    assert reply.output_text == "Hi Ada."
    items = await stack.openai().responses.input_items.list(reply.id, order="asc")
    assert [item.type for item in items.data] == ["message", "message", "message"]
    assert items.data[1].content[0].text == "Hello. What is your name?"  # type: ignore[union-attr]
    assert [i.number for i in await stack.issues()] == [1]
