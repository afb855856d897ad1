"""Tests for ticketing.oidc_keys: the issuer's JWKS, cached, fetched again for a new kid."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import pytest

from tests.helpers.embedded_github_fixtures import ManualClock
from ticketing.errors import OidcKeysUnavailable
from ticketing.oidc_keys import OidcKeys

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
