"""A shell tool, a dangerous command that needs review, a safe answer, and asking for them.

The review policy holds ``execute_*`` commands until a security reviewer signs an approval;
tests of the review flow, the desk, reactions and the desk page all use these.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.helpers.stack import Stack

PROMPT = [{"role": "user", "content": "Clean up the build folder."}]
SHELL: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "execute_shell",
            "description": "Run a shell command.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    }
]
DANGEROUS = '```tool_call\n{"name": "execute_shell", "arguments": {"command": "rm -rf build"}}\n```'
SAFE = "Nothing to do: the build folder is already empty."


async def ask(stack: Stack) -> asyncio.Task[Any]:
    """Ask for a command and wait for the ticket."""
    client = stack.openai()
    task = asyncio.create_task(
        client.chat.completions.create(model="gpt-4o", messages=PROMPT, tools=SHELL)
    )
    await stack.wait_for_issue(1)
    return task
