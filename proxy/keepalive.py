"""Keep a non-streaming response alive while people think.

DESIGN.md, "Waiting for people": send the 200 and its headers at once, then a single
space at intervals well inside the client's read timeout, then the JSON completion.
Leading whitespace is valid JSON, and openai-python (1.8 to 3.x) and AutoGPT accept it.
Once the 200 is out the body must be a valid completion, so on an unexpected failure the
connection is dropped instead: the client sees a connection error and retries, and the
retry re-attaches to the same ticket.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from aiohttp import web

from ticketing.errors import DeskStopped

log = logging.getLogger(__name__)

# Stay well inside the client's read timeout: a quarter of it, never above the setting.
_READ_TIMEOUT_SHARE = 0.25
_MIN_INTERVAL = 0.05


def read_timeout(headers: Mapping[str, str]) -> float | None:
    """Return the client's read timeout from ``x-stainless-read-timeout``, if it sent one."""
    raw = headers.get("x-stainless-read-timeout")
    try:
        seconds = float(raw) if raw is not None else None
    except ValueError:
        return None
    # NaN and non-positive values say nothing usable.
    return seconds if seconds is not None and seconds > 0 else None


def heartbeat_interval(headers: Mapping[str, str], *, default: float) -> float:
    """Return how often to send a heartbeat, honouring ``x-stainless-read-timeout``."""
    read_timeout_seconds = read_timeout(headers)
    if read_timeout_seconds is None:
        return default
    return max(_MIN_INTERVAL, min(default, read_timeout_seconds * _READ_TIMEOUT_SHARE))


@dataclass(frozen=True)
class Framing:
    """How a waiting response is framed: its content type, heartbeat and failure bytes."""

    content_type: str
    heartbeat: bytes
    # What to send if the wait fails after the 200 went out; None drops the connection,
    # which the client sees as a connection error and retries.
    failure: bytes | None = None


JSON_FRAMING = Framing(content_type="application/json", heartbeat=b" ")
# OpenAI's streams (chat and legacy completions).
SSE_FRAMING = Framing(
    content_type="text/event-stream; charset=utf-8",
    # An SSE comment: ignored by clients, but it resets their read timeout.
    heartbeat=b": keep-alive\n\n",
    # The openai client raises an APIError for an event that carries "error".
    failure=b'data: {"error": {"message": "ticketproxy failed while waiting for the answer;'
    b' retry the request to re-attach to its ticket", "type": "server_error",'
    b' "param": null, "code": null}}\n\n',
)


async def send_after_wait(
    request: web.Request,
    body: asyncio.Future[Any],
    *,
    render: Callable[[Any], bytes],
    interval: float,
    headers: Mapping[str, str],
    framing: Framing = JSON_FRAMING,
    preamble: bytes = b"",
) -> tuple[web.StreamResponse, bool]:
    """Answer 200 now, send a heartbeat every ``interval`` until ``body`` is done, then send it.

    ``preamble`` goes out with the 200, before the first heartbeat (a stream's opening events).
    Return the response and whether the whole body reached the client's socket. ``body`` is
    cancelled if the response ends without it (the client left, or this was cancelled).
    """
    response = web.StreamResponse(
        status=200, headers={**headers, "Content-Type": framing.content_type}
    )
    request_id = headers.get("x-request-id")
    # Held no longer: the response has its own copy, and a wait may last hours.
    del headers
    loop = asyncio.get_running_loop()
    try:
        await response.prepare(request)
        if preamble:
            await response.write(preamble)
        del preamble
        while not body.done():
            # One future and one timer per round, not asyncio.wait's set, waiter, timer and
            # callbacks: thousands of responses wait at once, and each byte held is per wait.
            beat: asyncio.Future[None] = loop.create_future()
            wake = partial(_wake, beat)
            timer = loop.call_later(interval, wake)
            body.add_done_callback(wake)
            try:
                await beat
            finally:
                timer.cancel()
                body.remove_done_callback(wake)
            if not body.done():
                await response.write(framing.heartbeat)
        await response.write(render(body.result()))
        await response.write_eof()
    except DeskStopped:
        # The server is shutting down: the dropped connection (or the SSE error event) tells
        # the client to retry, and its retry re-attaches to the ticket after the restart.
        log.info("request_id=%s server stopping: told the waiting client to retry", request_id)
        await _abandon(request, response, framing)
        return response, False
    except ConnectionResetError:
        # The client went away (read timeout, ctrl-C). The ticket keeps waiting and its
        # answer stays in the store for the retry.
        log.info("request_id=%s client disconnected while waiting", request_id)
        return response, False
    except Exception:
        log.exception("request_id=%s failed after the 200 was sent", request_id)
        body.cancel()
        await _abandon(request, response, framing)
        return response, False
    finally:
        body.cancel()  # a no-op once it is done; otherwise nobody waits for it any more
        if not body.cancelled():
            # Read a failure the response had no chance to report (the client left while
            # it arrived), so asyncio does not log it as never retrieved.
            body.exception()
    return response, True


async def _abandon(request: web.Request, response: web.StreamResponse, framing: Framing) -> None:
    """End a response whose 200 is out without its body, so the client retries."""
    if framing.failure is not None:
        with contextlib.suppress(ConnectionResetError):
            await response.write(framing.failure)
            await response.write_eof()
    elif request.transport is not None:
        request.transport.close()


def _wake(beat: asyncio.Future[None], _: object = None) -> None:
    """Resolve ``beat`` unless already resolved (called by its timer or by the body)."""
    if not beat.done():
        beat.set_result(None)
