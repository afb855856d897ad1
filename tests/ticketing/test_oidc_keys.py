"""Tests for ticketing.oidc_keys: the issuer's JWKS, cached, fetched again for a new kid."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from jwt.algorithms import RSAAlgorithm

from tests.helpers.embedded_github_fixtures import ManualClock
from tests.helpers.oidc_issuer import LocalIssuer, new_rsa_key
from ticketing.errors import OidcKeysUnavailable, StoreUnavailable
from ticketing.oidc_keys import OidcKeys
from ticketing.store.sqlite import SQLiteTicketStore

ISSUER = "https://issuer.example"


class RecordingFetcher:
    """A JWKS source that serves ``keys`` and records each URL it was asked for."""

    def __init__(self, *kids: str) -> None:
        self.kids = list(kids)
        self.urls: list[str] = []
        self.down = False

    async def fetch_jwks(self, url: str) -> Mapping[str, Any]:
        self.urls.append(url)
        if self.down:
            raise OidcKeysUnavailable("the issuer is down")
        return {"keys": [{"kid": kid, "kty": "RSA"} for kid in self.kids]}


def _keys(fetcher: RecordingFetcher, clock: ManualClock) -> OidcKeys:
    return OidcKeys(issuer=ISSUER, fetcher=fetcher, clock=clock)


async def test_the_issuers_keys_are_fetched_once_and_cached() -> None:
    """Known kids are served from the cache, from the issuer's /.well-known/jwks."""
    fetcher, clock = RecordingFetcher("k1"), ManualClock()
    keys = _keys(fetcher, clock)
    await keys.trust_for("k1")
    trust = await keys.trust_for("k1")
    assert fetcher.urls == [f"{ISSUER}/.well-known/jwks"]
    assert trust.issuer == ISSUER


async def test_an_unknown_kid_fetches_the_keys_again_after_a_rotation() -> None:
    """A token naming a kid the cache lacks (the issuer rotated) refreshes the keys."""
    fetcher, clock = RecordingFetcher("k1"), ManualClock()
    keys = _keys(fetcher, clock)
    await keys.trust_for("k1")
    fetcher.kids.append("k2")
    clock.advance(61)
    trust = await keys.trust_for("k2")
    assert [k["kid"] for k in trust.jwks["keys"]] == ["k1", "k2"]
    assert len(fetcher.urls) == 2


async def test_bogus_kids_cannot_make_the_desk_hammer_the_issuer() -> None:
    """Unknown kids refresh the keys at most once a minute."""
    fetcher, clock = RecordingFetcher("k1"), ManualClock()
    keys = _keys(fetcher, clock)
    for attempt in range(5):
        await keys.trust_for(f"bogus-{attempt}")
    assert len(fetcher.urls) == 1
    clock.advance(timedelta(minutes=1).total_seconds())
    await keys.trust_for("bogus-again")
    assert len(fetcher.urls) == 2


async def test_an_unreachable_issuer_leaves_the_comment_for_later() -> None:
    """With no keys yet, the failure propagates so the finder keeps the comment unjudged."""
    fetcher, clock = RecordingFetcher("k1"), ManualClock()
    fetcher.down = True
    with pytest.raises(OidcKeysUnavailable):
        await _keys(fetcher, clock).trust_for("k1")


async def test_keys_fetched_before_still_serve_while_the_issuer_is_down() -> None:
    """A failed refresh keeps the keys fetched before."""
    fetcher, clock = RecordingFetcher("k1"), ManualClock()
    keys = _keys(fetcher, clock)
    await keys.trust_for("k1")
    fetcher.down = True
    clock.advance(120)
    trust = await keys.trust_for("k2")
    assert [k["kid"] for k in trust.jwks["keys"]] == ["k1"]


class ServedJwks:
    """A JWKS source serving whatever document ``jwks`` holds at the time."""

    def __init__(self, jwks: Mapping[str, Any]) -> None:
        self.jwks = jwks

    async def fetch_jwks(self, url: str) -> Mapping[str, Any]:
        return self.jwks


@pytest.fixture
def archive(tmp_path: Path) -> Iterator[SQLiteTicketStore]:
    """Yield the desk's store, where the fetched keys are kept."""
    store = SQLiteTicketStore(tmp_path / "tickets.sqlite3")
    yield store
    store.close()


async def test_the_desk_keeps_every_issuer_key_it_fetched_after_a_rotation(
    archive: SQLiteTicketStore,
) -> None:
    """Keys fetched before a rotation stay in the store once the issuer stops serving them."""
    issuer, clock = LocalIssuer(), ManualClock()
    served = ServedJwks(issuer.jwks())
    keys = OidcKeys(issuer=ISSUER, fetcher=served, clock=clock)
    keys.keep_in(archive)
    await keys.trust_for(issuer.kid)
    old = issuer.rotate()
    served.jwks = issuer.jwks()
    clock.advance(120)
    await keys.trust_for(issuer.kid)
    assert [k.kid for k in archive.issuer_keys(ISSUER)] == [old, issuer.kid]


async def test_jwks_leaking_a_private_key_is_not_archived(
    archive: SQLiteTicketStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A JWKS that serves a private key gets it refused (logged without its values)."""
    issuer = LocalIssuer()
    private = {**RSAAlgorithm.to_jwk(issuer.key, as_dict=True), "kid": "leaked"}
    served = ServedJwks({"keys": [*issuer.jwks()["keys"], private]})
    keys = OidcKeys(issuer=ISSUER, fetcher=served, clock=ManualClock())
    keys.keep_in(archive)
    await keys.trust_for(issuer.kid)
    assert [k.kid for k in archive.issuer_keys(ISSUER)] == [issuer.kid]
    assert "private key material (d, dp, dq, p, q, qi)" in caplog.text
    assert private["d"] not in caplog.text


async def test_issuer_serving_a_kept_kid_with_other_material_is_logged_loudly(
    archive: SQLiteTicketStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A kid the issuer serves again with another key is an error in the log; the kept key stays."""
    issuer, clock = LocalIssuer(), ManualClock()
    served = ServedJwks(issuer.jwks())
    keys = OidcKeys(issuer=ISSUER, fetcher=served, clock=clock)
    keys.keep_in(archive)
    await keys.trust_for(issuer.kid)
    kept = archive.issuer_keys(ISSUER)[0].jwk
    issuer.key = new_rsa_key()
    served.jwks = issuer.jwks()
    clock.advance(120)
    await keys.trust_for("unknown-kid")
    assert f"serves kid {issuer.kid} with key material other than" in caplog.text
    assert archive.issuer_keys(ISSUER)[0].jwk == kept


async def test_keys_fetched_while_the_store_is_locked_are_kept_once_it_answers(
    tmp_path: Path,
) -> None:
    """Keys fetched while the store refused the write are archived at the next use, not lost."""
    path = tmp_path / "tickets.sqlite3"
    store = SQLiteTicketStore(path, busy_timeout=0.05)
    issuer = LocalIssuer()
    keys = OidcKeys(issuer=ISSUER, fetcher=ServedJwks(issuer.jwks()), clock=ManualClock())
    keys.keep_in(store)
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another replica holds the write lock
        with pytest.raises(StoreUnavailable):
            await keys.trust_for(issuer.kid)
        other.execute("ROLLBACK")
        await keys.trust_for(issuer.kid)  # served from the cache: the issuer is not asked
        assert [k.kid for k in store.issuer_keys(ISSUER)] == [issuer.kid]
    finally:
        other.close()
        store.close()
