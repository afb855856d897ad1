"""The trusted OIDC issuer's signing keys (its JWKS), fetched behind a Protocol and cached.

An agent's keyless signature carries a GitHub Actions OIDC token (see
:mod:`auth.oidc_comment`); checking it needs the issuer's JWKS, which is I/O, so it is
fetched here and handed to the pure verification as a value. The set is cached; it is
fetched again when a token names a ``kid`` it lacks (GitHub rotates its keys), at most once
per ``refresh_interval`` so that bogus kids cannot make the desk hammer the issuer. While
the issuer cannot be reached, :class:`OidcKeysUnavailable` leaves the comment unjudged for
the finder to come back to, as an unreadable keyring does.

Every key fetched is also kept in the store (:meth:`OidcKeys.keep_in`, an
:class:`~ticketing.store.interface.IssuerKeyStore`), public members only, so that answers it
vouched for can be audited offline after the issuer has rotated it away
(``ticketproxy oidc-keys export``). A kid the issuer serves again with other material is
logged as an error and the kept key is left as it was.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from auth.oidc import OidcTrust
from ticketing.clock import Clock
from ticketing.errors import OidcKeysUnavailable
from ticketing.oidc_archive import public_issuer_keys
from ticketing.store.interface import IssuerKeyStore

__all__ = ["JwksFetcher", "OidcKeys", "jwks_url"]

log = logging.getLogger(__name__)


def jwks_url(issuer: str) -> str:
    """Return where an issuer publishes its JWKS (GitHub: ``/.well-known/jwks``)."""
    return issuer.rstrip("/") + "/.well-known/jwks"


class JwksFetcher(Protocol):
    """Fetches a JWKS document; raises OidcKeysUnavailable when it cannot."""

    async def fetch_jwks(self, url: str) -> Mapping[str, Any]:
        """Return the parsed JWKS at ``url``."""
        ...


class OidcKeys:
    """The issuer's JWKS as last fetched, fetched again for a kid it does not hold."""

    def __init__(
        self,
        *,
        issuer: str,
        fetcher: JwksFetcher,
        clock: Clock,
        refresh_interval: timedelta = timedelta(seconds=60),
    ) -> None:
        self.issuer = issuer
        self._fetcher = fetcher
        self._clock = clock
        self._refresh_interval = refresh_interval
        self._jwks: Mapping[str, Any] | None = None
        self._fetched_at: datetime | None = None
        self._lock = asyncio.Lock()
        self._archive: IssuerKeyStore | None = None
        # Fetched but not yet in the archive (the store could not be written): kept at the
        # next use, since the cache will not fetch these keys again.
        self._unkept: Mapping[str, Any] | None = None
        self.fetches = 0

    def keep_in(self, archive: IssuerKeyStore) -> None:
        """Keep every key fetched from now on in ``archive`` (the desk's store)."""
        self._archive = archive

    async def trust_for(self, kid: str | None) -> OidcTrust:
        """Return the issuer and its keys, fetched again first when ``kid`` is not among them."""
        async with self._lock:
            if self._jwks is None or (kid is not None and not self._holds(kid) and self._due()):
                await self._fetch()
            if self._unkept is not None:
                self._keep(self._unkept)  # raises StoreUnavailable while the store is down
                self._unkept = None
            assert self._jwks is not None
            return OidcTrust(issuer=self.issuer, jwks=self._jwks)

    def _holds(self, kid: str) -> bool:
        keys = self._jwks.get("keys") if self._jwks is not None else None
        return isinstance(keys, list) and any(
            isinstance(k, Mapping) and k.get("kid") == kid for k in keys
        )

    def _due(self) -> bool:
        last = self._fetched_at
        return last is None or self._clock() - last >= self._refresh_interval

    async def _fetch(self) -> None:
        url = jwks_url(self.issuer)
        self._fetched_at = self._clock()
        self.fetches += 1
        try:
            jwks = await self._fetcher.fetch_jwks(url)
        except OidcKeysUnavailable:
            if self._jwks is None:
                raise
            # The keys fetched before still verify tokens they signed.
            log.warning("the OIDC issuer's keys at %s could not be fetched again", url)
            return
        if not isinstance(jwks.get("keys"), list):
            raise OidcKeysUnavailable(f'{url} did not return a JWKS (an object with "keys")')
        self._jwks = jwks
        if self._archive is not None:
            self._unkept = jwks

    def _keep(self, jwks: Mapping[str, Any]) -> None:
        """Record the fetched keys' public halves; say loudly what could not be kept."""
        assert self._archive is not None
        public, refused = public_issuer_keys(jwks)
        for why in refused:
            log.error("an OIDC issuer key from %s was not kept: %s", self.issuer, why)
        changed = self._archive.record_issuer_keys(self.issuer, public, now=self._clock())
        for kid in changed:
            log.error(
                "the OIDC issuer %s now serves kid %s with key material other than the key "
                "kept under it; the kept key is unchanged, and audits will flag the kid",
                self.issuer,
                kid,
            )
