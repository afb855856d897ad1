"""One thread per agent run: which earlier ticket a new request continues, and what is new.

Pure: no I/O, no clock. An agent's next step sends the conversation again, with the reply it
was given as an ``assistant`` message and the result of acting on it after that. So a new
request *continues* an earlier ticket when one of its assistant messages is the reply that
ticket delivered, to the same client, under the same first (system) message. Agents do not
echo a reply byte for byte (AutoGPT re-indents its JSON, clients re-serialise tool-call
arguments), so replies are compared as JSON values when they are JSON, and with whitespace
normalised otherwise; tool-call ids are ignored (clients may rename them). An assistant
message that re-sends the reply's tool calls as text (smolagents' ``Calling tools:``, read by
:mod:`ticketing.echoed_calls`) stands for the same reply.

Everything else in the request may change between steps: AutoGPT moves its step instruction
to the end and refreshes a clock message before the echoed reply. :func:`step_delta` says
which messages a step comment must show: those after the echoed reply, and earlier ones that
were not in the previous step's request.

A client can also name the thread itself (the ``X-Ticketproxy-Thread`` header): then
:func:`named_thread_key` ties every request with that name, from that client, to one issue.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ticketing.echoed_calls import echoed_reply
from ticketing.request import ChatRequest, Message, ToolCall

__all__ = [
    "StepDelta",
    "continuation_fingerprints",
    "is_side_call",
    "named_thread_key",
    "reply_fingerprint",
    "step_delta",
    "tools_changed",
]

# A thread name is a label, not a document: refuse anything longer (the proxy answers 400).
THREAD_NAME_LIMIT = 200


def _canonical_text(text: str) -> Any:
    """Return a reply's text in a form that survives re-serialisation by the agent."""
    stripped = text.strip()
    if stripped[:1] in {"{", "["}:
        try:
            return {"json": json.loads(stripped)}
        except (ValueError, RecursionError):
            pass
    # Line endings and trailing spaces are what clients and editors change without meaning to.
    lines = [line.rstrip() for line in stripped.replace("\r\n", "\n").split("\n")]
    return {"text": "\n".join(lines)}


def _canonical_arguments(arguments: str) -> Any:
    try:
        return {"json": json.loads(arguments)}
    except (ValueError, RecursionError):
        return {"text": arguments.strip()}


def _anchor(request: ChatRequest) -> str:
    """Return what must stay the same across the steps of a run: the first system message."""
    first = request.messages[0] if request.messages else None
    if first is None or first.role not in {"system", "developer"}:
        return ""
    return first.content


def reply_fingerprint(
    request: ChatRequest, content: str | None, tool_calls: Sequence[ToolCall]
) -> str:
    """Name the reply a request received, so that the agent's next step can be matched to it.

    Keyed by the client and the request's first system message, so that two agents (or two
    clients) given the same reply ("OK") are not taken for one run.
    """
    value = {
        "client": request.client,
        "anchor": hashlib.sha256(_anchor(request).encode("utf-8", "surrogatepass")).hexdigest(),
        "content": _canonical_text(content or ""),
        "tool_calls": [[call.name, _canonical_arguments(call.arguments)] for call in tool_calls],
    }
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def continuation_fingerprints(request: ChatRequest) -> list[tuple[int, str]]:
    """Return (index, fingerprint) of each assistant message, newest first.

    The desk looks each fingerprint up among delivered replies: the newest match names the
    ticket this request continues.
    """
    found = []
    for index in range(len(request.messages) - 1, -1, -1):
        message = request.messages[index]
        if message.role == "assistant":
            found.append((index, reply_fingerprint(request, message.content, message.tool_calls)))
            echo = None if message.tool_calls else echoed_reply(message.content)
            if echo is not None:
                found.append((index, reply_fingerprint(request, *echo)))
    return found


# Requests an agent makes *about* its run rather than as a step of it. AutoGPT (agpt 0.5, see
# tests/samples/autogpt/run1_default/005) condenses each executed step into one line with a
# separate call, usually to a cheaper model: it belongs with the run it summarises.
_SIDE_CALL_PROMPTS = (
    "The user is going to give you a text enclosed in triple quotes. The text represents an"
    " action, the reason for its execution, and its result. Condense the action taken and its"
    " result into one line.",
)


def is_side_call(request: ChatRequest) -> bool:
    """Say whether a request is a known side call of an agent run (AutoGPT's step summary)."""
    if any(m.role == "assistant" for m in request.messages):
        return False
    prompt = request.system_prompt.strip()
    return any(prompt.startswith(known) for known in _SIDE_CALL_PROMPTS)


def named_thread_key(client: str, name: str) -> str:
    """Return the key of the thread a client named, private to that client."""
    canonical = json.dumps({"client": client, "thread": name}, sort_keys=True)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class StepDelta:
    """What a step comment shows: messages from ``new_from`` on, and ``changed`` earlier ones."""

    new_from: int
    changed: tuple[int, ...]


def _same(a: Message, b: Message) -> bool:
    return (
        a.role == b.role
        and _canonical_text(a.content) == _canonical_text(b.content)
        and [(c.name, _canonical_arguments(c.arguments)) for c in a.tool_calls]
        == [(c.name, _canonical_arguments(c.arguments)) for c in b.tool_calls]
        and a.tool_call_id == b.tool_call_id
        and a.name == b.name
    )


def step_delta(previous: ChatRequest, current: ChatRequest, *, echoed: int | None) -> StepDelta:
    """Say which of ``current``'s messages are new since ``previous`` (the earlier step).

    ``echoed`` is the index of the assistant message that repeats the earlier step's reply:
    everything after it is new. Without one (a thread named by the client), the new part
    starts after the longest prefix the two requests share. Earlier messages that the
    previous request did not hold (a refreshed clock, an edited instruction) are ``changed``.
    """
    messages = current.messages
    if echoed is not None:
        new_from = echoed + 1
    else:
        new_from = 0
        for old, new in zip(previous.messages, messages, strict=False):
            if not _same(old, new):
                break
            new_from += 1
        if new_from == len(messages) and messages:
            # The same conversation again: show its last message rather than nothing.
            new_from = len(messages) - 1
    changed = tuple(
        index
        for index in range(new_from)
        if index != echoed and not any(_same(messages[index], old) for old in previous.messages)
    )
    return StepDelta(new_from=new_from, changed=changed)


def tools_changed(previous: ChatRequest, current: ChatRequest) -> bool:
    """Say whether the tools, tool choice or response format differ from the earlier step."""
    return (
        previous.tools != current.tools
        or previous.tool_choice != current.tool_choice
        or previous.response_format != current.response_format
        or previous.legacy_functions != current.legacy_functions
    )
