"""The bot's refusal replies quote values redacted, as the ticket body shows them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.helpers.stack import Stack

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5" * 4  # the shape of a token only
PROMPT = [{"role": "user", "content": "How many people live in Paris?"}]
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["city", "population"],
}
CITY: Any = {"type": "json_schema", "json_schema": {"name": "city", "schema": SCHEMA}}


async def test_secret_quoted_in_a_refusal_reply_is_redacted_on_github(stack: Stack) -> None:
    """An answer refused for a value holding a token gets a reply that names the kind, not it."""
    client = stack.openai()
    pending = asyncio.create_task(
        client.chat.completions.create(model="gpt-4o", messages=PROMPT, response_format=CITY)
    )
    await stack.wait_for_issue(1)
    answer = json.dumps({"city": "Paris", "population": f"ask with {GITHUB_TOKEN}"})
    await stack.answer(1, answer)
    await stack.settle()
    assert not pending.done()
    replies = [reply.replace("\\", "") for reply in await stack.bot_replies(1)]  # unescaped
    assert len(replies) == 1
    assert "population" in replies[0]
    assert GITHUB_TOKEN[:12] not in replies[0]
    assert "[redacted GitHub token]" in replies[0]
    pending.cancel()
