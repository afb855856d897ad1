"""Replay what a real AutoGPT sent, answer each ticket, and check AutoGPT can use the reply."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from openai.types import Model
from openai.types.chat import ChatCompletion

from tests.helpers.autogpt_samples import SAMPLES, editor_answer, load, send
from tests.helpers.stack import Stack

CAPTURES = sorted(SAMPLES.glob("run*/*.json"))


def autogpt_accepts(body: dict[str, Any], completion: ChatCompletion) -> None:
    """Apply AutoGPT's own parsing rule for the reply to this request."""
    message = completion.choices[0].message
    content = message.content or ""
    if body["model"] == "gpt-3.5-turbo":
        # The history summary: any text.
        assert content.strip()
        return
    reply = json.loads(content)
    if body.get("tools"):
        # OPENAI_FUNCTIONS mode: thoughts in the content, the command as a tool call.
        assert "thoughts" in reply
        offered = {t["function"]["name"] for t in body["tools"]}
        calls = message.tool_calls or []
        assert len(calls) == 1
        assert calls[0].function.name in offered
        assert isinstance(json.loads(calls[0].function.arguments), dict)
        return
    assert set(reply) >= {"thoughts", "use_tool"}
    assert isinstance(reply["use_tool"]["name"], str)
    assert isinstance(reply["use_tool"]["arguments"], dict)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
async def test_captured_autogpt_request_gets_a_reply_autogpt_accepts(
    stack: Stack, path: Path
) -> None:
    """Each captured request is answered through a signed comment and parses as AutoGPT needs."""
    capture = load(path)
    if capture["method"] == "GET":
        status, raw = await send(stack, capture)
        assert status == 200
        listed = json.loads(raw)
        assert {"gpt-4-turbo", "gpt-3.5-turbo"} <= {
            Model.model_validate(m).id for m in listed["data"]
        }
        return
    body = capture["body"]
    pending = asyncio.create_task(send(stack, capture))
    await stack.wait_for_issue(1)
    await stack.answer(1, editor_answer(body))
    status, raw = await asyncio.wait_for(pending, 10)
    assert status == 200
    completion = ChatCompletion.model_validate_json(raw)
    assert completion.model == body["model"]
    autogpt_accepts(body, completion)


async def test_autogpt_functions_step_answered_with_text_only_is_held_then_a_call_released(
    stack: Stack,
) -> None:
    """A text-only answer to a functions-mode step is held with a reply; a tool call releases."""
    capture = load(SAMPLES / "run2_functions" / "004_POST_v1_chat_completions.json")
    pending = asyncio.create_task(send(stack, capture))
    await stack.wait_for_issue(1)
    await stack.answer(1, "I wrote hello.txt for you.")
    await stack.settle()
    (reply,) = await stack.bot_replies(1)
    # The reply escapes markdown punctuation; the sentence is read without the escapes.
    assert "runs its next command from a tool call, and the answer has none" in reply.replace(
        "\\", ""
    )
    assert not pending.done()
    await stack.answer(1, editor_answer(capture["body"]))
    status, raw = await asyncio.wait_for(pending, 10)
    assert status == 200
    autogpt_accepts(capture["body"], ChatCompletion.model_validate_json(raw))
