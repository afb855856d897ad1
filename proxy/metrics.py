"""Prometheus metrics for one ticketproxy app, served at ``GET /metrics``.

Each app has its own registry (two apps in one process, as in tests, never share series).
Most figures are read from the desk when Prometheus scrapes, by :class:`DeskCollector`, so
``ticketing`` keeps plain counters and imports nothing from Prometheus:

- ``ticketproxy_pending_tickets``: tickets waiting for an answer (``store.count_pending``);
- ``ticketproxy_answers_accepted_total`` and ``ticketproxy_answers_rejected_total{reason}``;
- ``ticketproxy_github_calls_total{route,status}``: calls by operation and outcome
  (``2xx``, ``304``, the HTTP status GitHub refused with, or ``unreachable``);
- ``ticketproxy_github_rate_limit_remaining``: GitHub's ``x-ratelimit-remaining``, once seen;
- ``ticketproxy_write_queue_depth``: GitHub writes queued behind the one worker;
- ``ticketproxy_polls_total``: comment polls made.

The one figure the proxy measures itself is ``ticketproxy_wait_seconds``, a histogram of
the time from a completion request's arrival to its answer reaching the client, observed by
:meth:`ProxyMetrics.observe_wait` around the handler (in :mod:`proxy.front_door`).
"""

from __future__ import annotations

import hmac
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from functools import partial

from aiohttp import web
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder

from auth.verify import RejectReason
from ticketing.desk import Desk
from ticketing.errors import TicketingError

from .handlers import DESK, TICKET_HEADER

log = logging.getLogger(__name__)

# Set on every completion that waited on a ticket (see proxy.completion_flow.answer_with).
# People answer in seconds to hours: buckets from a second to a working day.
WAIT_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, float("inf"))
# Refusals the desk counts besides the verifier's reasons.
EXTRA_REJECT_REASONS = ("unreleasable", "late")


class DeskCollector:
    """Read the desk's state (store, counters, GitHub client) each time Prometheus scrapes."""

    def __init__(self, desk: Callable[[], Desk | None]) -> None:
        """Collect from whatever desk ``desk()`` returns; nothing while it returns None."""
        self._desk = desk

    def describe(self) -> Iterator[Metric]:
        """Name every family this collector yields, so the registry can refuse duplicates."""
        return iter(_families())

    def collect(self) -> Iterator[Metric]:
        """Yield the current figures."""
        desk = self._desk()
        if desk is None:
            return
        pending, accepted, rejected, calls, remaining, depth, polls = _families()
        try:
            pending.add_metric([], desk.store.count_pending())
            yield pending
        except (sqlite3.Error, TicketingError) as exc:
            # A scrape must not fail because the store does; /readyz reports it.
            log.warning("metrics: the ticket store did not answer: %s", exc)
        accepted.add_metric([], desk.answers_accepted)
        yield accepted
        reasons = dict.fromkeys([*RejectReason, *EXTRA_REJECT_REASONS], 0)
        reasons.update(desk.answers_rejected)
        for reason, count in sorted(reasons.items()):
            rejected.add_metric([reason], count)
        yield rejected
        for (route, status), count in sorted(desk.github.calls.items()):
            calls.add_metric([route, status], count)
        yield calls
        if desk.github.rate_remaining is not None:
            remaining.add_metric([], desk.github.rate_remaining)
            yield remaining
        depth.add_metric([], desk.followups.depth)
        yield depth
        polls.add_metric([], desk.polls)
        yield polls


def _families() -> tuple[
    GaugeMetricFamily,
    CounterMetricFamily,
    CounterMetricFamily,
    CounterMetricFamily,
    GaugeMetricFamily,
    GaugeMetricFamily,
    CounterMetricFamily,
]:
    return (
        GaugeMetricFamily("ticketproxy_pending_tickets", "Tickets waiting for an answer."),
        CounterMetricFamily(
            "ticketproxy_answers_accepted", "Signed answers verified and accepted."
        ),
        CounterMetricFamily(
            "ticketproxy_answers_rejected",
            "Signed comments on tickets that were not accepted, by reason.",
            labels=["reason"],
        ),
        CounterMetricFamily(
            "ticketproxy_github_calls",
            "GitHub calls by operation (route) and outcome (status).",
            labels=["route", "status"],
        ),
        GaugeMetricFamily(
            "ticketproxy_github_rate_limit_remaining",
            "Requests left in GitHub's primary rate limit (x-ratelimit-remaining).",
        ),
        GaugeMetricFamily(
            "ticketproxy_write_queue_depth", "GitHub writes (labels, replies, closing) queued."
        ),
        CounterMetricFamily("ticketproxy_polls", "Repo-wide comment polls made."),
    )


class ProxyMetrics:
    """The registry of one app: the desk's figures plus the proxy's own wait histogram."""

    def __init__(
        self,
        *,
        desk: Callable[[], Desk | None],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """Read the desk through ``desk()`` at scrape time; time waits with ``monotonic``."""
        self.registry = CollectorRegistry()
        self.registry.register(DeskCollector(desk))
        self.wait_seconds = Histogram(
            "ticketproxy_wait_seconds",
            "Time from a completion request's arrival to its answer reaching the client.",
            buckets=WAIT_BUCKETS,
            registry=self.registry,
        )
        self._monotonic = monotonic

    def clock(self) -> float:
        """Return the time a handler starts, for :meth:`observe_wait`."""
        return self._monotonic()

    def observe_wait(
        self, request: web.Request, response: web.StreamResponse, started: float
    ) -> None:
        """Observe how long a ticket-backed completion took to reach its client, if it did."""
        transport = request.transport
        # A client that left mid-wait was not delivered anything: its retry will be.
        delivered = transport is not None and not transport.is_closing()
        if response.status == 200 and TICKET_HEADER in response.headers and delivered:
            self.wait_seconds.observe(self._monotonic() - started)

    def render(self, accept: str) -> tuple[bytes, str]:
        """Return the exposition in the format ``accept`` asks for, and its content type."""
        encoder, content_type = choose_encoder(accept)
        return encoder(self.registry), content_type


METRICS = web.AppKey("metrics", ProxyMetrics)


METRICS_TOKEN: web.AppKey[bytes | None] = web.AppKey("metrics_token")


async def metrics_endpoint(request: web.Request) -> web.Response:
    """Serve the app's metrics in Prometheus' text (or OpenMetrics) format."""
    token = request.app[METRICS_TOKEN]
    if token is not None:
        scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
        # Constant time, like the client keys: the response's timing says nothing.
        if not hmac.compare_digest(presented.strip().encode(), token) or scheme.lower() != (
            "bearer"
        ):
            return web.Response(
                status=401,
                text="metrics need Authorization: Bearer <TICKETPROXY_METRICS_TOKEN>\n",
                headers={"WWW-Authenticate": 'Bearer realm="ticketproxy metrics"'},
            )
    body, content_type = request.app[METRICS].render(request.headers.get("Accept", ""))
    return web.Response(body=body, headers={"Content-Type": content_type})


def install_metrics(app: web.Application, *, token: str | None = None) -> ProxyMetrics:
    """Give ``app`` its metrics: the registry and ``/metrics``; the front door times waits.

    With ``token``, ``/metrics`` asks for it as a bearer token (Prometheus'
    ``authorization`` setting sends it); without, it is open, as is usual on a private
    network.
    """
    metrics = ProxyMetrics(desk=partial(app.get, DESK))
    app[METRICS] = metrics
    app[METRICS_TOKEN] = None if token is None else token.encode()
    app.router.add_get("/metrics", metrics_endpoint)
    return metrics
