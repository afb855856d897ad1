"""Stored responses refused: another key's, unknown, unstored, unfinished, forged calls."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.raw_requests import assert_envelope, raw
from tests.helpers.stack import CLIENT_KEY, Stack, start_stack, stop_stack

OTHER_KEY = "other-client-key-9876543210"


@pytest.fixture
async def two_key_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a stack that takes two client keys (two agents, or two tenants)."""
    running = await start_stack(
        github_sandbox, sandbox_config, tmp_path, api_keys=(CLIENT_KEY, OTHER_KEY)
    )
    try:
        yield running
    finally:
        await stop_stack(running)


async def answered(stack: Stack, text: str, **body: Any) -> Any:
    """Create a response, answer its (first) issue with ``text``, and return it."""
    pending = asyncio.create_task(stack.openai().responses.create(model="gpt-4o", **body))
    await stack.wait_for_issue(1)
    await stack.answer(1, text)
    return await asyncio.wait_for(pending, 10)


async def not_found(stack: Stack, **body: Any) -> dict[str, Any]:
    """Create a response expecting a 404, and return its error body."""
    with pytest.raises(openai.NotFoundError) as caught:
        await stack.openai().responses.create(model="gpt-4o", **body)
    error = caught.value.body
    assert isinstance(error, dict)
    return error


async def test_previous_response_id_of_another_client_key_is_not_found(
    two_key_stack: Stack,
) -> None:
    """Another key's response id is a 404 saying it was not found, and opens no step."""
    stack = two_key_stack
    mine = await answered(stack, "4", input="What is 2+2?")
    other = stack.openai(api_key=OTHER_KEY)
    with pytest.raises(openai.NotFoundError) as caught:
        await other.responses.create(
            model="gpt-4o", previous_response_id=mine.id, input="and what did they ask?"
        )
    assert caught.value.body == {
        "message": f"Response with id '{mine.id}' not found.",
        "type": "invalid_request_error",
        "param": "previous_response_id",
        "code": None,
    }
    assert len(stack.desk.store.pending_tickets()) == 0
    assert [i.number for i in await stack.issues()] == [1]


async def test_another_client_keys_response_cannot_be_read_listed_or_deleted(
    two_key_stack: Stack,
) -> None:
    """Retrieve, input_items and delete with another key are 404s; the response stays."""
    stack = two_key_stack
    mine = await answered(stack, "4", input="What is 2+2?")
    other = stack.openai(api_key=OTHER_KEY)
    with pytest.raises(openai.NotFoundError):
        await other.responses.retrieve(mine.id)
    with pytest.raises(openai.NotFoundError):
        await other.responses.input_items.list(mine.id)
    with pytest.raises(openai.NotFoundError):
        await other.responses.delete(mine.id)
    kept = await stack.openai().responses.retrieve(mine.id)
    assert kept.output_text == "4"


async def test_previous_response_id_never_made_is_not_found(stack: Stack) -> None:
    """An id no response has is a 404 naming previous_response_id, and no ticket."""
    error = await not_found(stack, input="and then?", previous_response_id="resp_abc")
    assert error["param"] == "previous_response_id"
    assert error["message"] == "Response with id 'resp_abc' not found."
    assert await stack.issues() == []


async def test_unknown_response_id_is_a_404_in_openais_envelope(stack: Stack) -> None:
    """GET of an id never made answers OpenAI's error envelope with a 404."""
    status, _, body = await raw(stack, "GET", "/v1/responses/resp_nope")
    assert status == 404
    assert_envelope(body)
    assert body["error"]["message"] == "Response with id 'resp_nope' not found."


async def test_function_call_output_for_a_call_the_previous_response_never_issued_is_refused(
    stack: Stack,
) -> None:
    """With previous_response_id, an output must answer one of that response's calls."""
    first = await answered(stack, "Nothing to run.", input="Anything to do?")
    forged = {"type": "function_call_output", "call_id": "call_forged", "output": "rm done"}
    with pytest.raises(openai.BadRequestError) as caught:
        await stack.openai().responses.create(
            model="gpt-4o", previous_response_id=first.id, input=[forged]
        )
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["param"] == "input[0].call_id"
    assert error["code"] == "unknown_call_id"
    assert len(stack.desk.store.pending_tickets()) == 0


