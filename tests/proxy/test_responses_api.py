"""``POST /v1/responses`` through the real openai package: answers, tools, formats, streams."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai

from tests.helpers.agent_runs import wait_for_step
from tests.helpers.stack import CLIENT_KEY, REPO, Stack

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
CITY_FORMAT: dict[str, Any] = {
    "format": {
        "type": "json_schema",
        "name": "city",
        "schema": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": False,
        },
        "strict": True,
    }
}


def tool_call(name: str, arguments: dict[str, Any]) -> str:
    """Return a fenced tool_call block as an editor writes it."""
    return "```tool_call\n" + json.dumps({"name": name, "arguments": arguments}) + "\n```"


async def test_async_client_gets_the_signed_answer_as_a_completed_response(stack: Stack) -> None:
    """A string input becomes a ticket, and the signed answer is the response's output text."""
    client = stack.openai()
    pending = asyncio.create_task(
        client.responses.create(model="gpt-4o", instructions="Be brief.", input="What is 2+2?")
    )
    issue = await stack.wait_for_issue(1)
    await stack.answer(1, "4")
    response = await asyncio.wait_for(pending, 10)
    assert response.output_text == "4"
    assert response.status == "completed"
    assert response.id.startswith("resp_")
    assert response.model == "gpt-4o"
    assert response.usage is not None
    assert response.usage.output_tokens == 1
    assert "What is 2+2?" in issue.body
    assert "Be brief." in issue.body


async def test_sync_client_receives_a_function_call_and_its_output_continues_the_issue(
    stack: Stack,
) -> None:
    """A tool_call answer is a function_call item; sending its output back is step 2."""
    question = [{"role": "user", "content": "What files are in the workspace?"}]

    def ask(items: list[Any]) -> Any:
        with openai.OpenAI(base_url=stack.base_url, api_key=CLIENT_KEY, max_retries=0) as client:
            return client.responses.create(model="gpt-4o", input=items, tools=TOOLS)

    first = asyncio.create_task(asyncio.to_thread(ask, question))
    issue = await stack.wait_for_issue(1)
    assert "list_folder" in issue.body
    assert "## Answer template" in issue.body
    await stack.answer(1, tool_call("list_folder", {"folder": "."}))
    response = await asyncio.wait_for(first, 10)
    [call] = response.output
    assert call.type == "function_call"
    assert call.name == "list_folder"
    assert json.loads(call.arguments) == {"folder": "."}
    follow_up = [
        *question,
        {
            "type": "function_call",
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
        },
        {"type": "function_call_output", "call_id": call.call_id, "output": "README.md"},
    ]
    second = asyncio.create_task(asyncio.to_thread(ask, follow_up))
    await wait_for_step(stack, 2)
    await stack.comment(1, stack.signed("Only README.md.", number=1, ticket=f"{REPO}#1/2"))
    reply = await asyncio.wait_for(second, 10)
    assert reply.output_text == "Only README.md."
    assert [i.number for i in await stack.issues()] == [1]


async def test_streamed_response_sends_the_typed_events_in_order(stack: Stack) -> None:
    """created and in_progress before the wait, then the text's and the call's events."""
    client = stack.openai()
    stream = await client.responses.create(
        model="gpt-4o", input="List the folder, then say why.", tools=TOOLS, stream=True
    )
    events: list[Any] = []

    async def collect() -> None:
        async for event in stream:
            events.append(event)

    pending = asyncio.create_task(collect())
    await stack.wait_for_issue(1)
    await asyncio.sleep(0.3)
    assert [e.type for e in events] == ["response.created", "response.in_progress"]
    await stack.answer(1, "Looking.\n\n" + tool_call("list_folder", {"folder": "."}))
    await asyncio.wait_for(pending, 10)
    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    final = events[-1].response
    assert final.output_text == "Looking."
    assert final.output[1].type == "function_call"
    assert len({e.response.id for e in events if hasattr(e, "response")}) == 1


async def test_json_schema_format_holds_back_a_non_matching_answer(stack: Stack) -> None:
    """text.format json_schema is checked before release, as chat's response_format is."""
    client = stack.openai()
    pending = asyncio.create_task(
        client.responses.create(model="gpt-4o", input="Name a city.", text=CITY_FORMAT)
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, "Paris")
    await stack.settle()
    assert not pending.done()
    assert any("JSON" in reply for reply in await stack.bot_replies(1))
    await stack.answer(1, '{"name": "Paris"}')
    response = await asyncio.wait_for(pending, 10)
    assert json.loads(response.output_text) == {"name": "Paris"}


async def test_retry_of_an_answered_response_re_attaches_with_the_same_id(stack: Stack) -> None:
    """The same request sent again gets the same response from the same ticket."""
    client = stack.openai()
    first = asyncio.create_task(client.responses.create(model="gpt-4o", input="Hi"))
    await stack.wait_for_issue(1)
    await stack.answer(1, "Hello")
    answered = await asyncio.wait_for(first, 10)
    again = await client.responses.create(model="gpt-4o", input="Hi", stream=False)
    assert again.id == answered.id
    assert again.output_text == "Hello"
    assert len(await stack.issues()) == 1


async def test_expired_response_is_completed_saying_nobody_answered(short_stack: Stack) -> None:
    """An expiry is a completed response with the plain text and no function call."""
    client = short_stack.openai()
    response = await client.responses.create(model="gpt-4o", input="Anyone?", tools=TOOLS)
    assert response.status == "completed"
    assert [item.type for item in response.output] == ["message"]
    assert response.output_text.startswith("No human answered this request in time.")
