"""Waiting for a ticket's outcome on an MCP request: at once, as JSON, or over SSE with progress.

Shared by ``tools/call`` and ``tasks/result``. While people think, the answer is an SSE
stream that carries a ``notifications/progress`` every heartbeat interval when the request
gave a ``progressToken`` (a comment line otherwise), then the response. An approval's
wait also ends on a reviewer's signed rejection (``Desk.watch(..., rejection=True)``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import hdrs, web

from auth.roles import Act
from ticketing.desk import Desk, Outcome
from ticketing.store.model import Ticket

from ..handlers import DESK, SETTINGS
from ..middleware import REQUEST_ID
from .tools import ToolCall, answer_result, approval_result, expired_result
from .wire import Message, progress_json, result_json, sse_event

__all__ = ["answer_when_settled", "tool_result"]

Render = Callable[[Outcome], dict[str, Any]]


async def answer_when_settled(
    request: web.Request, message: Message, ticket: Ticket, render: Render, *, rejection: bool
) -> web.StreamResponse:
    """Answer ``message`` with the ticket's outcome, rendered, once it is settled.

    With ``rejection``, a reviewer's rejection of the held answer settles it too.
    """
    desk = request.app[DESK]
    settled = desk.settled(ticket, rejection=rejection)
    if settled is not None:
        desk.delivered(settled)
        return web.json_response(result_json(message.id, render(settled)))
    outcome = desk.watch(ticket, rejection=rejection)
    meta = message.params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if "text/event-stream" not in request.headers.get(hdrs.ACCEPT, ""):
        result = await outcome
        desk.delivered(result)
        return web.json_response(result_json(message.id, render(result)))
    response = web.StreamResponse(
        headers={
            hdrs.CONTENT_TYPE: "text/event-stream",
            hdrs.CACHE_CONTROL: "no-cache",
            "x-request-id": request[REQUEST_ID],
        }
    )
    await response.prepare(request)
    try:
        await _wait_with_progress(
            response,
            outcome,
            token=token if isinstance(token, str | int) else None,
            interval=request.app[SETTINGS].heartbeat_interval,
            url=ticket.issue_url or "",
        )
    finally:
        outcome.cancel()  # a no-op once settled; otherwise the ticket goes on waiting
    result = outcome.result()
    desk.delivered(result)
    await response.write(sse_event(result_json(message.id, render(result))))
    await response.write_eof()
    return response


async def _wait_with_progress(
    response: web.StreamResponse,
    outcome: asyncio.Future[Outcome],
    *,
    token: str | int | None,
    interval: float,
    url: str,
) -> None:
    """Send a progress notification (or a comment) every ``interval`` until it settles."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while True:
        await asyncio.wait({outcome}, timeout=interval)
        if outcome.done():
            return
        waited = round(loop.time() - started, 1)
        if token is None:
            await response.write(b": waiting for the team\n\n")
        else:
            note = f"Waiting for the team's signed answer on {url} ({waited:.0f} s so far)."
            await response.write(sse_event(progress_json(token, waited, note)))


def tool_result(desk: Desk, call: ToolCall, outcome: Outcome) -> dict[str, Any]:
    """Return the tool's result for the ticket's outcome."""
    if call.approval:
        return approval_result(outcome, _approvers(desk, outcome))
    if outcome.release is None:
        return expired_result(outcome)
    return answer_result(outcome, schema="answer_schema" in call.arguments)


def _approvers(desk: Desk, outcome: Outcome) -> list[str]:
    """Return the reviewers whose signed approvals released the answer."""
    if outcome.answer is None:
        return []
    judgements = desk.store.judgements_for(outcome.answer.comment_id)
    return sorted({j.reviewer for j in judgements if j.act == Act.APPROVE.value})
