"""Liveness and readiness: ``GET /healthz`` and ``GET /readyz``.

``/healthz`` says the process serves HTTP at all (liveness: restart it if this fails).
``/readyz`` says whether it can do its job now (readiness: send it traffic or not): the
ticket store answers, GitHub did not refuse the token on the last call, and the keyring file
can be read (while it cannot, no signed comment is judged). It answers 503
when not ready; the OpenAI routes themselves never do (back-pressure there is a 429).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from aiohttp import web

from ticketing.desk import Desk
from ticketing.errors import GitHubError, GitHubUnavailable, TicketingError

from .handlers import DESK

# GitHub's answers to a bad or under-privileged token (a rate limit is not one of them).
AUTH_STATUSES = frozenset({401, 403})


@dataclass(frozen=True)
class Readiness:
    """Whether the desk can serve, and what stops it if not."""

    problems: tuple[str, ...]
    pending: int | None

    @property
    def ready(self) -> bool:
        """Say whether nothing stops the desk from serving."""
        return not self.problems


def is_auth_failure(error: GitHubError | None) -> bool:
    """Say whether GitHub refused the token itself (not a rate limit or an outage)."""
    return (
        error is not None
        and not isinstance(error, GitHubUnavailable)
        and error.status in AUTH_STATUSES
    )


def check_readiness(desk: Desk | None) -> Readiness:
    """Check that the store answers and that GitHub accepted the token on the last call."""
    if desk is None:
        return Readiness(problems=("the ticket desk has not started",), pending=None)
    problems: list[str] = []
    pending: int | None = None
    try:
        pending = desk.store.count_pending()
    except (sqlite3.Error, TicketingError) as exc:
        problems.append(f"the ticket store does not answer: {exc}")
    failure = desk.github.last_failure
    if is_auth_failure(failure):
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
