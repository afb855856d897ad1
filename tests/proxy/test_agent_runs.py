"""One issue per agent run: a captured AutoGPT run lands on one issue, a comment per step."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from openai.types.chat import ChatCompletion

from auth.keys import write_signing_key
from proxy.cli import main
from tests.helpers.agent_runs import pending_issue, signed_claims, wait_for_step
from tests.helpers.autogpt_samples import SAMPLES, editor_answer, load, replay_headers, send
from tests.helpers.review_flow import DANGEROUS, SHELL
from tests.helpers.stack import REPO, Stack
from ticketing.store.model import ThreadStart

RUN = SAMPLES / "run1_default"
STEP_1 = load(RUN / "004_POST_v1_chat_completions.json")
SUMMARY = load(RUN / "005_POST_v1_chat_completions.json")
STEP_2 = load(RUN / "006_POST_v1_chat_completions.json")
# What the editor answered at step 1: exactly what AutoGPT echoes back in its step 2.
STEP_1_REPLY = next(m["content"] for m in STEP_2["body"]["messages"] if m["role"] == "assistant")


async def _ask(stack: Stack, capture: dict[str, Any], *, answer: str, ticket: str) -> Any:
    """Send a captured request, answer its ticket signed for ``ticket``, return the reply."""
    pending = asyncio.create_task(send(stack, capture))
    number = await pending_issue(stack)
    body = stack.signed(answer, number=number, ticket=ticket)
    await stack.comment(number, body)
    status, raw = await asyncio.wait_for(pending, 10)
    assert status == 200, raw
    return ChatCompletion.model_validate_json(raw)


def chat(client: Any, text: str) -> asyncio.Task[Any]:
    """Start a one-message chat completion with ``client``."""
    messages = [{"role": "user", "content": text}]
    return asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=messages))


async def first_answered(stack: Stack, client: Any, text: str, answer: str) -> None:
    """Ask ``text`` as the run's first request (issue 1), answer it, and wait for delivery."""
    pending = chat(client, text)
    await stack.wait_for_issue(1)
    await stack.answer(1, answer)
    await asyncio.wait_for(pending, 10)


def _step_comments(comments: list[Any]) -> list[str]:
    return [c.body for c in comments if "<!-- ticketproxy:step " in c.body]


async def test_captured_autogpt_run_lands_on_one_issue_with_a_comment_per_step(
    stack: Stack,
) -> None:
    """Step 1 opens the issue; the summary side call and step 2 are step comments on it."""
    first = await _ask(stack, STEP_1, answer=STEP_1_REPLY, ticket=f"{REPO}#1")
    assert json.loads(first.choices[0].message.content or "") == json.loads(STEP_1_REPLY)
    summary = await _ask(stack, SUMMARY, answer="Wrote hello.txt.", ticket=f"{REPO}#1/2")
    assert summary.choices[0].message.content == "Wrote hello.txt."
    second = await _ask(stack, STEP_2, answer=editor_answer(STEP_2["body"]), ticket=f"{REPO}#1/3")
    assert "use_tool" in json.loads(second.choices[0].message.content or "")

    issues = await stack.issues()
    assert [i.number for i in issues] == [1]
    assert "Write the word hello into hello.txt" in issues[0].title
    await stack.desk.followups.drain()
    steps = _step_comments(await stack.comments(1))
    assert len(steps) == 2
    assert "## Step 2" in steps[0]
    assert "## Step 3" in steps[1]
    # Only what is new: the tool's result, not AutoGPT's 4,000-character system prompt again.
    assert "File hello.txt has been written successfully" in steps[1]
    assert "Play to your strengths as an LLM" not in steps[1]
    assert f"{REPO}#1/3" in steps[1]


async def test_signature_for_one_step_cannot_answer_the_next(stack: Stack) -> None:
    """An answer signed for step 1 (``#1``) is refused on step 2 (``#1/2``), with a reply."""
    await _ask(stack, STEP_1, answer=STEP_1_REPLY, ticket=f"{REPO}#1")
    pending = asyncio.create_task(send(stack, STEP_2))
    await pending_issue(stack)
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    assert ticket.step == 2
    await stack.comment(1, stack.signed(editor_answer(STEP_2["body"]), number=1))
    await stack.settle()
    replies = await stack.bot_replies(1, without=("delivered", "step"))
    assert any("signature is for another ticket" in r for r in replies), replies
    assert not pending.done()
    await stack.comment(
        1, stack.signed(editor_answer(STEP_2["body"]), number=1, ticket=f"{REPO}#1/2")
    )
    status, _ = await asyncio.wait_for(pending, 10)
    assert status == 200


