"""The issuer's JWKS fetched over HTTP: what it returns, and what it refuses."""

from __future__ import annotations

import aiohttp
import pytest
from aiohttp import web

from proxy.oidc_jwks import AiohttpJwksFetcher
from tests.helpers.oidc_issuer import running_issuer
from tests.helpers.stack import free_port
from ticketing.errors import OidcKeysUnavailable
from ticketing.oidc_keys import jwks_url


async def test_the_issuers_jwks_is_fetched_from_its_well_known_address() -> None:
    """The published keys come back as the issuer serves them."""
    async with running_issuer() as issuer, aiohttp.ClientSession() as session:
        jwks = await AiohttpJwksFetcher(session).fetch_jwks(jwks_url(issuer.url))
    assert jwks == issuer.jwks()


async def test_an_unreachable_issuer_is_unavailable_not_an_error_page() -> None:
    """A refused connection is OidcKeysUnavailable, which leaves comments for later."""
    async with aiohttp.ClientSession() as session:
        with pytest.raises(OidcKeysUnavailable):
            await AiohttpJwksFetcher(session).fetch_jwks(f"http://127.0.0.1:{free_port()}/jwks")


async def test_a_redirect_from_the_issuers_address_is_not_followed() -> None:
    """Keys are taken from the trusted address only: a redirect elsewhere is refused."""
    app = web.Application()

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPFound("https://evil.example/jwks")

    app.router.add_get("/.well-known/jwks", moved)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(OidcKeysUnavailable, match="302"):
                await AiohttpJwksFetcher(session).fetch_jwks(jwks_url(f"http://{host}:{port}"))
    finally:
        await runner.cleanup()
