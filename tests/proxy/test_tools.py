"""Tool calls and structured output: released only when they fit what the agent asked for."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.helpers.stack import Stack

PROMPT = [{"role": "user", "content": "What files are in the workspace?"}]
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "list_folder",
            "description": "List the files in a folder.",
            "parameters": {
                "type": "object",
                "properties": {"folder": {"type": "string"}},
                "required": ["folder"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {"filename": {"type": "string"}},
                "required": ["filename"],
            },
        },
    },
]


def tool_call(name: str, arguments: dict[str, Any]) -> str:
    """Return a fenced tool_call block as an editor writes it."""
    return "```tool_call\n" + json.dumps({"name": name, "arguments": arguments}) + "\n```"


async def bot_replies(stack: Stack, number: int) -> list[str]:
    """Return the bodies of the bot's comments on an issue."""
    return await stack.bot_replies(number)


async def test_tool_call_answer_becomes_tool_calls_with_finish_reason_tool_calls(
    stack: Stack,
) -> None:
    """A fenced tool_call block is released as ``tool_calls`` with an id and JSON-string args."""
    client = stack.openai()
    pending = asyncio.create_task(
        client.chat.completions.create(model="gpt-4o", messages=PROMPT, tools=TOOLS)
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, tool_call("list_folder", {"folder": "."}))
    completion = await asyncio.wait_for(pending, 10)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    calls = choice.message.tool_calls or []
    assert len(calls) == 1
    assert calls[0].type == "function"
    assert calls[0].id.startswith("call_")
    assert calls[0].function.name == "list_folder"
    assert json.loads(calls[0].function.arguments) == {"folder": "."}


async def test_parallel_tool_calls_and_text_beside_them(stack: Stack) -> None:
    """Two blocks are two calls, in order, and the text around them is the content."""
    client = stack.openai()
    pending = asyncio.create_task(
        client.chat.completions.create(model="gpt-4o", messages=PROMPT, tools=TOOLS)
    )
    await stack.wait_for_issue(1)
    answer = "Looking.\n\n" + tool_call("list_folder", {"folder": "."}) + "\n\n"
    answer += tool_call("read_file", {"filename": "README.md"})
    await stack.answer(1, answer)
    completion = await asyncio.wait_for(pending, 10)
    message = completion.choices[0].message
    assert message.content == "Looking."
    assert [c.function.name for c in message.tool_calls or []] == ["list_folder", "read_file"]
    assert len({c.id for c in message.tool_calls or []}) == 2


async def test_invalid_tool_call_is_held_back_and_the_ticket_says_why(stack: Stack) -> None:
    """A missing required argument is never sent to the agent; a corrected answer is."""
    client = stack.openai()
    pending = asyncio.create_task(
        client.chat.completions.create(model="gpt-4o", messages=PROMPT, tools=TOOLS)
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, tool_call("list_folder", {"path": "."}))
    await stack.settle()
    assert not pending.done()
    replies = await bot_replies(stack, 1)
    assert len(replies) == 1
    assert "folder" in replies[0]
    await stack.answer(1, tool_call("list_folder", {"folder": "."}))
    completion = await asyncio.wait_for(pending, 10)
    assert completion.choices[0].message.tool_calls is not None


async def test_unknown_tool_is_held_back(stack: Stack) -> None:
    """A call to a tool the agent did not offer is refused with a reply."""
    client = stack.openai()
    pending = asyncio.create_task(
        client.chat.completions.create(model="gpt-4o", messages=PROMPT, tools=TOOLS)
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, tool_call("execute_shell", {"command": "rm -rf /"}))
    await stack.settle()
    assert not pending.done()
    assert "execute_shell" in (await bot_replies(stack, 1))[0].replace("\\", "")
    pending.cancel()


async def test_named_tool_choice_forces_that_function(stack: Stack) -> None:
    """With tool_choice naming read_file, a list_folder call is held back."""
    client = stack.openai()
    choice: Any = {"type": "function", "function": {"name": "read_file"}}
    pending = asyncio.create_task(
        client.chat.completions.create(
            model="gpt-4o", messages=PROMPT, tools=TOOLS, tool_choice=choice
        )
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, tool_call("list_folder", {"folder": "."}))
    await stack.settle()
    assert not pending.done()
    await stack.answer(1, tool_call("read_file", {"filename": "a.txt"}))
    completion = await asyncio.wait_for(pending, 10)
    assert (completion.choices[0].message.tool_calls or [])[0].function.name == "read_file"


