"""Measure what the human desk costs per request: rendering, continuations, finding the run.

Issue 6 adds work to every request: the ticket (or a step comment) is rendered with every
agent text fenced and neutralised, prompts over GitHub's 65,536-character limit are split
into continuation comments, and each request is matched against the replies already
delivered to find the agent run it continues. None of it may slow a waiting agent down
noticeably, whatever the prompt's size or the number of runs in the store.

This measures, in-process and without a network:

- ``render_ticket`` of AutoGPT's captured step 1 and ``render_step`` of its step 2
  (``tests/samples/autogpt/run1_default``), median of 200;
- ``render_ticket`` of one user message of 100 KB, 1 MB and 4 MB (the proxy's largest
  accepted body), with the number of continuation comments;
- finding the run of a new step (fingerprints of its assistant messages, then one store
  lookup each, as ``Desk.submit`` does) with 1,000 and 100,000 delivered replies recorded
  in a SQLite store, median of 1,000.

Targets: the 4 MB prompt renders in under 2 s (it is posted once, and the desk renders
prompts of 200,000 characters or more in a worker thread, so waiting clients' heartbeats go
on meanwhile); finding the run takes under 1 ms at 100,000 replies. Before backtick fences
were sized with substring tests instead of listing every backtick run, the 4 MB prompt took
2.2 s.
Exits 1 if a target is missed. Run: ``python -m bench.desk_cost``.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ticketing.render.ticket import render_step, render_ticket
from ticketing.request import ChatRequest, Message, ToolCall
from ticketing.store.interface import TicketStore
from ticketing.store.sqlite import SQLiteTicketStore
from ticketing.threads import continuation_fingerprints, reply_fingerprint, step_delta

SAMPLES = Path(__file__).resolve().parents[1] / "tests" / "samples" / "autogpt" / "run1_default"
CREATED = datetime(2026, 11, 21, 20, 0, tzinfo=UTC)
DEADLINE = CREATED + timedelta(hours=1)
REPO = "acme/agent-desk"
SIZES = (100_000, 1_000_000, 4_000_000)
STORE_SIZES = (1_000, 100_000)
BIG_PROMPT_TARGET = 2.0  # seconds
LOOKUP_TARGET = 0.001  # seconds


def _captured(name: str) -> ChatRequest:
    body = json.loads((SAMPLES / name).read_text())["body"]
    messages = tuple(
        Message(
            role=m["role"],
            content=m.get("content") or "",
            tool_calls=tuple(
                ToolCall(
                    id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"]
                )
                for c in m.get("tool_calls") or ()
            ),
        )
        for m in body["messages"]
    )
    return ChatRequest(model=body["model"], messages=messages, client="autogpt", key="ab" * 16)


def _median(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _render(request: ChatRequest) -> object:
    return render_ticket(request, request_id="req_1", created=CREATED, deadline=DEADLINE, repo=REPO)


def _prose(size: int) -> str:
    line = "The quick brown fox jumps over the lazy dog; @someone said `code` and <!-- x -->.\n"
    return (line * (size // len(line) + 1))[:size]


def main() -> int:
    """Print the figures and return 1 if a target is missed."""
    missed: list[str] = []
    step1 = _captured("004_POST_v1_chat_completions.json")
    step2 = replace(_captured("006_POST_v1_chat_completions.json"), key="cd" * 16)
    echoed = next(m.content for m in step2.messages if m.role == "assistant")
    delta = step_delta(step1, step2, echoed=3)
    print("rendering (median):")
    print(f"  AutoGPT step 1 as an issue      {_median(lambda: _render(step1), 200) * 1e3:8.2f} ms")

    def step() -> object:
        return render_step(
            step2,
            step=2,
            new_from=delta.new_from,
            changed=delta.changed,
            tools_changed=False,
            request_id="req_2",
            created=CREATED,
            deadline=DEADLINE,
            repo=REPO,
            issue_number=12,
        )

    print(f"  AutoGPT step 2 as a comment     {_median(step, 200) * 1e3:8.2f} ms")
    for size in SIZES:
        request = ChatRequest(
            model="gpt-4o", messages=(Message("user", _prose(size)),), key="ef" * 16
        )
        start = time.perf_counter()
        rendered = render_ticket(
            request, request_id="req_3", created=CREATED, deadline=DEADLINE, repo=REPO
        )
        took = time.perf_counter() - start
        parts = len(rendered.continuations)
        print(f"  {size:>9,}-character prompt      {took * 1e3:8.1f} ms, {parts} continuation(s)")
        if size == SIZES[-1] and took > BIG_PROMPT_TARGET:
            missed.append(f"4 MB prompt took {took:.2f} s (target {BIG_PROMPT_TARGET} s)")
    print("finding the run of a new step (median):")
    for count in STORE_SIZES:
        with tempfile.TemporaryDirectory() as tmp:
            store = SQLiteTicketStore(Path(tmp) / "tickets.db")
            first = store.open_ticket("00", request_id="r", created=CREATED, deadline=DEADLINE)
            for index in range(count - 1):
                store.link_reply(f"{index:064x}", first.id)
            store.link_reply(reply_fingerprint(step1, echoed, ()), first.id)

            def lookup(store: TicketStore = store) -> object:
                for _, fingerprint in continuation_fingerprints(step2):
                    found = store.ticket_for_reply(fingerprint)
                    if found is not None:
                        return found
                raise AssertionError("the run was not found")

            took = _median(lookup, 1_000)
            store.close()
        print(f"  {count:>9,} delivered replies       {took * 1e6:8.1f} µs")
        if took > LOOKUP_TARGET:
            missed.append(f"lookup at {count} replies took {took * 1e3:.2f} ms")
    if missed:
        print("targets missed: " + "; ".join(missed))
        return 1
    print(
        f"targets met: 4 MB prompt under {BIG_PROMPT_TARGET:.0f} s,"
        f" finding a run under {LOOKUP_TARGET * 1e3:.0f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
