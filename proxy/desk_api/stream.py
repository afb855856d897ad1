"""``GET /desk/api/v1/events``: what happens to tickets, as server-sent events.

A view opens this once and refreshes what an event names, instead of polling. The events
come from the desk itself (:class:`ticketing.desk.events.DeskEvents`: told by the life
cycle, and by the other replicas' wake-ups), one per state a ticket reaches:

``ticket.opened``, ``ticket.answered``, ``ticket.held_for_review``, ``ticket.delivered``,
``ticket.expired``; each ``data`` is ``{"number", "reference", "state", "step"}``. The
stream starts with a ``ready`` event, and sends a comment line every ``HEARTBEAT`` seconds so
proxies keep it open. A client too slow to read loses events and is sent ``resync``
(re-read the list), rather than holding memory without bound.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from ticketing.desk.events import DeskEvent

from ..handlers import DESK
from .routes import NO_STORE

HEARTBEAT = 15.0
# How often a quiet stream looks whether its client has gone (aiohttp does not cancel it).
_LOOK = 1.0
_QUEUED = 256
_END = b""
# The open streams' queues: the server's shutdown ends each at once.
STREAMS: web.AppKey[set[asyncio.Queue[bytes]]] = web.AppKey("desk_api_streams", set)


async def end_streams(app: web.Application) -> None:
    """On shutdown: end every open event stream, so none holds the server up."""
    for queue in app.get(STREAMS, set()):
        while not queue.empty():
            queue.get_nowait()
        queue.put_nowait(_END)


def event_frame(name: str, data: dict[str, Any]) -> bytes:
    """Return one SSE frame: ``event:`` and a one-line JSON ``data:``."""
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def events(request: web.Request) -> web.StreamResponse:
    """Stream the desk's ticket events until the client goes or the server stops."""
    desk = request.app[DESK]
    queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=_QUEUED)
    overflowed = False

    def told(event: DeskEvent) -> None:
        nonlocal overflowed
        ticket = event.ticket
        frame = event_frame(
            event.kind.value,
            {
                "number": ticket.issue_number,
                "reference": desk.ticket_ref(ticket),
                "state": ticket.state.value,
                "step": ticket.step,
            },
        )
        try:
            queue.put_nowait(frame)
        except asyncio.QueueFull:
            overflowed = True

    response = web.StreamResponse(
        headers={
            **NO_STORE,
            "Content-Type": "text/event-stream",
            "X-Accel-Buffering": "no",
        }
    )
    remove = desk.events.listen(told)
    streams = request.app[STREAMS]
    streams.add(queue)
    loop = asyncio.get_running_loop()
    try:
        await response.prepare(request)
        await response.write(event_frame("ready", {"repo": desk.settings.repo}))
        quiet_since = loop.time()
        while request.transport is not None and not request.transport.is_closing():
            try:
                frame = await asyncio.wait_for(queue.get(), timeout=_LOOK)
            except TimeoutError:
                if loop.time() - quiet_since < HEARTBEAT:
                    continue
                frame = b": heartbeat\n\n"
            if frame == _END:
                break
            if overflowed:
                overflowed = False
                while not queue.empty():
                    queue.get_nowait()
                frame = event_frame("resync", {})
            await response.write(frame)
            quiet_since = loop.time()
    except ConnectionResetError:
        pass  # the client went away
    finally:
        remove()
        streams.discard(queue)
    return response
