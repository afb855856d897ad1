"""Request ids, client API keys, and the one place errors become error envelopes.

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
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from ticketing.errors import DeskStopped, GitHubError, GitHubUnavailable

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
from .logs import current_request_id

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_ids = random.Random()  # noqa: S311 (request ids are not secrets)
REQUEST_ID = web.RequestKey("request_id", str)
CLIENT = web.RequestKey("client", str)
ANONYMOUS = "anonymous"
# Routes that speak to agents and need a client key: OpenAI's, the Agent Protocol's, A2A's
# (its card, at /.well-known, is public), and every front's routes (the unversioned aliases
# among them, such as /chat/completions).
_API_PREFIXES = ("/v1/", "/models", "/ap/", "/a2a")
# Seconds a client told "stopping" waits before retrying: about a restart's length.
STOPPING_RETRY_AFTER = 5


def error_response(
    error: APIError, *, request_id: str, envelope: ErrorEnvelope = openai_envelope
) -> web.Response:
    """Render an API error in ``envelope`` (OpenAI's by default) with its status."""
    headers = {"x-request-id": request_id}
    if isinstance(error, RateLimited):
        headers["retry-after"] = str(max(1, math.ceil(error.retry_after)))
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


@web.middleware
async def request_ids(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Give every request an id, returned in ``x-request-id`` and used in every log line."""
    # Ids name requests in logs and tickets; they guard nothing, so a fast generator (seeded
    # from the OS at start-up) serves, rather than a system call per request.
    request_id = f"req_{_ids.getrandbits(96):024x}"
    request[REQUEST_ID] = request_id
    # Log lines written while serving (and by tasks started meanwhile) carry the id.
    token = current_request_id.set(request_id)
    try:
        response = await handler(request)
    finally:
        current_request_id.reset(token)
    if not response.prepared:
        response.headers.setdefault("x-request-id", request_id)
    return response


@web.middleware
async def openai_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turn every error into the route's front's error envelope with the right status."""
    request_id = str(request.get(REQUEST_ID, "-"))
    envelope = envelope_for(request.app, request.path)
    try:
        return await handler(request)
    except APIError as error:
        response = error_response(error, request_id=request_id, envelope=envelope)
        if error.closes_connection:
            await _send_and_close(request, response)
        return response
    except DeskStopped as exc:
        # Shutting down before the 200 went out: a retry re-attaches once a server is back.
        return error_response(
            RateLimited(str(exc), retry_after=STOPPING_RETRY_AFTER, code="ticketproxy_stopping"),
            request_id=request_id,
            envelope=envelope,
        )
    except GitHubUnavailable as exc:
        # Back-pressure is a 429: the openai client and AutoGPT retry it; a 503 would
        # stop AutoGPT's agent.
        log.warning("request_id=%s GitHub unavailable: %s", request_id, exc)
        return error_response(
            RateLimited(
                "The human desk cannot take new tickets right now (GitHub is busy or "
                "unreachable); retry after the time in retry-after.",
                retry_after=exc.retry_after,
                code="github_unavailable",
            ),
            request_id=request_id,
            envelope=envelope,
        )
    except GitHubError as exc:
        # Not back-pressure: a 429 here had agents retry a bad token or repository forever.
        log.error("request_id=%s GitHub error: %s", request_id, exc)
        return error_response(
            github_refused(exc),
            request_id=request_id,
            envelope=envelope,
        )
    except web.HTTPRequestEntityTooLarge as exc:
        return error_response(
            PayloadTooLarge(
                f"The request body is larger than this ticketproxy accepts ({exc.text}).",
                code="request_too_large",
            ),
            request_id=request_id,
            envelope=envelope,
        )
    except web.HTTPNotFound:
        return error_response(
            NotFound(
                f"Invalid URL ({request.method} {request.path}). ticketproxy serves "
                "/v1/chat/completions, /v1/responses, /v1/messages, /v1/completions and "
                "/v1/models; embeddings, images, audio and the other OpenAI endpoints are not "
                "answered by people, so send those calls to another provider.",
                code="unknown_url",
            ),
            request_id=request_id,
            envelope=envelope,
        )
    except web.HTTPMethodNotAllowed:
        return error_response(
            MethodNotAllowed(
                f"Method {request.method} is not allowed for {request.path}",
                code="method_not_allowed",
            ),
            request_id=request_id,
            envelope=envelope,
        )
    except web.HTTPException:
        raise
    except Exception:
        log.exception("request_id=%s unexpected error", request_id)
        failure = APIError("ticketproxy failed unexpectedly; the operator has the details.")
        return error_response(failure, request_id=request_id, envelope=envelope)


async def _send_and_close(request: web.Request, response: web.Response) -> None:
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


def client_keys(keys: tuple[str, ...]) -> Middleware:
    """Return a middleware that checks ``Authorization: Bearer`` against ``keys``."""
    encoded = [key.encode() for key in keys]
    # Named once, not hashed again for every request.
    client_ids = {key: client_id_for(key.decode()) for key in encoded}

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        fronts = request.app.get(FRONTS)
        front = None if fronts is None else fronts.for_path(request.path)
        if front is None and not request.path.startswith(_API_PREFIXES):
            return await handler(request)
        if not encoded:
            request[CLIENT] = ANONYMOUS
            return await handler(request)
        read_key = bearer_key if front is None else front.client_key
        presented = read_key(request.headers)
        candidate = (presented or "").encode()
        matched: bytes | None = None
        # Compare with every key, in constant time, so timing says nothing about which
        # key (or how much of one) matched.
        for key in encoded:
            if hmac.compare_digest(candidate, key):
                matched = key
        if presented is None or matched is None:
            hint = "Send `Authorization: Bearer <key>`" if front is None else front.key_hint
            raise Unauthorized(
                f"Incorrect API key provided. {hint} with one of the keys in TICKETPROXY_API_KEYS.",
                code="invalid_api_key",
            )
        request[CLIENT] = client_ids[matched]
        return await handler(request)

    return check
