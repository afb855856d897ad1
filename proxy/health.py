"""Liveness and readiness: ``GET /healthz`` and ``GET /readyz``.

``/healthz`` says the process serves HTTP at all (liveness: restart it if this fails).
``/readyz`` says whether it can do its job now (readiness: send it traffic or not): the
ticket store answers, GitHub did not refuse the credentials or the repository on the last
call (the first is the start-up check of both), and the keyring file can be read (while it
cannot, no signed comment is judged). It answers 503 when not ready, so a load balancer stops
sending traffic that could only fail; the OpenAI routes themselves never do.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from aiohttp import web

from ticketing.desk import Desk
from ticketing.errors import TicketingError

from .handlers import DESK


@dataclass(frozen=True)
class Readiness:
    """Whether the desk can serve, and what stops it if not."""

    problems: tuple[str, ...]
    pending: int | None

    @property
    def ready(self) -> bool:
        """Say whether nothing stops the desk from serving."""
        return not self.problems


def check_readiness(desk: Desk | None) -> Readiness:
    """Check that the store answers and that GitHub took the settings on the last call."""
    if desk is None:
        return Readiness(problems=("the ticket desk has not started",), pending=None)
    problems: list[str] = []
    pending: int | None = None
    try:
        pending = desk.store.count_pending()
    except (sqlite3.Error, TicketingError) as exc:
        problems.append(f"the ticket store does not answer: {exc}")
    failure = desk.github.last_failure
    # A rate limit or an outage is back-pressure, not a reason to take traffic elsewhere.
    if failure is not None and failure.misconfigured:
        problems.append(f"the last GitHub call failed: {failure}")
    keyring = desk.keyring_problem()
    if keyring is not None:
        # Signed comments wait (none is lost) until the file is whole again.
        problems.append(f"{keyring}; {desk.deferred_comments} signed comment(s) wait for it")
    return Readiness(problems=tuple(problems), pending=pending)


async def healthz(request: web.Request) -> web.Response:
    """Say the process is up."""
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    """Answer 200 when the desk can serve, 503 with the reasons when it cannot."""
    readiness = check_readiness(request.app.get(DESK))
    body: dict[str, object] = {"status": "ready" if readiness.ready else "not ready"}
    if readiness.pending is not None:
        body["pending_tickets"] = readiness.pending
    if not readiness.ready:
        body["problems"] = list(readiness.problems)
    return web.json_response(body, status=200 if readiness.ready else 503)