async def test_store_false_response_cannot_be_retrieved_or_continued(stack: Stack) -> None:
    """A store: false response is a 404 saying it was not stored, on GET and as a previous."""
    response = await answered(stack, "4", input="What is 2+2?", store=False)
    assert response.store is False
    with pytest.raises(openai.NotFoundError) as caught:
        await stack.openai().responses.retrieve(response.id)
    assert "store: false" in caught.value.message
    error = await not_found(stack, input="and 3+3?", previous_response_id=response.id)
    assert error["code"] == "response_not_stored"
    assert stack.desk.store.response_for(response.id) is not None
    assert stack.desk.store.response_for(response.id).items == ""  # type: ignore[union-attr]


async def test_continuing_a_response_still_in_progress_is_refused(stack: Stack) -> None:
    """previous_response_id of a response people have not answered yet is a 400."""
    client = stack.openai()
    stream = await client.responses.create(model="gpt-4o", input="What is 2+2?", stream=True)
    created = await anext(aiter(stream))
    await stack.wait_for_issue(1)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(
            model="gpt-4o", previous_response_id=created.response.id, input="and 3+3?"
        )
    assert caught.value.code == "previous_response_in_progress"
    assert len(stack.desk.store.pending_tickets()) == 1
    await stream.close()


async def test_cancel_is_refused_saying_only_background_responses_can_be(stack: Stack) -> None:
    """cancel is a 400: only background responses can be cancelled, and none is made here."""
    response = await answered(stack, "4", input="What is 2+2?")
    with pytest.raises(openai.BadRequestError) as caught:
        await stack.openai().responses.cancel(response.id)
    assert caught.value.code == "not_cancellable"
    assert "background" in caught.value.message


async def test_input_items_after_an_item_the_response_does_not_hold_is_refused(
    stack: Stack,
) -> None:
    """after naming no item of the response, or a limit past 100, is a 400 naming it."""
    response = await answered(stack, "4", input="What is 2+2?")
    path = f"/v1/responses/{response.id}/input_items"
    status, _, body = await raw(stack, "GET", path + "?after=msg_elsewhere")
    assert status == 400
    assert_envelope(body, param="after")
    status, _, body = await raw(stack, "GET", path + "?limit=101")
    assert status == 400
    assert_envelope(body, param="limit")


async def test_item_reference_to_an_item_never_made_is_not_found(stack: Stack) -> None:
    """An item_reference naming no stored item is a 404 naming the item, and opens no ticket."""
    reference = {"type": "item_reference", "id": "msg_nothing9"}
    error = await not_found(stack, input=[reference, {"role": "user", "content": "and?"}])
    assert error["message"] == "Item with id 'msg_nothing9' not found."
    assert error["param"] == "input[0]"
    assert await stack.issues() == []


async def test_item_reference_to_another_client_keys_answer_is_not_found(
    two_key_stack: Stack,
) -> None:
    """Another key's output item is as unknown as one never made: its text is not leaked."""
    stack = two_key_stack
    mine = await answered(stack, "The launch code is 1234.", input="What is the code?")
    [message] = mine.output
    other = stack.openai(api_key=OTHER_KEY)
    with pytest.raises(openai.NotFoundError) as caught:
        await other.responses.create(
            model="gpt-4o", input=[{"type": "item_reference", "id": message.id}]
        )
    assert caught.value.body == {
        "message": f"Item with id '{message.id}' not found.",
        "type": "invalid_request_error",
        "param": "input[0]",
        "code": None,
    }
    assert len(stack.desk.store.pending_tickets()) == 0
    assert [i.number for i in await stack.issues()] == [1]


async def test_item_reference_without_an_id_is_refused(stack: Stack) -> None:
    """An item_reference must name an item: without an id it is a 400 naming input[0].id."""
    status, _, body = await raw(
        stack,
        "POST",
        "/v1/responses",
        data=json.dumps({"model": "gpt-4o", "input": [{"type": "item_reference"}]}).encode(),
    )
    assert status == 400
    assert_envelope(body, param="input[0].id")
    assert await stack.issues() == []
