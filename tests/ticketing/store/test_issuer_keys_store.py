"""The store's archive of the OIDC issuer's public keys, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.helpers.oidc_issuer import LocalIssuer
from ticketing.errors import IssuerKeyRefused
from ticketing.oidc_archive import ARCHIVED_MEMBERS
from ticketing.store.interface import TicketStore
from ticketing.store.sqlite import SQLiteTicketStore
from ticketing.store.sqlite_schema import SCHEMA_VERSION

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
ISSUER = "https://token.actions.githubusercontent.com"


@pytest.fixture(scope="module")
def issuer() -> LocalIssuer:
    """Return one issuer (one RSA key) for the module."""
    return LocalIssuer()


def _keys(issuer: LocalIssuer) -> list[dict[str, Any]]:
    return list(issuer.jwks()["keys"])


def test_a_key_stays_on_record_after_the_issuer_drops_it(
    store: TicketStore, issuer: LocalIssuer
) -> None:
    """A key fetched once is kept with first and last seen, after later JWKS lack it."""
    old = _keys(issuer)[0]
    store.record_issuer_keys(ISSUER, [old], now=NOW)
    store.record_issuer_keys(ISSUER, [old], now=NOW + timedelta(hours=1))
    newer = {**old, "kid": "newer"}
    store.record_issuer_keys(ISSUER, [newer], now=NOW + timedelta(days=2))
    kept = store.issuer_keys(ISSUER)
    assert [k.kid for k in kept] == [old["kid"], "newer"]
    assert kept[0].first_seen == NOW
    assert kept[0].last_seen == NOW + timedelta(hours=1)
    assert kept[0].jwk == {name: old[name] for name in ARCHIVED_MEMBERS}
    assert kept[1].first_seen == kept[1].last_seen == NOW + timedelta(days=2)
    assert store.issuer_keys("https://other.example") == []


def test_issuer_key_with_private_material_is_never_stored(store: TicketStore) -> None:
    """A JWK carrying its private exponent (d, p, q…) is refused, and nothing is written."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    leaked = {**RSAAlgorithm.to_jwk(private, as_dict=True), "kid": "leaked"}
    with pytest.raises(IssuerKeyRefused, match="private key material"):
        store.record_issuer_keys(ISSUER, [leaked], now=NOW)
    assert store.issuer_keys(ISSUER) == []


def test_issuer_serving_a_kept_kid_with_other_material_does_not_overwrite_it(
    store: TicketStore, issuer: LocalIssuer
) -> None:
    """A kid served again with another key is reported, and the kept key stays as it was."""
    first = _keys(issuer)[0]
    store.record_issuer_keys(ISSUER, [first], now=NOW)
    other = LocalIssuer(kid=first["kid"]).jwks()["keys"][0]
    assert store.record_issuer_keys(ISSUER, [other], now=NOW + timedelta(hours=1)) == [first["kid"]]
    (kept,) = store.issuer_keys(ISSUER)
    assert kept.jwk["n"] == first["n"]
    assert kept.last_seen == NOW


def test_the_archive_survives_a_restart(tmp_path: Any, issuer: LocalIssuer) -> None:
    """Kept keys are in the database file (migration 17): a reopened store still has them."""
    path = tmp_path / "tickets.sqlite3"
    first = SQLiteTicketStore(path)
    first.record_issuer_keys(ISSUER, _keys(issuer), now=NOW)
    first.close()
    again = SQLiteTicketStore(path)
    try:
        assert [k.kid for k in again.issuer_keys(ISSUER)] == [issuer.kid]
        assert SCHEMA_VERSION >= 17
    finally:
        again.close()