async def test_unrelated_requests_open_issues_of_their_own(stack: Stack) -> None:
    """Two conversations that share nothing are two issues."""
    client = stack.openai()
    await first_answered(stack, client, "What is 2+2?", "4")
    second = chat(client, "Name a colour.")
    await stack.wait_for_issue(2)
    await stack.answer(2, "Blue")
    reply = await asyncio.wait_for(second, 10)
    assert reply.choices[0].message.content == "Blue"


async def test_a_chat_that_goes_on_becomes_the_next_step(stack: Stack) -> None:
    """A client that sends the answer back with a new question continues the same issue."""
    client = stack.openai()
    question = [{"role": "user", "content": "What is 2+2?"}]
    first = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=question))
    await stack.wait_for_issue(1)
    await stack.answer(1, "4")
    await asyncio.wait_for(first, 10)
    follow_up = [
        *question,
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "And times 3?"},
    ]
    second = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=follow_up))
    await wait_for_step(stack, 2)
    await stack.comment(1, stack.signed("12", number=1, ticket=f"{REPO}#1/2"))
    reply = await asyncio.wait_for(second, 10)
    assert reply.choices[0].message.content == "12"
    await stack.desk.followups.drain()
    issues = await stack.issues()
    assert [i.number for i in issues] == [1]
    # Reopened for step 2, closed again once step 2 was delivered.
    assert issues[0].state == "closed"
    assert {label.name for label in issues[0].labels} == {"ticketproxy", "answered"}


async def test_client_named_thread_keeps_unrelated_prompts_on_one_issue(stack: Stack) -> None:
    """With ``X-Ticketproxy-Thread`` two unrelated prompts land on one issue as two steps."""
    client = stack.openai(default_headers={"X-Ticketproxy-Thread": "nightly-run-42"})
    await first_answered(stack, client, "Plan the run.", "Plan: one step.")
    second = chat(client, "Now report.")
    await wait_for_step(stack, 2)
    await stack.comment(1, stack.signed("Reported.", number=1, ticket=f"{REPO}#1/2"))
    reply = await asyncio.wait_for(second, 10)
    assert reply.choices[0].message.content == "Reported."
    assert [i.number for i in await stack.issues()] == [1]


async def test_thread_header_that_is_too_long_is_a_clear_400(stack: Stack) -> None:
    """A thread name over 200 characters is refused in OpenAI's error envelope."""
    headers = replay_headers(STEP_1) | {"X-Ticketproxy-Thread": "x" * 201}
    url = stack.base_url + "/chat/completions"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json=STEP_1["body"], headers=headers) as response,
    ):
        assert response.status == 400
        error = (await response.json())["error"]
    assert error["code"] == "invalid_thread"
    assert error["param"] == "X-Ticketproxy-Thread"
    assert await stack.issues() == []


