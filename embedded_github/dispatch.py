"""The API's front door: faults, authentication, rate limits, routing, ETags, records.

Order, as on GitHub: credentials are checked first (a bad token is a 401 whatever the path),
then the primary budget, then the route, then the secondary limit on creating content.
A ``304 Not Modified`` does not spend the primary budget. Who the caller is lives in
:mod:`embedded_github.callers`; how an answer is written, in :mod:`embedded_github.responses`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from aiohttp import web
from yarl import URL

from embedded_github.account_payloads import API_PREFIX
from embedded_github.callers import (
    Caller,
    anonymous_caller,
    authenticate,
    primary_limit_exceeded,
    require_route,
    secondary_limit_exceeded,
)
from embedded_github.errors import ApiError
from embedded_github.faults import FaultQueue
from embedded_github.limits import CreationRateLimiter, PrimaryRateLimiter, RateStatus
from embedded_github.payloads import PayloadBuilder
from embedded_github.responses import (
    CORS_HEADERS,
    CORS_PREFLIGHT_HEADERS,
    JSON_CONTENT_TYPE,
    base_headers,
    cache_headers,
    encode_json,
    error_response,
    etag_matches,
    fault_response,
    weak_etag,
)
from embedded_github.routes_account import ROUTES as ACCOUNT_ROUTES
from embedded_github.routes_actions import ROUTES as ACTIONS_ROUTES
from embedded_github.routes_apps import ROUTES as APP_ROUTES
from embedded_github.routes_comments import ROUTES as COMMENT_ROUTES
from embedded_github.routes_issues import ROUTES as ISSUE_ROUTES
from embedded_github.routes_labels import ROUTES as LABEL_ROUTES
from embedded_github.routes_reactions import ROUTES as REACTION_ROUTES
from embedded_github.routes_sub_issues import ROUTES as SUB_ISSUE_ROUTES
from embedded_github.routing import ApiCall, Reply, Route
from embedded_github.state import SandboxState

ROUTES: tuple[Route, ...] = (
    *ACCOUNT_ROUTES,
    *APP_ROUTES,
    *ISSUE_ROUTES,
    *COMMENT_ROUTES,
    *LABEL_ROUTES,
    *REACTION_ROUTES,
    *ACTIONS_ROUTES,
    *SUB_ISSUE_ROUTES,
)

# DELETE too: removing a sub-issue names it in the body.
_BODY_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
# Where a request's body fields are kept until it is recorded.
_FIELDS: web.RequestKey[tuple[str, ...]] = web.RequestKey("fields")


@dataclass(frozen=True)
class RecordedRequest:
    """One API request the sandbox answered: path is after ``/api/v3``; status 0 = dropped."""

    method: str
    path: str
    query: dict[str, str] = field(hash=False)
    status: int
    login: str | None
    # The top-level names in a JSON object body (``state``, ``labels`` …): what a PATCH did.
    fields: tuple[str, ...] = field(default=(), hash=False)


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
            return web.Response(status=204, headers=CORS_PREFLIGHT_HEADERS)
        response = await self._handle(request)
        response.headers.update(CORS_HEADERS)
        return response

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path[len(API_PREFIX) :] or "/"
        request_id = self._request_id()
        fault = self._faults.take(request.method, path)
        login: str | None = None
        if fault is not None and fault.delay > 0:
            await asyncio.sleep(fault.delay)
        if fault is not None and fault.hold and not fault.after_handling:
            await self._faults.hold()
        if fault is None or fault.after_handling or fault.status is None:
            response, login = await self._answer(request, request_id)
            if fault is not None and fault.hold and fault.after_handling:
                await self._faults.hold()
        if fault is not None and fault.status is not None:
            if fault.drop_connection:
                self._record(request, path, 0, login)
                if request.transport is not None:
                    # Abort, not close: the client must see the line die without an answer.
                    request.transport.abort()
                return web.Response(status=502)
            response = fault_response(fault, request_id, self._peek_rate(request))
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
                fields=request.get(_FIELDS, ()),
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
            caller = authenticate(request, state=self._state, rate_limit=self._rate_limit)
        except ApiError as error:
            anonymous = anonymous_caller(request)
            rate = self._primary.consume(anonymous.key, limit=anonymous.limit, now=now)
            return error_response(error, request_id, rate), None
        login = caller.user.login if caller.user else None
        rate = self._primary.status(caller.key, limit=caller.limit, now=now)
        found = self._match(request)
        counts = found is None or found[0].counts_against_limit
        if counts and rate.remaining <= 0:
            exhausted = primary_limit_exceeded(caller, request_id, now)
            return error_response(exhausted, request_id, rate), login
        try:
            route, params = require_route(found, caller)
            if route.creates_content:
                self._check_secondary(caller, request_id, now)
            body = await self._read_body(request, route)
            if isinstance(body, dict):
                request[_FIELDS] = tuple(sorted(body))
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
            return error_response(error, request_id, rate), login
        return self._reply_response(request, reply, request_id, caller, now, counts), login

    def _peek_rate(self, request: web.Request) -> RateStatus:
        try:
            caller = authenticate(request, state=self._state, rate_limit=self._rate_limit)
        except ApiError:
            caller = anonymous_caller(request)
        return self._primary.status(caller.key, limit=caller.limit, now=self._state.now())

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

    def _check_secondary(self, caller: Caller, request_id: str, now: int) -> None:
        if not self._creations.allows(caller.key, now=now):
            raise secondary_limit_exceeded(request_id)
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

    def _reply_response(
        self,
        request: web.Request,
        reply: Reply,
        request_id: str,
        caller: Caller,
        now: int,
        counts: bool,
    ) -> web.Response:
        body = None if reply.payload is None else encode_json(reply.payload)
        etag = None
        if request.method == "GET" and reply.status == 200 and body is not None:
            etag = weak_etag(body)
            if etag_matches(request.headers.get("If-None-Match"), etag):
                # GitHub's documented rule: a 304 does not count against the primary limit.
                rate = self._primary.status(caller.key, limit=caller.limit, now=now)
                headers = base_headers(request_id, rate)
                headers.update(cache_headers(etag))
                return web.Response(status=304, headers=headers)
        rate = self._primary.status(caller.key, limit=caller.limit, now=now)
        if counts:
            rate = self._primary.consume(caller.key, limit=caller.limit, now=now)
        headers = base_headers(request_id, rate)
        if etag is not None:
            headers.update(cache_headers(etag))
        headers.update(reply.headers)
        if body is None:
            return web.Response(status=reply.status, headers=headers)
        headers["Content-Type"] = JSON_CONTENT_TYPE
        return web.Response(status=reply.status, body=body, headers=headers)
