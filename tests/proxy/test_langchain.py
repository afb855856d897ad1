"""LangChain's ChatOpenAI pointed at ticketproxy: plain answers, tool calls and streaming."""

from __future__ import annotations

import asyncio
import json

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from tests.helpers.stack import CLIENT_KEY, Stack

QUESTION = "What files are in the workspace?"


@tool
def list_folder(folder: str) -> str:
    """List the files in a folder."""
    return folder


def chat_model(stack: Stack) -> ChatOpenAI:
    """Return LangChain's OpenAI chat model aimed at the proxy, with retries off."""
    return ChatOpenAI(base_url=stack.base_url, api_key=CLIENT_KEY, model="gpt-4o", max_retries=0)


async def test_langchain_ainvoke_is_answered_by_a_signed_comment(stack: Stack) -> None:
    """``ainvoke`` opens a ticket and returns the signed answer as the AIMessage's content."""
    pending = asyncio.create_task(chat_model(stack).ainvoke(QUESTION))
    issue = await stack.wait_for_issue(1)
    assert QUESTION in issue.body
    await stack.answer(1, "README.md and hello.txt")
    message = await asyncio.wait_for(pending, 10)
    assert isinstance(message, AIMessage)
    assert message.content == "README.md and hello.txt"
    assert message.tool_calls == []


async def test_langchain_bound_tools_receive_a_tool_call_block_as_tool_calls(
    stack: Stack,
) -> None:
    """With ``bind_tools``, a fenced tool_call answer becomes ``AIMessage.tool_calls``."""
    bound = chat_model(stack).bind_tools([list_folder])
    pending = asyncio.create_task(bound.ainvoke(QUESTION))
    issue = await stack.wait_for_issue(1)
    assert "list_folder" in issue.body
    block = json.dumps({"name": "list_folder", "arguments": {"folder": "."}})
    await stack.answer(1, f"```tool_call\n{block}\n```")
    message = await asyncio.wait_for(pending, 10)
    assert isinstance(message, AIMessage)
    [call] = message.tool_calls
    assert call["name"] == "list_folder"
    assert call["args"] == {"folder": "."}
    assert (call["id"] or "").startswith("call_")
    assert message.response_metadata["finish_reason"] == "tool_calls"


async def test_langchain_astream_yields_the_answer_text(stack: Stack) -> None:
    """``astream`` waits through the heartbeats and yields the answer's text."""

    async def collect() -> str:
        pieces: list[str] = []
        async for chunk in chat_model(stack).astream(QUESTION):
            assert isinstance(chunk.content, str)
            pieces.append(chunk.content)
        return "".join(pieces)

    pending = asyncio.create_task(collect())
    await stack.wait_for_issue(1)
    await stack.answer(1, "Streamed from a person: README.md")
    assert await asyncio.wait_for(pending, 10) == "Streamed from a person: README.md"
