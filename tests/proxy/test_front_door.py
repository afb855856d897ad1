"""Tests for proxy.front_door: what a waiting completion holds while people think.

Ten thousand completions may wait at once (``bench.concurrent_waits``), so every coroutine
frame and object a wait keeps alive is paid ten thousand times. These read the coroutine
chain of a real waiting request on a real stack.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from types import CoroutineType, FrameType
from typing import Any

from aiohttp import web

from tests.helpers.stack import Stack
from ticketing.request import ChatRequest
from ticketing.store.model import Ticket

PROMPT = [{"role": "user", "content": "How many files are in the repository?"}]


def awaited_chain(task: asyncio.Task[Any]) -> Iterator[CoroutineType[Any, Any, Any]]:
    """Yield the coroutines a task is suspended in, outermost first."""
    coro: Any = task.get_coro()
    while isinstance(coro, CoroutineType):
        yield coro
        coro = coro.cr_await


def waiting_chain() -> list[CoroutineType[Any, Any, Any]]:
    """Return the coroutines of the one request waiting in the heartbeat loop."""
    chains = [list(awaited_chain(task)) for task in asyncio.all_tasks()]
    [chain] = [c for c in chains if any(co.__qualname__ == "send_after_wait" for co in c)]
    return chain


async def wait_in_heartbeats(stack: Stack) -> tuple[asyncio.Task[Any], list[Any]]:
    """Start one completion, and return it once it waits in its heartbeat loop."""
    pending = asyncio.create_task(
        stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    await stack.wait_for_issue(1)
    for _ in range(200):
        chains = [list(awaited_chain(task)) for task in asyncio.all_tasks()]
        if any(co.__qualname__ == "send_after_wait" for c in chains for co in c):
            return pending, waiting_chain()
        await asyncio.sleep(0.01)
    raise AssertionError("the completion never reached its heartbeat loop")


async def test_a_waiting_completion_holds_one_middleware_frame_and_one_flow_frame(
    stack: Stack,
) -> None:
    """Below aiohttp's own frames, a wait holds the front door, the flow and the heartbeats."""
    pending, chain = await wait_in_heartbeats(stack)
    try:
        names = [co.__qualname__ for co in chain]
        below_app = names[names.index("Application._handle") + 1 :]
        assert below_app == [
            # aiohttp's own, added to every app with middlewares.
            "_fix_request_current_app.<locals>.impl",
            "front_door.<locals>.front",
            "answer_with",
            "send_after_wait",
        ]
    finally:
        pending.cancel()


async def test_a_waiting_completion_holds_neither_its_ticket_nor_its_request(
    stack: Stack,
) -> None:
    """No frame of a wait keeps the ticket or the parsed request (prompts are big)."""
    pending, chain = await wait_in_heartbeats(stack)
    try:
        frames: list[FrameType] = [co.cr_frame for co in chain]
        held = [
            (frame.f_code.co_qualname, name)
            for frame in frames
            for name, value in frame.f_locals.items()
            if isinstance(value, (Ticket, ChatRequest))
        ]
        assert held == []
    finally:
        pending.cancel()


async def test_the_json_check_leaves_no_parsed_content_type_on_a_waiting_request(
    stack: Stack,
) -> None:
    """The content-type check parses the header itself: aiohttp keeps its parse per request."""
    pending, chain = await wait_in_heartbeats(stack)
    try:
        [app] = [co for co in chain if co.__qualname__ == "Application._handle"]
        request = app.cr_frame.f_locals["request"]
        assert isinstance(request, web.Request)
        assert request.headers["Content-Type"] == "application/json"
        # What aiohttp stores on the request once request.content_type is read.
        assert not set(vars(request)) & set(web.Request.ATTRS & {"_content_dict", "_content_type"})
    finally:
        pending.cancel()
