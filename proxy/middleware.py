"""Request ids, client API keys, and the one place errors become error envelopes.

Plain functions, not middlewares: :mod:`proxy.front_door` runs them in its one middleware, so
none of them keeps a coroutine frame alive while a completion waits.

The envelope and where the client key is read from are the front's (:mod:`proxy.fronts`):
OpenAI's ``{"error": {...}}`` and ``Authorization: Bearer`` unless the route's front says
otherwise.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import random

from aiohttp import web

from ticketing.errors import DeskStopped, GitHubError, GitHubUnavailable, StoreUnavailable

from .errors import (
    APIError,
    GitHubRefused,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    Unauthorized,
)
from .fronts import FRONTS, ErrorEnvelope, bearer_key, envelope_for, openai_envelope

log = logging.getLogger(__name__)

_ids = random.Random()  # noqa: S311 (request ids are not secrets)
REQUEST_ID = web.RequestKey("request_id", str)
CLIENT = web.RequestKey("client", str)
ANONYMOUS = "anonymous"
# Routes that speak to agents and need a client key: OpenAI's, the Agent Protocol's, A2A's
# (its card, at /.well-known, is public), MCP's, and every front's routes (the unversioned
# aliases among them, such as /chat/completions).
_API_PREFIXES = ("/v1/", "/models", "/ap/", "/a2a", "/mcp")
# Seconds a client told "stopping" waits before retrying: about a restart's length.
STOPPING_RETRY_AFTER = 5


def error_response(
    error: APIError, *, request_id: str, envelope: ErrorEnvelope = openai_envelope
) -> web.Response:
    """Render an API error in ``envelope`` (OpenAI's by default) with its status."""
    headers = {"x-request-id": request_id}
    if isinstance(error, RateLimited):
        headers["retry-after"] = str(max(1, math.ceil(error.retry_after)))
    if isinstance(error, Unauthorized) and error.challenge is not None:
        headers["www-authenticate"] = error.challenge
    response = web.json_response(envelope(error), status=error.status, headers=headers)
    if error.closes_connection:
        response.force_close()
    return response


def github_refused(exc: GitHubError) -> GitHubRefused:
    """Return the 500 a client gets when GitHub refused its ticket, with the operator's fix."""
    if exc.misconfigured:
        return GitHubRefused(
            f"ticketproxy cannot open tickets on GitHub: {exc}. The operator must fix "
            "ticketproxy's GitHub settings; retrying this request will not help.",
            code="github_misconfigured",
        )
    return GitHubRefused(
        f"GitHub refused to open the ticket for this request ({exc}); retrying it will not "
        "help. The operator has been told (see ticketproxy's log).",
        code="github_error",
    )


def new_request_id() -> str:
    """Return a fresh request id, for ``x-request-id`` and every log line about the request."""
    # Ids name requests in logs and tickets; they guard nothing, so a fast generator (seeded
    # from the OS at start-up) serves, rather than a system call per request.
    return f"req_{_ids.getrandbits(96):024x}"


def failure_response(
    request: web.Request, exc: Exception, *, request_id: str
) -> web.Response | None:
    """Return the error envelope of the route's front for ``exc``; None to let it propagate.

    The one place errors become responses: an ``APIError`` with its status, the desk
    stopping, GitHub's back-pressure and a store that is down as 429s, GitHub refusing the
    ticket as a 500 with the operator's fix, the router's 404 and 405 and aiohttp's 413 in
    the envelope, any other HTTP exception as aiohttp renders it, and anything else as a
    logged 500.
    """
    envelope = envelope_for(request.app, request.path)
    if isinstance(exc, APIError):
        return error_response(exc, request_id=request_id, envelope=envelope)
    if isinstance(exc, DeskStopped):
        # Shutting down before the 200 went out: a retry re-attaches once a server is back.
        error: APIError = RateLimited(
            str(exc), retry_after=STOPPING_RETRY_AFTER, code="ticketproxy_stopping"
        )
    elif isinstance(exc, GitHubUnavailable):
        # Back-pressure is a 429: the openai client and AutoGPT retry it; a 503 would
        # stop AutoGPT's agent.
        log.warning("request_id=%s GitHub unavailable: %s", request_id, exc)
        error = RateLimited(
            "The human desk cannot take new tickets right now (GitHub is busy or "
            "unreachable); retry after the time in retry-after.",
            retry_after=exc.retry_after,
            code="github_unavailable",
        )
    elif isinstance(exc, StoreUnavailable):
        # The database is down or restarting: what was accepted is committed, and a retry
        # re-attaches to it once the database is back.
        log.warning("request_id=%s ticket store unavailable: %s", request_id, exc)
        error = RateLimited(
            "The human desk cannot reach its ticket store right now; retry after the time "
            "in retry-after.",
            retry_after=exc.retry_after,
            code="store_unavailable",
        )
    elif isinstance(exc, GitHubError):
        # Not back-pressure: a 429 here had agents retry a bad token or repository forever.
        log.error("request_id=%s GitHub error: %s", request_id, exc)
        error = github_refused(exc)
    elif isinstance(exc, web.HTTPRequestEntityTooLarge):
        error = PayloadTooLarge(
            f"The request body is larger than this ticketproxy accepts ({exc.text}).",
            code="request_too_large",
        )
    elif isinstance(exc, web.HTTPNotFound):
        error = NotFound(
            f"Invalid URL ({request.method} {request.path}). ticketproxy serves "
            "/v1/chat/completions, /v1/responses, /v1/messages, /v1/completions and "
            "/v1/models; embeddings, images, audio and the other OpenAI endpoints are not "
            "answered by people, so send those calls to another provider.",
            code="unknown_url",
        )
    elif isinstance(exc, web.HTTPMethodNotAllowed):
        error = MethodNotAllowed(
            f"Method {request.method} is not allowed for {request.path}",
            code="method_not_allowed",
        )
    elif isinstance(exc, web.HTTPException):
        return None
    else:
        log.exception("request_id=%s unexpected error", request_id, exc_info=exc)
        error = APIError("ticketproxy failed unexpectedly; the operator has the details.")
    return error_response(error, request_id=request_id, envelope=envelope)


async def send_and_close(request: web.Request, response: web.Response) -> None:
    """Send ``response`` now, then close the connection without reading the rest of the body.

    aiohttp would otherwise linger up to ten seconds after answering, reading what is left
    of a body that is still trickling in.
    """
    await response.prepare(request)
    await response.write_eof()
    # The transport sends what it holds before it closes.
    request.protocol.force_close()


def client_id_for(key: str) -> str:
    """Name a client key without revealing it (for tickets, logs and request keys)."""
    return "key-" + hashlib.sha256(key.encode()).hexdigest()[:12]


class ClientKeys:
    """The client keys of ``TICKETPROXY_API_KEYS``, and the check of the key a request sent."""

    def __init__(self, keys: tuple[str, ...]) -> None:
        """Accept any of ``keys``; with none, every agent is the anonymous client."""
        self._encoded = [key.encode() for key in keys]
        # Named once, not hashed again for every request.
        self._client_ids = {key: client_id_for(key.decode()) for key in self._encoded}

    def check(self, request: web.Request) -> None:
        """Name the request's client in ``request[CLIENT]``, or raise ``Unauthorized``.

        Only routes that speak to agents are checked; others are left alone.
        """
        fronts = request.app.get(FRONTS)
        front = None if fronts is None else fronts.for_path(request.path)
        if front is None and not request.path.startswith(_API_PREFIXES):
            return
        if not self._encoded:
            request[CLIENT] = ANONYMOUS
            return
        read_key = bearer_key if front is None else front.client_key
        presented = read_key(request.headers)
        candidate = (presented or "").encode()
        matched: bytes | None = None
        # Compare with every key, in constant time, so timing says nothing about which
        # key (or how much of one) matched.
        for key in self._encoded:
            if hmac.compare_digest(candidate, key):
                matched = key
        if presented is None or matched is None:
            hint = "Send `Authorization: Bearer <key>`" if front is None else front.key_hint
            refusal = Unauthorized(
                f"Incorrect API key provided. {hint} with one of the keys in TICKETPROXY_API_KEYS.",
                code="invalid_api_key",
            )
            if read_key is bearer_key:
                # RFC 6750 section 3, and MCP's authorization: a 401 names its scheme.
                invalid = "" if presented is None else ', error="invalid_token"'
                refusal.challenge = f'Bearer realm="ticketproxy"{invalid}'
            raise refusal
        request[CLIENT] = self._client_ids[matched]
