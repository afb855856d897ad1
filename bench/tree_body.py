"""Measure the body of step 200 of a long run: its size on GitHub and the time to render it.

A run past ``TICKETPROXY_TREE_AFTER_STEPS`` (50, the default) opens each later step as a child
issue (``ticketing.tree``), whose body shows the run's trimmed context
(``ticketing.render.tree_context``) instead of the whole conversation. Step 200 is the child
at index 149: under the root hang steps 51 to 150, and step 200 hangs under step 150 (the
second block of 100), so its open path is the root and step 150, with 148 closed sub-issues
off that path (a few of them expired, stale).

This builds that run in memory, as the desk would read it from its store: a conversation of
200 steps (a user question of about 300 characters and an answer of about 400 per step, as
an agent loop sends them), every earlier step answered and signed, and renders step 200's
issue with the same pure functions the desk calls. Without a network and without a clock
but the timer.

Target: the body under 20 kB (20,000 characters; GitHub's limit is 65,536), however long the
run. Prints the size, the number of continuation comments (0 expected), and the median render
time of 50. Exits 1 if the target is missed. Run: ``python -m bench.tree_body``.
"""

from __future__ import annotations

import hashlib
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta

from ticketing.render.tree_context import (
    PathStep,
    Subtree,
    render_child_ticket,
    render_tree_context,
)
from ticketing.request import ChatRequest, Message
from ticketing.tree import child_slot, first_child_step

AFTER = 50
STEP = 200
REPO = "acme/agent-desk"
CREATED = datetime(2026, 11, 21, 20, 0, tzinfo=UTC)
TARGET = 20_000  # characters
ROUNDS = 50


def question(step: int) -> str:
    """Return step ``step``'s question, about 300 characters like an agent loop's."""
    return (
        f"Step {step}: the build of service-{step % 7} failed at stage {step % 5}. "
        "Here is the tail of the log: ERROR connection refused while fetching the artifact "
        "from the internal registry; retried 3 times with back-off. Should I switch to the "
        "mirror, rerun the stage, or stop and report? Reply with the next command to run."
    )


def answer(step: int) -> str:
    """Return an editor's signed answer to step ``step``, about 400 characters."""
    return (
        f"Switch to the mirror for service-{step % 7}: set REGISTRY=mirror.internal and rerun "
        f"stage {step % 5} only. If it fails again with the same error, stop and report the "
        "last 50 lines of the log together with the output of `curl -sI https://mirror."
        "internal/health`. Do not touch the production deploy job, and do not change the "
        "retry settings: the registry team is aware of the outage and is working on it."
    )


def issue_number(step: int) -> int:
    """Return the child issue of a step past the threshold (issue 1 is the root)."""
    return step - AFTER + 1


def build() -> tuple[ChatRequest, list[PathStep], list[Subtree], int]:
    """Return step 200's request, its open path, the subtrees off it, where its news start."""
    messages = [Message(role="system", content="You are a build agent. Ask before acting.")]
    for step in range(1, STEP):
        messages += [
            Message(role="user", content=question(step)),
            Message(role="assistant", content=answer(step)),
        ]
    new_from = len(messages)
    messages.append(Message(role="user", content=question(STEP)))
    request = ChatRequest(model="gpt-4o", messages=tuple(messages), client="bench", key="ab" * 32)
    slot = child_slot(STEP, AFTER)
    assert slot is not None
    chain: list[int] = []
    parent = slot.parent_step(AFTER)
    while parent is not None:
        chain.insert(0, parent)
        above = child_slot(parent, AFTER)
        parent = None if above is None else above.parent_step(AFTER)
    path = [PathStep(1, 1, question(1), answer(1), "alice")]
    path += [PathStep(issue_number(s), s, question(s), answer(s), "alice") for s in chain]
    subtrees = []
    for step in range(first_child_step(AFTER), STEP):
        if step in chain:
            continue
        number = issue_number(step)
        if step % 37 == 0:
            subtrees.append(Subtree(number, step, question(step), "expired"))
            continue
        subtrees.append(
            Subtree(
                number,
                step,
                question(step),
                "answered",
                signer="alice",
                digest=hashlib.sha256(answer(step).encode()).hexdigest(),
                answer_url=(
                    f"https://github.com/{REPO}/issues/{number}#issuecomment-{2_512_000_000 + step}"
                ),
            )
        )
    return request, path, subtrees, new_from


def main() -> int:
    """Render step 200's body ``ROUNDS`` times; print its size and the median time."""
    request, path, subtrees, new_from = build()
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        context = render_tree_context(path, subtrees)
        rendered = render_child_ticket(
            request,
            context=context,
            new_from=new_from,
            request_id="req_bench",
            created=CREATED,
            deadline=CREATED + timedelta(hours=1),
            repo=REPO,
        )
        times.append(time.perf_counter() - started)
    size = len(rendered.body)
    whole = sum(len(m.content) for m in request.messages)
    print(f"step {STEP} of a run (children after step {AFTER}): conversation {whole:,} characters")
    print(f"  child issue body: {size:,} characters, {len(rendered.continuations)} continuations")
    print(f"  trimmed context: {len(context):,} characters (new messages from index {new_from})")
    print(
        f"  render (context and body), median of {ROUNDS}: {statistics.median(times) * 1000:.2f} ms"
    )
    met = size < TARGET and not rendered.continuations
    print(f"  target: body under {TARGET:,} characters: {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
