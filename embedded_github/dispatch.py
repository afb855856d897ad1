"""The API's front door: faults, authentication, rate limits, routing, ETags, headers, records.

Order, as on GitHub: credentials are checked first (a bad token is a 401 whatever the path),
then the primary budget, then the route, then the secondary limit on creating content.
A ``304 Not Modified`` does not spend the primary budget.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

from aiohttp import web
from yarl import URL

from embedded_github.apps import looks_like_jwt, verify_app_jwt
from embedded_github.config import SandboxApp, SandboxUser
from embedded_github.errors import (
    RATE_LIMIT_DOCS,
    REST_DOCS,
    SECONDARY_RATE_LIMIT_DOCS,
    ApiError,
    not_found,
)
from embedded_github.faults import FaultPlan, FaultQueue
from embedded_github.limits import (
    UNAUTHENTICATED_LIMIT,
    CreationRateLimiter,
    PrimaryRateLimiter,
    RateStatus,
)
from embedded_github.payloads import API_PREFIX, PayloadBuilder
from embedded_github.routes_account import ROUTES as ACCOUNT_ROUTES
from embedded_github.routes_apps import ROUTES as APP_ROUTES
from embedded_github.routes_comments import ROUTES as COMMENT_ROUTES
from embedded_github.routes_issues import ROUTES as ISSUE_ROUTES
from embedded_github.routes_labels import ROUTES as LABEL_ROUTES
from embedded_github.routes_reactions import ROUTES as REACTION_ROUTES
from embedded_github.routing import ApiCall, Reply, Route
from embedded_github.state import SandboxState
from embedded_github.timestamps import format_timestamp

ROUTES: tuple[Route, ...] = (
    *ACCOUNT_ROUTES,
    *APP_ROUTES,
    *ISSUE_ROUTES,
    *COMMENT_ROUTES,
    *LABEL_ROUTES,
    *REACTION_ROUTES,
)

JSON_CONTENT_TYPE = "application/json; charset=utf-8"
_BODY_METHODS = frozenset({"POST", "PATCH", "PUT"})
# What GitHub's REST API sends so that pages in a browser can call it with a token.
_CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "ETag, Link, Location, Retry-After, X-GitHub-Request-Id,"
    " X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-RateLimit-Used",
}
_CORS_PREFLIGHT = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, PATCH, PUT, DELETE",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, Accept, If-None-Match,"
    " X-GitHub-Api-Version",
    "Access-Control-Max-Age": "86400",
}


@dataclass(frozen=True)
class RecordedRequest:
    """One API request the sandbox answered: path is after ``/api/v3``; status 0 = dropped."""

    method: str
    path: str
    query: dict[str, str] = field(hash=False)
    status: int
    login: str | None


@dataclass(frozen=True)
class _Caller:
    user: SandboxUser | None
    key: str
    limit: int
    app: SandboxApp | None = None


class ApiDispatcher:
    """Answer every request under ``/api/v3`` the way GitHub's REST API would."""

    def __init__(
        self,
        *,
        state: SandboxState,
        rate_limit: int,
        primary: PrimaryRateLimiter,
        creations: CreationRateLimiter,
        faults: FaultQueue,
        requests: list[RecordedRequest],
        routes: Sequence[Route] = ROUTES,
    ) -> None:
        """Bind the shared state, the limiters, the fault queue and the request log."""
        self._state = state
        self._rate_limit = rate_limit
        self._primary = primary
        self._creations = creations
        self._faults = faults
        self._requests = requests
        self._routes = tuple(routes)
        self._sequence = itertools.count(1)
        self._request_prefix = secrets.token_hex(2).upper()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Answer one API request."""
        if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            # A browser's CORS preflight: GitHub's API allows any origin (tokens, not cookies).
            return web.Response(status=204, headers=_CORS_PREFLIGHT)
        response = await self._handle(request)
        response.headers.update(_CORS)
        return response

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path[len(API_PREFIX) :] or "/"
        request_id = self._request_id()
        fault = self._faults.take(request.method, path)
        login: str | None = None
        if fault is not None and fault.delay > 0:
            await asyncio.sleep(fault.delay)
        if fault is None or fault.after_handling or fault.status is None:
            response, login = await self._answer(request, request_id)
        if fault is not None and fault.status is not None:
            if fault.drop_connection:
                self._record(request, path, 0, login)
                if request.transport is not None:
                    # Abort, not close: the client must see the line die without an answer.
                    request.transport.abort()
                return web.Response(status=502)
            response = self._fault_response(fault, request_id, self._peek_rate(request))
        self._record(request, path, response.status, login)
        return response

    def _record(self, request: web.Request, path: str, status: int, login: str | None) -> None:
        self._requests.append(
            RecordedRequest(
                method=request.method,
                path=path,
                query=dict(request.query),
                status=status,
                login=login,
            )
        )

    def _request_id(self) -> str:
        sequence = next(self._sequence)
        return f"{self._request_prefix}:{sequence:05X}:{secrets.token_hex(3).upper()}"

    # The real pipeline --------------------------------------------------------------------

    async def _answer(
        self, request: web.Request, request_id: str
    ) -> tuple[web.StreamResponse, str | None]:
        now = self._state.now()
        try:
            caller = self._authenticate(request)
        except ApiError as error:
            anonymous = self._anonymous(request)
            rate = self._primary.consume(anonymous.key, limit=anonymous.limit, now=now)
            return self._error_response(error, request_id, rate), None
        login = caller.user.login if caller.user else None
        rate = self._primary.status(caller.key, limit=caller.limit, now=now)
        found = self._match(request)
        counts = found is None or found[0].counts_against_limit
        if counts and rate.remaining <= 0:
            exhausted = self._primary_exhausted(caller, request_id, now)
            return self._error_response(exhausted, request_id, rate), login
        try:
            route, params = _require_route(found, caller)
            if route.creates_content:
                self._check_secondary(caller, request_id, now)
            body = await self._read_body(request, route)
            call = ApiCall(
                method=request.method,
                params=params,
                query=dict(request.query),
                body=body,
                viewer=caller.user,
                now=now,
                state=self._state,
                payloads=self._payloads(request),
                url=self._public_url(request),
                docs=route.docs,
                rate=rate,
                app=caller.app,
            )
            reply = route.handler(call)
        except ApiError as error:
            if counts:
                rate = self._primary.consume(caller.key, limit=caller.limit, now=now)
            return self._error_response(error, request_id, rate), login
        return self._reply_response(request, reply, request_id, caller, now, counts), login

    def _authenticate(self, request: web.Request) -> _Caller:
        header = request.headers.get("Authorization")
        if header is None:
            return self._anonymous(request)
        scheme, _, token = header.strip().partition(" ")
        if scheme.lower() == "bearer" and looks_like_jwt(token.strip()):
            app = verify_app_jwt(token.strip(), apps=self._state.apps, now=self._state.now())
            return _Caller(user=None, key=f"app:{app.id}", limit=self._rate_limit, app=app)
        user = None
        if scheme.lower() in ("token", "bearer") and token.strip():
            user = self._state.user_for_token(token.strip())
        if user is None:
            raise ApiError(401, "Bad credentials", documentation_url=REST_DOCS)
        return _Caller(user=user, key=f"user:{user.id}", limit=self._rate_limit)

    def _peek_rate(self, request: web.Request) -> RateStatus:
        try:
            caller = self._authenticate(request)
        except ApiError:
            caller = self._anonymous(request)
        return self._primary.status(caller.key, limit=caller.limit, now=self._state.now())

    def _anonymous(self, request: web.Request) -> _Caller:
        address = request.remote or "unknown"
        return _Caller(user=None, key=f"ip:{address}", limit=UNAUTHENTICATED_LIMIT)

    def _match(self, request: web.Request) -> tuple[Route, dict[str, str]] | None:
        # Match on the raw path so that an encoded "/" inside a label name stays inside it.
        raw = request.raw_path.split("?", 1)[0][len(API_PREFIX) :] or "/"
        for route in self._routes:
            if route.method != request.method:
                continue
            match = route.pattern.fullmatch(raw)
            if match is not None:
                return route, {key: unquote(value) for key, value in match.groupdict().items()}
        return None

    def _primary_exhausted(self, caller: _Caller, request_id: str, now: int) -> ApiError:
        support = (
            f"If you reach out to GitHub Support for help, please include the request ID "
            f"{request_id} and timestamp {format_timestamp(now).replace('T', ' ')[:-1]} UTC."
        )
        if caller.user is not None:
            message = f"API rate limit exceeded for user ID {caller.user.id}. {support}"
        else:
            address = caller.key.removeprefix("ip:")
            message = (
                f"API rate limit exceeded for {address}. (But here's the good news: "
                "Authenticated requests get a higher rate limit. Check out the documentation "
                f"for more details.) {support}"
            )
        return ApiError(403, message, documentation_url=RATE_LIMIT_DOCS)

    def _check_secondary(self, caller: _Caller, request_id: str, now: int) -> None:
        if not self._creations.allows(caller.key, now=now):
            raise ApiError(
                403,
                "You have exceeded a secondary rate limit. Please wait a few minutes before you "
                "try again. If you reach out to GitHub Support for help, please include the "
                f"request ID {request_id}.",
                documentation_url=SECONDARY_RATE_LIMIT_DOCS,
                headers={"retry-after": "60"},
            )
        self._creations.record(caller.key, now=now)

    async def _read_body(self, request: web.Request, route: Route) -> Any:
        if request.method not in _BODY_METHODS:
            return None
        raw = await request.read()
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise ApiError(400, "Problems parsing JSON", documentation_url=route.docs) from None

    def _public_url(self, request: web.Request) -> URL:
        return request.url.origin().join(URL(request.raw_path))

    def _payloads(self, request: web.Request) -> PayloadBuilder:
        return PayloadBuilder(
            origin=str(request.url.origin()),
            store=self._state.store,
            find_user=self._state.find_user,
            repos_by_id=self._state.repos_by_id,
        )

    # Responses ----------------------------------------------------------------------------

    def _base_headers(self, request_id: str, rate: RateStatus) -> dict[str, str]:
        headers = {
            "x-github-api-version-selected": "2022-11-28",
            "x-github-media-type": "github.v3; format=json",
            "x-github-request-id": request_id,
            "x-content-type-options": "nosniff",
            "x-frame-options": "deny",
        }
        headers.update(rate.headers())
        return headers

    def _error_response(self, error: ApiError, request_id: str, rate: RateStatus) -> web.Response:
        headers = self._base_headers(request_id, rate)
        headers.update(error.headers)
        return _json(error.status, error.body(), headers)

    def _reply_response(
        self,
        request: web.Request,
        reply: Reply,
        request_id: str,
        caller: _Caller,
        now: int,
        counts: bool,
    ) -> web.Response:
        body = None if reply.payload is None else _encode(reply.payload)
        etag = None
        if request.method == "GET" and reply.status == 200 and body is not None:
            etag = f'W/"{hashlib.sha256(body).hexdigest()}"'
            if _etag_matches(request.headers.get("If-None-Match"), etag):
                # GitHub's documented rule: a 304 does not count against the primary limit.
                rate = self._primary.status(caller.key, limit=caller.limit, now=now)
                headers = self._base_headers(request_id, rate)
                headers.update(_cache_headers(etag))
                return web.Response(status=304, headers=headers)
        rate = self._primary.status(caller.key, limit=caller.limit, now=now)
        if counts:
            rate = self._primary.consume(caller.key, limit=caller.limit, now=now)
        headers = self._base_headers(request_id, rate)
        if etag is not None:
            headers.update(_cache_headers(etag))
        headers.update(reply.headers)
        if body is None:
            return web.Response(status=reply.status, headers=headers)
        headers["Content-Type"] = JSON_CONTENT_TYPE
        return web.Response(status=reply.status, body=body, headers=headers)

    def _fault_response(self, fault: FaultPlan, request_id: str, rate: RateStatus) -> web.Response:
        assert fault.status is not None  # a delay-only fault is answered by the real handler
        headers = self._base_headers(request_id, rate)
        headers.update(fault.headers)
        if fault.status in (204, 304):
            return web.Response(status=fault.status, headers=headers)
        body: Mapping[str, Any]
        if fault.body is not None:
            body = fault.body
        else:
            body = {
                "message": _phrase(fault.status),
                "documentation_url": REST_DOCS,
                "status": str(fault.status),
            }
        return _json(fault.status, body, headers)


def _require_route(
    found: tuple[Route, dict[str, str]] | None, caller: _Caller
) -> tuple[Route, dict[str, str]]:
    """Return the matched route, or raise GitHub's 404, or its 401 for a write without a token."""
    if found is None:
        raise not_found()
    route, _ = found
    if caller.app is not None and not route.app_only:
        # An App's JWT only buys installation tokens; the work is done with those.
        raise ApiError(403, "Resource not accessible by integration", documentation_url=route.docs)
    if route.needs_auth and caller.user is None:
        raise ApiError(401, "Requires authentication", documentation_url=route.docs)
    return found


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _encode(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _json(status: int, payload: Any, headers: dict[str, str]) -> web.Response:
    headers = dict(headers)
    headers["Content-Type"] = JSON_CONTENT_TYPE
    return web.Response(status=status, body=_encode(payload), headers=headers)


def _cache_headers(etag: str) -> dict[str, str]:
    return {
        "ETag": etag,
        "Cache-Control": "private, max-age=60, s-maxage=60",
        "Vary": "Accept, Authorization, Cookie, X-GitHub-OTP, Accept-Encoding",
    }


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    # Weak comparison (RFC 9110 §13.1.2): W/"x" and "x" name the same representation.
    wanted = etag.removeprefix("W/")
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == wanted:
            return True
    return False
