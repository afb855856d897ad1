"""Tool calls re-sent as text (smolagents' ``Calling tools:``): read back, and runs matched."""

from __future__ import annotations

import json

import pytest

from tests.helpers.smolagents_runs import RUNS, parsed
from ticketing.echoed_calls import echoed_reply
from ticketing.request import ChatRequest, Message, ToolCall
from ticketing.threads import continuation_fingerprints, reply_fingerprint


def delivered(run: str, *, arguments: str = '{"city": "Paris"}') -> str:
    """Return the fingerprint of the reply step 1 of ``run`` was given."""
    content = RUNS[run]["first_answer"]["content"]
    call = ToolCall(id="call_ours", name="get_weather", arguments=arguments)
    return reply_fingerprint(parsed(run, 1), content, (call,))


def fingerprints(request: ChatRequest) -> set[str]:
    return {fingerprint for _, fingerprint in continuation_fingerprints(request)}


def test_smolagents_echo_is_read_as_its_call_with_arguments_as_an_object() -> None:
    """``Calling tools:`` and a Python list literal give back the call; no text beside it."""
    text = (
        "Calling tools:\n[{'id': 'call_1', 'type': 'function', 'function':"
        " {'name': 'get_weather', 'arguments': {'city': 'Paris'}}}]"
    )
    content, calls = echoed_reply(text) or ("?", ())
    assert content == ""
    assert [(c.id, c.name, json.loads(c.arguments)) for c in calls] == [
        ("call_1", "get_weather", {"city": "Paris"})
    ]


def test_smolagents_echo_keeps_the_text_written_beside_the_call() -> None:
    """Text before the marker line is the reply's content."""
    text = "Let me check.\nCalling tools:\n[{'function': {'name': 'f', 'arguments': '{}'}}]"
    assert echoed_reply(text) == ("Let me check.", (ToolCall(id="", name="f", arguments="{}"),))


@pytest.mark.parametrize(
    "text",
    [
        "Calling tools: are you?",
        "I was Calling tools:\n[{'function': {'name': 'f', 'arguments': {}}}]",
        "Calling tools:\n[]",
        "Calling tools:\n[{'function': {'name': 1, 'arguments': {}}}]",
        "Calling tools:\n[{'function': {'name': 'f', 'arguments': {1, 2}}}]",
        "Calling tools:\n__import__('os').system('true')",
        "Calling tools:\n" + "[" * 5000 + "]" * 5000,
        "Calling tools:\n[" + "1," * 60_000 + "]",
    ],
    ids=["no-list", "mid-line", "empty", "name-not-text", "set-arguments", "code", "deep", "huge"],
)
def test_text_that_only_looks_like_an_echo_is_not_one(text: str) -> None:
    """Code, deep or huge literals and malformed calls are no echo, and never raise."""
    assert echoed_reply(text) is None


@pytest.mark.parametrize("run", sorted(RUNS))
def test_smolagents_second_step_continues_the_reply_its_echo_repeats(run: str) -> None:
    """Step 2 of a recorded smolagents run names step 1's reply, with or without its text."""
    assert delivered(run) in fingerprints(parsed(run, 2))


def test_smolagents_echo_from_another_client_does_not_continue_the_run() -> None:
    """The same echoed call from another client key is another run."""
    assert delivered("call_only") not in fingerprints(parsed("call_only", 2, client="other"))


def test_smolagents_echo_of_other_arguments_does_not_continue_the_run() -> None:
    """A call to the same tool with other arguments is not the reply that was given."""
    tokyo = delivered("call_only", arguments='{"city": "Tokyo"}')
    assert tokyo not in fingerprints(parsed("call_only", 2))


def test_similar_echo_under_another_system_prompt_does_not_continue_the_run() -> None:
    """Another agent that writes the same ``Calling tools:`` text is not this run."""
    step2 = parsed("call_only", 2)
    other = ChatRequest(
        model=step2.model,
        messages=(Message("system", "You are another agent."), *step2.messages[1:]),
        client=step2.client,
    )
    assert delivered("call_only") not in fingerprints(other)