async def test_cli_answer_needs_the_step_once_a_run_has_several(
    stack: Stack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``answer <issue URL>`` refuses to guess a step; ``--step`` or the step's URL picks it."""
    await _ask(stack, STEP_1, answer=STEP_1_REPLY, ticket=f"{REPO}#1")
    pending = asyncio.create_task(send(stack, STEP_2))
    await wait_for_step(stack, 2)
    key = tmp_path / "alice.key"
    write_signing_key(key, stack.keys["alice"])
    answer = tmp_path / "answer.md"
    answer.write_text(editor_answer(STEP_2["body"]), encoding="utf-8")
    issue_url = f"{stack.sandbox.web_url}/{REPO}/issues/1"
    env = {"GITHUB_TOKEN": stack.token("alice")}

    def run(url: str, *extra: str) -> int:
        return main(["answer", url, "--key", str(key), "--file", str(answer), *extra], env)

    # A late answer for step 1 must not be signed for step 2 behind the editor's back.
    assert await asyncio.to_thread(run, issue_url) == 2
    assert "--step 2" in capsys.readouterr().err
    await stack.desk.followups.drain()
    step_comment = next(c for c in await stack.comments(1) if "<!-- ticketproxy:step 2 " in c.body)
    assert await asyncio.to_thread(run, f"{issue_url}#issuecomment-{step_comment.id}") == 0
    status, _ = await asyncio.wait_for(pending, 10)
    assert status == 200
    signed = [c.body for c in await stack.comments(1) if c.user.login == "alice"][-1]
    assert signed_claims(signed)["aud"] == f"{REPO}#1/2"


async def test_busy_named_run_keeps_its_name_when_a_parallel_request_opens_another_issue(
    stack: Stack,
) -> None:
    """While a named run has a step waiting, a second request opens issue 2; the name stays."""
    client = stack.openai(default_headers={"X-Ticketproxy-Thread": "run"})
    first = chat(client, "Step one.")
    await stack.wait_for_issue(1)
    parallel = chat(client, "Something else meanwhile.")
    await stack.wait_for_issue(2)
    await stack.answer(1, "one")
    await stack.answer(2, "else")
    await asyncio.wait_for(asyncio.gather(first, parallel), 10)
    follow = chat(client, "Step two.")
    await wait_for_step(stack, 2)
    ticket = next(t for t in stack.desk.store.pending_tickets() if t.step == 2)
    assert ticket.issue_number == 1
    await stack.comment(1, stack.signed("two", number=1, ticket=f"{REPO}#1/2"))
    reply = await asyncio.wait_for(follow, 10)
    assert reply.choices[0].message.content == "two"


async def test_step_never_confirmed_on_github_still_expires_on_its_runs_issue(
    stack: Stack,
) -> None:
    """A step whose client gave up before its comment was confirmed says so when it expires."""
    await _ask(stack, STEP_1, answer=STEP_1_REPLY, ticket=f"{REPO}#1")
    first = stack.desk.store.ticket_for_issue(1)
    assert first is not None
    assert first.thread_id is not None
    now = stack.clock()
    stuck = stack.desk.store.open_ticket(
        "ab" * 32,
        request_id="req_stuck",
        created=now,
        deadline=now + timedelta(minutes=1),
        client="autogpt",
        thread=ThreadStart(thread_id=first.thread_id, parent_id=first.id),
    )
    assert stuck.step == 2
    assert stuck.issue_number is None
    stack.clock.offset += timedelta(minutes=2)
    stack.desk.expire(stuck)
    await stack.desk.followups.drain()
    notices = await stack.bot_replies(1, without=("delivered", "step"))
    assert any("Step 2 of this agent run expired" in n for n in notices), notices


async def test_reviewer_approves_a_risky_answer_on_step_two_with_the_cli(
    stack: Stack, tmp_path: Path
) -> None:
    """``approve <issue URL>`` judges the step the bot asked about and signs for ``#1/2``."""
    client = stack.openai()
    question = [{"role": "user", "content": "Clean the build."}]
    first = asyncio.create_task(
        client.chat.completions.create(model="gpt-4o", messages=question, tools=SHELL)
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, "Which directory?")
    await asyncio.wait_for(first, 10)
    follow_up = [
        *question,
        {"role": "assistant", "content": "Which directory?"},
        {"role": "user", "content": "build/"},
    ]
    second = asyncio.create_task(
        client.chat.completions.create(model="gpt-4o", messages=follow_up, tools=SHELL)
    )
    await wait_for_step(stack, 2)
    await stack.comment(1, stack.signed(DANGEROUS, number=1, ticket=f"{REPO}#1/2"))
    await stack.settle()
    key = tmp_path / "bob.key"
    write_signing_key(key, stack.keys["bob"])
    url = f"{stack.sandbox.web_url}/{REPO}/issues/1"
    argv = ["approve", url, "--key", str(key), "--yes"]
    env = {"GITHUB_TOKEN": stack.token("bob")}
    assert await asyncio.to_thread(main, argv, env) == 0
    await stack.settle()
    reply = await asyncio.wait_for(second, 10)
    [call] = reply.choices[0].message.tool_calls or []
    assert call.function.name == "execute_shell"
    approval = [c.body for c in await stack.comments(1) if c.user.login == "bob"][-1]
    assert signed_claims(approval)["aud"] == f"{REPO}#1/2"


async def test_prompt_over_githubs_limit_continues_in_comments_and_is_answered(
    stack: Stack,
) -> None:
    """A 300,000-character prompt: the issue and its continuations hold all of it, in order."""
    lines = [f"line {index:06d}: the log the agent wants read" for index in range(7_500)]
    prompt = "\n".join(lines)
    assert len(prompt) > 300_000
    client = stack.openai()
    pending = asyncio.create_task(
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": prompt}]
        )
    )
    issue = await stack.wait_for_issue(1)
    parts = [c.body for c in await stack.comments(1)]
    assert len(issue.body) <= 65_536
    assert len(parts) >= 4
    assert all(len(part) <= 65_536 for part in parts)
    assert all("<!-- ticketproxy:reply continuation -->" in part for part in parts)
    everything = issue.body + "".join(parts)
    # Nothing was cut: every line of the prompt is on GitHub, the last one included.
    assert all(line in everything for line in (lines[0], lines[3_750], lines[-1]))
    await stack.answer(1, "Read it all.")
    reply = await asyncio.wait_for(pending, 10)
    assert reply.choices[0].message.content == "Read it all."
