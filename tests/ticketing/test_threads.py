"""Which earlier ticket a request continues, and what a step comment must show (pure)."""

from __future__ import annotations

import json

from tests.helpers.autogpt_samples import captured_request
from ticketing.request import ChatRequest, Message, ToolCall, ToolSpec
from ticketing.threads import (
    continuation_fingerprints,
    is_side_call,
    named_thread_key,
    reply_fingerprint,
    step_delta,
    tools_changed,
)


def _echoed_reply(step2: ChatRequest) -> str:
    return next(m.content for m in step2.messages if m.role == "assistant")


def test_autogpt_next_step_is_matched_to_the_reply_it_echoes() -> None:
    """AutoGPT's step 2 echoes step 1's reply re-indented: it still names step 1's reply."""
    step1 = captured_request("run1_default", "004_POST_v1_chat_completions.json")
    step2 = captured_request("run1_default", "006_POST_v1_chat_completions.json")
    sent = json.dumps(json.loads(_echoed_reply(step2)))  # compact, as an editor might sign it
    delivered = reply_fingerprint(step1, sent, ())
    found = {fp: index for index, fp in continuation_fingerprints(step2)}
    assert found.get(delivered) == 3


def test_autogpt_function_calling_step_is_matched_by_its_tool_call() -> None:
    """In OPENAI_FUNCTIONS mode the echoed tool call (arguments as an object) still matches."""
    step1 = captured_request("run2_functions", "004_POST_v1_chat_completions.json")
    step2 = captured_request("run2_functions", "006_POST_v1_chat_completions.json")
    echoed = next(m for m in step2.messages if m.role == "assistant")
    assert echoed.tool_calls, "the captured functions run echoes a tool call"
    call = echoed.tool_calls[0]
    compact = json.dumps(json.loads(call.arguments), separators=(",", ":"))
    sent = ToolCall(id="call_other_id", name=call.name, arguments=compact)
    delivered = reply_fingerprint(step1, echoed.content, (sent,))
    assert delivered in {fp for _, fp in continuation_fingerprints(step2)}


def test_same_reply_from_another_client_does_not_continue_the_run() -> None:
    """Two clients given the same reply are two runs: the client is part of the fingerprint."""
    step1 = captured_request("run1_default", "004_POST_v1_chat_completions.json")
    step2 = captured_request(
        "run1_default", "006_POST_v1_chat_completions.json", client="someone-else"
    )
    delivered = reply_fingerprint(step1, _echoed_reply(step2), ())
    assert delivered not in {fp for _, fp in continuation_fingerprints(step2)}


def test_same_reply_under_another_system_prompt_does_not_continue_the_run() -> None:
    """Two agents given "OK" are not one run: the first system message anchors the thread."""
    first = ChatRequest(
        model="m",
        messages=(Message("system", "You are A."), Message("user", "go")),
        client="c",
    )
    other = ChatRequest(
        model="m",
        messages=(
            Message("system", "You are B."),
            Message("user", "go"),
            Message("assistant", "OK"),
            Message("user", "next"),
        ),
        client="c",
    )
    assert reply_fingerprint(first, "OK", ()) not in {
        fp for _, fp in continuation_fingerprints(other)
    }


def test_different_reply_text_does_not_continue_the_run() -> None:
    """Whitespace may change in the echo, words may not."""
    first = ChatRequest(model="m", messages=(Message("user", "hi"),), client="c")
    later = ChatRequest(
        model="m",
        messages=(
            Message("user", "hi"),
            Message("assistant", "Hello  there \r\n"),
            Message("user", "and?"),
        ),
        client="c",
    )
    fingerprints = {fp for _, fp in continuation_fingerprints(later)}
    assert reply_fingerprint(first, "Hello  there", ()) in fingerprints
    assert reply_fingerprint(first, "Hello there", ()) not in fingerprints


def test_step_delta_of_autogpt_shows_only_the_tool_result_and_instruction() -> None:
    """After the echoed reply come the command's result and the step instruction: only those."""
    step1 = captured_request("run1_default", "004_POST_v1_chat_completions.json")
    step2 = captured_request("run1_default", "006_POST_v1_chat_completions.json")
    delta = step_delta(step1, step2, echoed=3)
    assert delta.new_from == 4
    assert delta.changed == ()


def test_step_delta_names_earlier_messages_that_changed() -> None:
    """A refreshed clock message before the echoed reply is shown as changed."""
    step1 = ChatRequest(
        model="m",
        messages=(Message("system", "S"), Message("system", "clock 1"), Message("user", "go")),
    )
    step2 = ChatRequest(
        model="m",
        messages=(
            Message("system", "S"),
            Message("system", "clock 2"),
            Message("assistant", "did it"),
            Message("user", "result"),
        ),
    )
    delta = step_delta(step1, step2, echoed=2)
    assert delta == step_delta(step1, step2, echoed=2)
    assert delta.new_from == 3
    assert delta.changed == (1,)


def test_step_delta_without_an_echo_starts_after_the_shared_prefix() -> None:
    """A thread named by the client shows what follows the messages both requests share."""
    a = ChatRequest(model="m", messages=(Message("user", "one"), Message("user", "two")))
    b = ChatRequest(
        model="m",
        messages=(Message("user", "one"), Message("user", "two"), Message("user", "three")),
    )
    assert step_delta(a, b, echoed=None).new_from == 2
    # The very same conversation again still shows its last message.
    assert step_delta(a, a, echoed=None).new_from == 1


def test_tools_changed_compares_tools_and_formats() -> None:
    """A step with the same tools says so; a new tool is a change."""
    base = ChatRequest(model="m", messages=(), tools=(ToolSpec(name="ls"),))
    same = ChatRequest(model="m", messages=(Message("user", "x"),), tools=(ToolSpec(name="ls"),))
    more = ChatRequest(model="m", messages=(), tools=(ToolSpec(name="ls"), ToolSpec(name="rm")))
    assert not tools_changed(base, same)
    assert tools_changed(base, more)


def test_autogpt_summary_call_is_a_side_call_and_a_step_is_not() -> None:
    """AutoGPT's condense-the-step call is a side call; its steps and plain chats are not."""
    summary = captured_request("run1_default", "005_POST_v1_chat_completions.json")
    step = captured_request("run1_default", "006_POST_v1_chat_completions.json")
    chat = ChatRequest(model="m", messages=(Message("user", "hi"),))
    assert is_side_call(summary)
    assert not is_side_call(step)
    assert not is_side_call(chat)


def test_thread_names_are_private_to_each_client() -> None:
    """The same thread name from two clients names two threads."""
    assert named_thread_key("a", "run-1") != named_thread_key("b", "run-1")
    assert named_thread_key("a", "run-1") == named_thread_key("a", "run-1")
