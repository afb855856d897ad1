"""An aiohttp middleware that checks every JSON answer of a fake GitHub against the spec.

Add it to the sandbox's app before starting it; after the test, ``failures`` must be empty.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from .validate import assert_matches_response, assert_matches_schema, spec

API_PREFIX = "/api/v3"

# Operations the subset does not describe, and the schema their answers must match.
_EXTRA = {
    ("GET", "/user"): "simple-user",
    ("GET", "/users/{login}"): "simple-user",
    ("GET", "/repos/{owner}/{repo}"): "repository",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _compile(template: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template)))


class ContractChecker:
    """Validate the JSON answers passing through an aiohttp app; collect what does not match."""

    def __init__(self) -> None:
        """Index the spec's operations by path pattern."""
        self.failures: list[str] = []
        self.checked = 0
        templates = [*spec()["paths"], *(path for _, path in _EXTRA)]
        # Literal segments win over placeholders: /issues/comments before /issues/{number}.
        templates.sort(key=lambda t: (t.count("{"), -len(t)))
        self._routes = [(template, _compile(template)) for template in templates]

    def attach(self, app: web.Application) -> web.Application:
        """Add the checking middleware to an app that has not started yet."""
        app.middlewares.append(self.middleware)
        return app

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Check one answer, then pass it on unchanged."""
        response = await handler(request)
        if not request.path.startswith(API_PREFIX) or not isinstance(response, web.Response):
            return response
        if not response.body or "json" not in (response.content_type or ""):
            return response
        assert isinstance(response.body, bytes)
        payload = json.loads(response.body)
        path = request.path[len(API_PREFIX) :]
        try:
            self._check(request.method, path, response.status, payload)
            self.checked += 1
        except (AssertionError, KeyError) as error:
            self.failures.append(f"{request.method} {request.path} {response.status}: {error}")
        return response

    def _check(self, method: str, path: str, status: int, payload: Any) -> None:
        template = next((t for t, pattern in self._routes if pattern.fullmatch(path)), None)
        if template is None:
            assert_matches_schema(payload, "basic-error")
            return
        extra = _EXTRA.get((method, template))
        if extra is not None and status < 300:
            assert_matches_schema(payload, extra)
            return
        operation = spec()["paths"].get(template, {}).get(method.lower(), {})
        response = operation.get("responses", {}).get(str(status))
        documented = response is not None and (
            "$ref" in response or "application/json" in response.get("content", {})
        )
        if documented:
            assert_matches_response(payload, method, template, status)
        elif status == 422:
            assert_matches_schema(payload, "validation-error")
        elif status >= 400:
            assert_matches_schema(payload, "basic-error")
        else:
            raise AssertionError(f"status {status} is not documented for {method} {template}")
