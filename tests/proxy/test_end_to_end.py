"""The whole path: openai client -> proxy -> GitHub issue -> signed comment -> completion."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

import aiohttp
import openai
import pytest

from tests.helpers.stack import REPO, Stack

PROMPT = [{"role": "user", "content": "Write the word hello into hello.txt, then finish."}]


async def test_openai_client_receives_the_signed_answer_as_its_completion(stack: Stack) -> None:
    """A request becomes issue #1; alice's signed comment becomes the completion."""
    client = stack.openai()
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    issue = await stack.wait_for_issue(1)
    assert {label.name for label in issue.labels} == {"ticketproxy", "awaiting-answer"}
    assert "Write the word hello" in issue.body
    await stack.answer(1, "Done: hello.txt now holds hello.")
    completion = await asyncio.wait_for(pending, 10)
    assert completion.object == "chat.completion"
    assert completion.model == "gpt-4o"
    assert completion.choices[0].message.role == "assistant"
    assert completion.choices[0].message.content == "Done: hello.txt now holds hello."
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.completion_tokens > 0
    await stack.desk.followups.drain()
    closed = await stack.wait_for_issue(1)
    assert closed.state == "closed"
    assert {label.name for label in closed.labels} == {"ticketproxy", "answered"}


async def test_sync_openai_client_receives_the_answer_too(stack: Stack) -> None:
    """The blocking ``OpenAI`` client, in its own thread, gets the same completion."""

    def ask() -> str | None:
        client = openai.OpenAI(base_url=stack.base_url, api_key="test-client-key-0123456789")
        with client:
            result = client.chat.completions.create(model="gpt-4", messages=PROMPT)
        return result.choices[0].message.content

    pending = asyncio.create_task(asyncio.to_thread(ask))
    await stack.wait_for_issue(1)
    await stack.answer(1, "hello from a person")
    assert await asyncio.wait_for(pending, 10) == "hello from a person"


async def test_models_are_listed_in_openai_shape(stack: Stack) -> None:
    """``GET /v1/models`` lists the configured ids and ``/models`` answers the same."""
    client = stack.openai()
    models = await client.models.list()
    assert [m.id for m in models.data] == ["gpt-4", "gpt-4-turbo", "gpt-4o", "gpt-3.5-turbo"]
    assert all(m.object == "model" and m.owned_by == "ticketproxy" for m in models.data)
    one = await client.models.retrieve("gpt-4o")
    assert one.id == "gpt-4o"
    async with (
        aiohttp.ClientSession() as http,
        http.get(
            stack.base_url.removesuffix("/v1") + "/models",
            headers={"Authorization": "Bearer test-client-key-0123456789"},
        ) as bare,
    ):
        listed = await bare.json()
    assert [m["id"] for m in listed["data"]] == [m.id for m in models.data]


async def test_retry_after_client_gave_up_reattaches_to_the_same_ticket(stack: Stack) -> None:
    """A client that gives up and retries the same request gets the answer from the one issue."""
    client = stack.openai()
    first = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    await stack.answer(1, "answered while the client was away")
    await stack.settle()
    retry = await asyncio.wait_for(
        client.chat.completions.create(model="gpt-4o", messages=PROMPT), 10
    )
    assert retry.choices[0].message.content == "answered while the client was away"
    assert [i.number for i in await stack.issues()] == [1]


async def test_concurrent_identical_requests_share_one_issue(stack: Stack) -> None:
    """Two identical requests in flight at once open one issue and get the same answer."""
    client = stack.openai()
    asks = [
        asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
        for _ in range(2)
    ]
    await stack.wait_for_issue(1)
    await stack.answer(1, "one answer")
    done = await asyncio.wait_for(asyncio.gather(*asks), 10)
    assert [c.choices[0].message.content for c in done] == ["one answer", "one answer"]
    assert done[0].id == done[1].id
    assert [i.number for i in await stack.issues()] == [1]


async def test_different_requests_get_different_issues_and_answers(stack: Stack) -> None:
    """Answers go to their own ticket: no answer is delivered to another request."""
    client = stack.openai()
    one = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    other = [{"role": "user", "content": "What is 2 + 2?"}]
    two = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=other))
    await stack.wait_for_issue(2)
    await stack.answer(2, "4")
    await stack.answer(1, "hello")
    first, second = await asyncio.wait_for(asyncio.gather(one, two), 10)
    assert first.choices[0].message.content == "hello"
    assert second.choices[0].message.content == "4"


async def test_heartbeats_outlast_a_short_client_read_timeout(stack: Stack) -> None:
    """With a 1 s read timeout, a human who takes 2.5 s still gets through: spaces keep it open."""
    client = stack.openai(timeout=openai.Timeout(1.0))
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    await asyncio.sleep(2.5)
    assert not pending.done()
    await stack.answer(1, "slow but sure")
    completion = await asyncio.wait_for(pending, 10)
    assert completion.choices[0].message.content == "slow but sure"


async def test_answer_given_before_the_proxy_polls_is_delivered_immediately_on_retry(
    stack: Stack,
) -> None:
    """An already-answered ticket answers a retry at once, with no heartbeat wait."""
    client = stack.openai()
    first = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    await stack.answer(1, "first delivery")
    assert (await asyncio.wait_for(first, 10)).choices[0].message.content == "first delivery"
    again = await asyncio.wait_for(
        client.chat.completions.create(model="gpt-4o", messages=PROMPT), 5
    )
    assert again.choices[0].message.content == "first delivery"
    assert len(await stack.issues()) == 1


async def test_issue_is_locked_so_only_collaborators_can_answer(stack: Stack) -> None:
    """Tickets are locked as they are created."""
    client = stack.openai()
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    issue = await stack.wait_for_issue(1)
    assert issue.locked is True
    await stack.answer(1, "ok")
    await asyncio.wait_for(pending, 10)


async def test_ticket_reference_names_the_repository_and_issue(stack: Stack) -> None:
    """The ``aud`` an editor signs is OWNER/REPO#N of the ticket's issue, as the client is told."""
    client = stack.openai()
    pending = asyncio.create_task(
        client.chat.completions.with_raw_response.create(model="gpt-4o", messages=PROMPT)
    )
    await stack.wait_for_issue(1)
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    assert stack.desk.ticket_ref(ticket) == f"{REPO}#1"
    await stack.answer(1, "signed for acme/agents#1")
    raw = await asyncio.wait_for(pending, 10)
    assert raw.headers["x-ticketproxy-ref"] == f"{REPO}#1"


async def test_identical_request_after_the_redeliver_window_opens_a_new_ticket(
    stack: Stack,
) -> None:
    """Within the window a repeat gets the same answer; after it, a new question is asked."""
    stack.desk.settings = replace(stack.desk.settings, redeliver_window=timedelta(seconds=1))
    client = stack.openai()
    first = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    await stack.answer(1, "first answer")
    assert (await asyncio.wait_for(first, 10)).choices[0].message.content == "first answer"
    repeat = await client.chat.completions.create(model="gpt-4o", messages=PROMPT)
    assert repeat.choices[0].message.content == "first answer"
    await asyncio.sleep(1.1)
    later = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(2)
    await stack.answer(2, "second answer")
    assert (await asyncio.wait_for(later, 10)).choices[0].message.content == "second answer"