async def test_streamed_tool_calls_are_reassembled_by_the_client(stack: Stack) -> None:
    """Tool-call deltas stream with an index, id, name and arguments."""
    client = stack.openai()

    async def read() -> list[Any]:
        stream = await client.chat.completions.create(
            model="gpt-4o", messages=PROMPT, tools=TOOLS, stream=True
        )
        return [chunk async for chunk in stream]

    pending = asyncio.create_task(read())
    await stack.wait_for_issue(1)
    await stack.answer(1, tool_call("read_file", {"filename": "notes.md"}))
    chunks = await asyncio.wait_for(pending, 10)
    deltas = [d for c in chunks if c.choices for d in (c.choices[0].delta.tool_calls or [])]
    name = "".join(d.function.name or "" for d in deltas if d.function)
    arguments = "".join(d.function.arguments or "" for d in deltas if d.function)
    assert name == "read_file"
    assert json.loads(arguments) == {"filename": "notes.md"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


async def test_legacy_functions_are_answered_with_function_call(stack: Stack) -> None:
    """A request with ``functions`` gets ``function_call`` and finish_reason function_call."""
    client = stack.openai()
    functions: Any = [t["function"] for t in TOOLS]
    pending = asyncio.create_task(
        client.chat.completions.create(model="gpt-4o", messages=PROMPT, functions=functions)
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, tool_call("list_folder", {"folder": "src"}))
    completion = await asyncio.wait_for(pending, 10)
    choice = completion.choices[0]
    assert choice.finish_reason == "function_call"
    assert choice.message.function_call is not None
    assert choice.message.function_call.name == "list_folder"


async def test_json_schema_answer_must_validate_before_release(stack: Stack) -> None:
    """With response_format json_schema, an answer off the schema is held back."""
    client = stack.openai()
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
        "additionalProperties": False,
    }
    fmt: Any = {"type": "json_schema", "json_schema": {"name": "city", "schema": schema}}
    pending = asyncio.create_task(
        client.chat.completions.create(model="gpt-4o", messages=PROMPT, response_format=fmt)
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, '{"city": "Paris", "population": "many"}')
    await stack.settle()
    assert not pending.done()
    await stack.answer(1, '{"city": "Paris", "population": 2100000}')
    completion = await asyncio.wait_for(pending, 10)
    assert json.loads(completion.choices[0].message.content or "") == {
        "city": "Paris",
        "population": 2100000,
    }


async def test_history_with_tool_results_and_object_arguments_is_accepted(stack: Stack) -> None:
    """Assistant tool_calls with object arguments (as AutoGPT sends) and tool results are fine."""
    client = stack.openai()
    messages: Any = [
        *PROMPT,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "list_folder", "arguments": {"folder": "."}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "README.md"},
    ]
    pending = asyncio.create_task(
        client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, "There is one file: README.md.")
    completion = await asyncio.wait_for(pending, 10)
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.content == "There is one file: README.md."


async def test_stop_sequence_cuts_the_answer(stack: Stack) -> None:
    """``stop`` ends the released text at the first stop sequence."""
    client = stack.openai()
    pending = asyncio.create_task(
        client.chat.completions.create(model="gpt-4o", messages=PROMPT, stop=["END"])
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, "kept part END dropped part")
    completion = await asyncio.wait_for(pending, 10)
    assert (completion.choices[0].message.content or "").strip() == "kept part"


async def test_autogpt_answer_that_is_not_json_is_held_back(stack: Stack) -> None:
    """AutoGPT needs JSON: a plain-text answer to an AutoGPT step is refused with a reply."""
    system = (
        "You are StubBot.\n\n## RESPONSE FORMAT\nYOU MUST ALWAYS RESPOND WITH A JSON OBJECT OF"
        " THE FOLLOWING TYPE:\ninterface AssistantResponse {\nthoughts: {\ntext: string;\n};\n"
        "use_tool: {\nname: string;\narguments: Record<string, any>;\n};\n}"
    )
    messages: Any = [{"role": "system", "content": system}, *PROMPT]
    client = stack.openai()
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=messages))
    await stack.wait_for_issue(1)
    await stack.answer(1, "just list the folder please")
    await stack.settle()
    assert not pending.done()
    assert len(await bot_replies(stack, 1)) == 1
    step = {"thoughts": {"text": "list"}, "use_tool": {"name": "list_folder", "arguments": {}}}
    await stack.answer(1, json.dumps(step))
    completion = await asyncio.wait_for(pending, 10)
    assert json.loads(completion.choices[0].message.content or "") == step


async def test_every_standard_parameter_is_accepted(stack: Stack) -> None:
    """Sampling and bookkeeping parameters are accepted; user and metadata appear on the ticket."""
    client = stack.openai()
    pending = asyncio.create_task(
        client.chat.completions.create(
            model="gpt-4o",
            messages=PROMPT,
            max_tokens=200,
            max_completion_tokens=200,
            temperature=0.3,
            top_p=0.9,
            seed=42,
            user="agent-run-7",
            metadata={"run": "nightly"},
            stop=["\n\nEND"],
            reasoning_effort="low",
            logit_bias={"50256": -100},
            presence_penalty=0.1,
            frequency_penalty=0.1,
            parallel_tool_calls=True,
            tools=TOOLS,
            tool_choice="auto",
        )
    )
    issue = await stack.wait_for_issue(1)
    assert "agent-run-7" in issue.body
    assert "nightly" in issue.body
    await stack.answer(1, "fine")
    completion = await asyncio.wait_for(pending, 10)
    assert completion.choices[0].message.content == "fine"


async def test_answer_longer_than_max_tokens_is_held_back(stack: Stack) -> None:
    """A person's words are never cut to fit max_tokens: the editor is asked to shorten them."""
    client = stack.openai()
    pending = asyncio.create_task(
        client.chat.completions.create(model="gpt-4o", messages=PROMPT, max_tokens=5)
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, "This answer is much longer than five tokens allow, surely.")
    await stack.settle()
    assert not pending.done()
    assert len(await bot_replies(stack, 1)) == 1
    await stack.answer(1, "Short.")
    assert (await asyncio.wait_for(pending, 10)).choices[0].message.content == "Short."
