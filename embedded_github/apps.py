"""GitHub Apps in the sandbox: checking an App's JWT and the installation tokens it buys.

An App authenticates with a short-lived RS256 JWT signed by its private key
(https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app):
``iss`` is the App's id, ``iat`` and ``exp`` at most ten minutes apart. GitHub tolerates about
a minute of clock drift, which is why clients backdate ``iat`` by 60 s. With the JWT the App
buys an installation token (``ghs_…``) that acts as its bot user for one hour
(https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

import jwt

from embedded_github.config import SandboxApp, SandboxUser
from embedded_github.errors import ApiError

JWT_DOCS = "https://docs.github.com/rest"
# GitHub's own limits: a JWT lives at most ten minutes, and clocks may drift by a minute.
MAX_JWT_LIFETIME = 600
CLOCK_SKEW = 60
INSTALLATION_TOKEN_LIFETIME = 3600
# What the App may do on every hosted repository.
APP_PERMISSIONS: Mapping[str, str] = {"issues": "write", "metadata": "read"}

# GitHub's messages for JWTs it refuses, word for word.
UNDECODABLE = "A JSON web token could not be decoded"
EXPIRED = (
    "'Expiration time' claim ('exp') must be a numeric value representing the future time "
    "at which the assertion expires"
)
TOO_FAR = "'Expiration time' claim ('exp') is too far in the future"
ISSUED_LATER = (
    "'Issued at' claim ('iat') must be an Integer representing the time that the assertion "
    "was issued"
)


@dataclass(frozen=True)
class InstallationGrant:
    """An installation token the sandbox handed out, and until when it works."""

    token: str = field(repr=False)
    app: SandboxApp
    user: SandboxUser
    expires_at: int


def looks_like_jwt(token: str) -> bool:
    """Say whether a bearer credential is a JWT rather than a token (three base64url parts)."""
    return token.startswith("eyJ") and token.count(".") == 2


def verify_app_jwt(token: str, *, apps: Mapping[int, SandboxApp], now: int) -> SandboxApp:
    """Return the App whose valid JWT this is, or raise GitHub's 401."""
    try:
        header = jwt.get_unverified_header(token)
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.InvalidTokenError:
        raise _refused(UNDECODABLE) from None
    # The algorithm is GitHub's choice, never the token's: RS256 only (no "none", no HMAC).
    if header.get("alg") != "RS256":
        raise _refused(UNDECODABLE)
    app = apps.get(_issuer(claims.get("iss")) or 0)
    if app is None:
        raise _refused(UNDECODABLE)
    try:
        jwt.decode(
            token,
            key=app.public_key_pem,
            algorithms=["RS256"],
            # The times are checked below against the sandbox clock, not the machine's.
            options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
        )
    except jwt.InvalidTokenError:
        raise _refused(UNDECODABLE) from None
    issued, expires = _time(claims.get("iat")), _time(claims.get("exp"))
    if issued is None or issued > now + CLOCK_SKEW:
        raise _refused(ISSUED_LATER)
    if expires is None or expires <= now:
        raise _refused(EXPIRED)
    if expires - issued > MAX_JWT_LIFETIME or expires > now + MAX_JWT_LIFETIME + CLOCK_SKEW:
        raise _refused(TOO_FAR)
    return app


def new_installation_grant(app: SandboxApp, *, now: int) -> InstallationGrant:
    """Mint an installation token for an App, acting as its bot user for one hour."""
    token = "ghs_" + secrets.token_urlsafe(27)[:36]
    return InstallationGrant(
        token=token,
        app=app,
        user=app.bot_user(token=token),
        expires_at=now + INSTALLATION_TOKEN_LIFETIME,
    )


def _issuer(value: object) -> int | None:
    # GitHub takes the App id as a number or as a string of digits.
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


def _time(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _refused(message: str) -> ApiError:
    return ApiError(401, message, documentation_url=JWT_DOCS)
