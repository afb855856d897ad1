"""GitHub App authentication: the App's RS256 JWT, read from the injected clock.

PyGithub buys and renews the installation token itself; ticketproxy only supplies the
JWT's times, so tests that move the clock move the token's life with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jwt
from github import Auth

from ticketing.clock import Clock

# PyGithub's defaults: the JWT is backdated a minute for clock drift and lives five minutes.
_JWT_BACKDATE = 60
_JWT_LIFETIME = 300


@dataclass(frozen=True)
class GitHubApp:
    """A GitHub App installation ticketproxy authenticates as, instead of a token."""

    app_id: str
    installation_id: int
    private_key: str = field(repr=False)


class ClockedAppAuth(Auth.AppAuth):
    """PyGithub's App JWT auth, with ``iat`` and ``exp`` read from an injected clock."""

    def __init__(self, app: GitHubApp, *, clock: Clock) -> None:
        super().__init__(app.app_id, app.private_key)
        self._private_key = app.private_key
        self._clock = clock

    def create_jwt(self, expiration: int | None = None) -> str:
        """Return a fresh RS256 JWT: ``iss`` the App id, valid from a minute ago."""
        now = int(self._clock().timestamp())
        payload = {
            "iat": now - _JWT_BACKDATE,
            "exp": now + (expiration or _JWT_LIFETIME),
            "iss": str(self.app_id),
        }
        return jwt.encode(payload, self._private_key, algorithm="RS256")


def app_installation_auth(app: GitHubApp, *, clock: Clock) -> Auth.AppInstallationAuth:
    """Return PyGithub's auth for an App installation; it buys and renews its own token."""
    return ClockedAppAuth(app, clock=clock).get_installation_auth(app.installation_id)
