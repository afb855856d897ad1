"""Fronts: the API dialects agents speak, each a small value over the one ticket life cycle.

A front (OpenAI chat completions, legacy completions, the Responses API, Anthropic Messages)
does only four things, all pure:

1. ``parse``: its request body → the front-neutral ``ChatRequest`` a ticket carries, plus
   the client's own terms its answer is rendered with (``Parsed``);
2. ``render_json``: an ``Outcome`` (a released answer, or an expiry) → its JSON body;
3. ``render_stream``: the same outcome → its stream's events after the wait, with an
   optional ``preamble`` sent the moment the ticket exists (before the wait) and its own
   ``stream_framing`` (heartbeat and failure bytes);
4. ``envelope``: how its errors look, ``client_key``: where its clients put their key, and
   an optional ``check_headers`` (e.g. Anthropic's ``anthropic-version``).

A front that keeps state between requests (the Responses API's stored responses) adds a
``memory`` (:class:`FrontMemory`): its only I/O, which the flow runs around the pure parts.

Everything else (reading the body under limits, routing, submitting or re-attaching, drafts,
waiting with heartbeats, delivering, retries) is :mod:`proxy.completion_flow`, once. The
middleware asks :class:`Fronts` which front a path belongs to for the envelope and the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from aiohttp import web

from ticketing.desk import Outcome
from ticketing.release import Release
from ticketing.render.replies import render_expired_completion
from ticketing.request import ChatRequest
from ticketing.store.model import Ticket

from .errors import APIError, NotFound
from .keepalive import JSON_FRAMING, Framing
from .routing import RoutedModel

T = TypeVar("T")

# A front's error body for an APIError (the status and headers are the middleware's).
ErrorEnvelope = Callable[[APIError], dict[str, Any]]
# The client key a request presents, or None if it presents none the way this front expects.
KeyReader = Callable[[Mapping[str, str]], str | None]
# Refuses (InvalidRequest) headers the front cannot serve, e.g. an unknown API version.
HeaderCheck = Callable[[Mapping[str, str]], None]


def openai_envelope(error: APIError) -> dict[str, Any]:
    """Return OpenAI's error body: ``{"error": {"message", "type", "param", "code"}}``."""
    return error.envelope()


def bearer_key(headers: Mapping[str, str]) -> str | None:
    """Return the key of ``Authorization: Bearer <key>``, or None."""
    scheme, _, presented = headers.get("Authorization", "").partition(" ")
    return presented.strip() if scheme.lower() == "bearer" else None


@dataclass(frozen=True)
class Parsed(Generic[T]):
    """A request as a front read it: the ticket's request, its own terms, and whether to stream."""

    chat: ChatRequest
    terms: T
    stream: bool
    # The ticket whose run this request continues, when the client named it
    # (the Responses API's previous_response_id); the flow makes it the run's next step.
    continues: int | None = None


class FrontMemory(Protocol[T]):
    """The state a front keeps between requests (the Responses API's stored responses).

    The one part of a front that does I/O, run by the flow around the pure parts: ``parse``
    reads what a body refers to (a stored previous response) and hands it to the front's
    pure parsing; ``keep`` records what later requests may refer to, once the ticket exists
    (what it records is left on the request by ``parse``, so the wait does not hold it).
    """

    def parse(self, request: web.Request, body: dict[str, Any], routed: RoutedModel) -> Parsed[T]:
        """Return the request as the front reads it, with what it refers to filled in."""
        ...

    def keep(self, request: web.Request, ticket: Ticket, parsed: Parsed[T]) -> None:
        """Record what later requests may refer to, now that the ticket exists."""
        ...


@dataclass(frozen=True)
class Front(Generic[T]):
    """One API dialect: how its bodies are read, its answers written and its errors shaped."""

    name: str
    # (body, client id, routed model) → Parsed; raises InvalidRequest for bad input.
    parse: Callable[[dict[str, Any], str, RoutedModel], Parsed[T]]
    # (outcome, terms, created) → the JSON body, or the stream's events after the wait.
    render_json: Callable[[Outcome, T, int], bytes]
    render_stream: Callable[[Outcome, T, int], bytes]
    stream_framing: Framing
    # (ticket, terms, created) → events sent as soon as the ticket exists, before the wait.
    preamble: Callable[[Ticket, T, int], bytes] | None = None
    json_framing: Framing = JSON_FRAMING
    envelope: ErrorEnvelope = openai_envelope
    client_key: KeyReader = bearer_key
    key_hint: str = "Send `Authorization: Bearer <key>`"
    # Checked before the body is read; None checks nothing.
    check_headers: HeaderCheck | None = None
    # The upstream's path a model routed upstream is forwarded to; None refuses it.
    upstream_endpoint: str | None = None
    # A front that keeps state (stored responses) parses through it; None for most fronts.
    memory: FrontMemory[T] | None = None


@dataclass
class Fronts:
    """Which front each route belongs to, for the middleware's envelopes and client keys."""

    by_path: dict[str, Front[Any]] = field(default_factory=dict)

    def for_path(self, path: str) -> Front[Any] | None:
        """Return the front serving ``path`` (or a path under it), or None."""
        front = self.by_path.get(path)
        if front is not None:
            return front
        for prefix, candidate in self.by_path.items():
            if path.startswith(prefix + "/"):
                return candidate
        return None


FRONTS = web.AppKey("fronts", Fronts)


def door_front(name: str, envelope: ErrorEnvelope) -> Front[None]:
    """Return a front the front door knows only by its error envelope and client key.

    The stateful fronts (the Agent Protocol, A2A, MCP) serve routes of their own rather than
    completions; a completion parsed or rendered through one is refused as unknown.
    """

    def no_completions(*_: Any) -> Any:
        raise NotFound(f"{name} has no completions.", code="unknown_url")

    return Front(
        name=name,
        parse=no_completions,
        render_json=no_completions,
        render_stream=no_completions,
        stream_framing=JSON_FRAMING,
        envelope=envelope,
    )


def register_front(app: web.Application, path: str, front: Front[Any]) -> None:
    """Let the front door know that ``front`` serves ``path`` and the paths under it."""
    fronts = app.get(FRONTS)
    if fronts is None:
        fronts = app[FRONTS] = Fronts()
    fronts.by_path[path] = front


def envelope_for(app: web.Application, path: str) -> ErrorEnvelope:
    """Return the error envelope of the front serving ``path``; OpenAI's by default."""
    fronts = app.get(FRONTS)
    front = None if fronts is None else fronts.for_path(path)
    return openai_envelope if front is None else front.envelope


def released(outcome: Outcome) -> Release:
    """Return what the agent receives: the released answer, or the plain expiry text."""
    release = outcome.release
    if release is not None:
        return release
    ticket = outcome.ticket
    text = render_expired_completion(deadline=ticket.deadline, ticket_url=ticket.issue_url or "")
    return Release(content=text, tool_calls=(), finish_reason="stop")


def answer_id(ticket: Ticket, prefix: str) -> str:
    """Return an answer's id, derived from its ticket so a retry that re-attaches sees it again."""
    return f"{prefix}{ticket.request_key[:20]}{ticket.id}"
