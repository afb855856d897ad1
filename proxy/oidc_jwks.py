"""Fetching the trusted OIDC issuer's JWKS over HTTP: the I/O behind ``JwksFetcher``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp
from aiohttp import web

from ticketing.clock import Clock
from ticketing.errors import OidcKeysUnavailable
from ticketing.oidc_keys import OidcKeys

__all__ = ["OIDC_KEYS", "AiohttpJwksFetcher", "oidc_keys_context"]

_MAX_JWKS_BYTES = 256 * 1024  # GitHub's is about 2 KB


class AiohttpJwksFetcher:
    """Fetches a JWKS with aiohttp: no redirects, a size cap and a deadline."""

    def __init__(self, session: aiohttp.ClientSession, *, timeout: float = 10.0) -> None:
        self._session = session
        self._timeout = aiohttp.ClientTimeout(total=timeout)

    async def fetch_jwks(self, url: str) -> Mapping[str, Any]:
        """Return the JWKS at ``url``; raise OidcKeysUnavailable when it cannot be had."""
        try:
            async with self._session.get(
                url, allow_redirects=False, timeout=self._timeout
            ) as response:
                if response.status != 200:
                    raise OidcKeysUnavailable(f"{url} answered HTTP {response.status}")
                raw = await response.content.read(_MAX_JWKS_BYTES + 1)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise OidcKeysUnavailable(f"{url} could not be fetched: {exc!r}") from None
        if len(raw) > _MAX_JWKS_BYTES:
            raise OidcKeysUnavailable(f"{url} returned more than {_MAX_JWKS_BYTES} bytes")
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            raise OidcKeysUnavailable(f"{url} did not return JSON") from None
        if not isinstance(data, dict):
            raise OidcKeysUnavailable(f"{url} did not return a JSON object")
        return data


OIDC_KEYS: web.AppKey[OidcKeys | None] = web.AppKey("oidc_keys")


def oidc_keys_context(
    issuer: str | None, *, clock: Clock
) -> Callable[[web.Application], AsyncIterator[None]]:
    """Return the cleanup context that holds the issuer's cached keys (None: no issuer)."""

    async def context(app: web.Application) -> AsyncIterator[None]:
        if issuer is None:
            app[OIDC_KEYS] = None
            yield
            return
        async with aiohttp.ClientSession() as session:
            fetcher = AiohttpJwksFetcher(session)
            app[OIDC_KEYS] = OidcKeys(issuer=issuer, fetcher=fetcher, clock=clock)
            yield

    return context
