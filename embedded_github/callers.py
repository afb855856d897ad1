"""Who is calling the API, what they may reach, and GitHub's refusals when they may not go on.

A token names a user, an App's JWT names the App, and a request without credentials is
counted against its address. GitHub's rule for bad credentials is a 401 whatever the path.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from embedded_github.apps import looks_like_jwt, verify_app_jwt
from embedded_github.config import SandboxApp, SandboxUser
from embedded_github.errors import (
    RATE_LIMIT_DOCS,
    REST_DOCS,
    SECONDARY_RATE_LIMIT_DOCS,
    ApiError,
    not_found,
)
from embedded_github.limits import UNAUTHENTICATED_LIMIT
from embedded_github.routing import Route
from embedded_github.state import SandboxState
from embedded_github.timestamps import format_timestamp


@dataclass(frozen=True)
class Caller:
    """Who a request comes from, the key their rate budget is kept under, and its size."""

    user: SandboxUser | None
    key: str
    limit: int
    app: SandboxApp | None = None


def authenticate(request: web.Request, *, state: SandboxState, rate_limit: int) -> Caller:
    """Return who sent a request, or raise GitHub's 401 for credentials it does not know."""
    header = request.headers.get("Authorization")
    if header is None:
        return anonymous_caller(request)
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() == "bearer" and looks_like_jwt(token.strip()):
        app = verify_app_jwt(token.strip(), apps=state.apps, now=state.now())
        return Caller(user=None, key=f"app:{app.id}", limit=rate_limit, app=app)
    user = None
    if scheme.lower() in ("token", "bearer") and token.strip():
        user = state.user_for_token(token.strip())
    if user is None:
        raise ApiError(401, "Bad credentials", documentation_url=REST_DOCS)
    return Caller(user=user, key=f"user:{user.id}", limit=rate_limit)


def anonymous_caller(request: web.Request) -> Caller:
    """Return the caller a request without credentials counts as: its address."""
    address = request.remote or "unknown"
    return Caller(user=None, key=f"ip:{address}", limit=UNAUTHENTICATED_LIMIT)


def require_route(
    found: tuple[Route, dict[str, str]] | None, caller: Caller
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


def primary_limit_exceeded(caller: Caller, request_id: str, now: int) -> ApiError:
    """Return GitHub's 403 for a caller whose hourly budget is spent."""
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


def secondary_limit_exceeded(request_id: str) -> ApiError:
    """Return GitHub's 403 for a caller creating content too fast."""
    return ApiError(
        403,
        "You have exceeded a secondary rate limit. Please wait a few minutes before you "
        "try again. If you reach out to GitHub Support for help, please include the "
        f"request ID {request_id}.",
        documentation_url=SECONDARY_RATE_LIMIT_DOCS,
        headers={"retry-after": "60"},
    )
