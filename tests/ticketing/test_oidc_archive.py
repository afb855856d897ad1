"""Tests for ticketing.oidc_archive: which issuer keys are kept, compared and read back."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from jwt.algorithms import RSAAlgorithm

from tests.helpers.oidc_issuer import LocalIssuer
from ticketing.errors import IssuerKeyRefused
from ticketing.oidc_archive import (
    ARCHIVED_MEMBERS,
    ArchivedKey,
    archive_document,
    changed_keys,
    merged_jwks,
    public_issuer_keys,
    read_jwks_document,
)

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def issuer() -> LocalIssuer:
    """Return one issuer (one RSA key) for the module."""
    return LocalIssuer()


def test_only_public_members_of_an_issuer_key_are_kept(issuer: LocalIssuer) -> None:
    """Members beyond kty, n, e, kid, alg and use (x5c, say) are dropped."""
    (jwk,) = issuer.jwks()["keys"]
    kept, refused = public_issuer_keys({"keys": [{**jwk, "x5c": ["MIIB…"]}]})
    assert refused == []
    assert kept == [{name: jwk[name] for name in ("kty", "n", "e", "kid", "alg", "use")}]


def test_jwks_file_with_private_key_material_is_refused(issuer: LocalIssuer) -> None:
    """A JWKS file whose key carries d, p, q… is refused outright, its values never repeated."""
    private = {**RSAAlgorithm.to_jwk(issuer.key, as_dict=True), "kid": issuer.kid}
    with pytest.raises(IssuerKeyRefused, match="private key material") as refused:
        read_jwks_document({"keys": [private]}, source="keys.json")
    assert private["d"] not in str(refused.value)


def test_jwks_file_naming_one_kid_with_two_keys_is_refused(issuer: LocalIssuer) -> None:
    """Two different keys under one kid cannot both vouch for a token: the file is refused."""
    (jwk,) = issuer.jwks()["keys"]
    (other,) = LocalIssuer(kid=issuer.kid).jwks()["keys"]
    with pytest.raises(IssuerKeyRefused, match="the same kid names two different keys"):
        read_jwks_document({"keys": [jwk, other]}, source="keys.json")


def test_something_other_than_a_jwks_is_refused() -> None:
    """A file without a keys list is not mistaken for an empty archive."""
    with pytest.raises(IssuerKeyRefused, match="is not a JWKS"):
        read_jwks_document({"key": []}, source="keys.json")


def test_the_archive_reads_back_as_the_keys_it_holds(issuer: LocalIssuer) -> None:
    """An exported archive is a JWKS naming its issuer; reading it gives the public keys."""
    (jwk,) = issuer.jwks()["keys"]
    kept = ArchivedKey(issuer.url, issuer.kid, jwk, first_seen=NOW, last_seen=NOW)
    document = archive_document(issuer.url, [kept])
    assert document["keys"][0]["first_seen"] == "2025-03-01T12:00:00+00:00"
    jwks, named = read_jwks_document(document, source="keys.json")
    assert named == issuer.url
    assert jwks == {"keys": [{name: jwk[name] for name in ARCHIVED_MEMBERS}]}


def test_a_kid_served_with_other_material_is_a_problem(issuer: LocalIssuer) -> None:
    """The same kid with another modulus is named; the same key, or a new kid, is not."""
    archive = issuer.jwks()
    (same,) = issuer.jwks()["keys"]
    (other,) = LocalIssuer(kid=issuer.kid).jwks()["keys"]
    (fresh,) = LocalIssuer(kid="fresh").jwks()["keys"]
    assert changed_keys(archive, {"keys": [same, fresh]}) == []
    (problem,) = changed_keys(archive, {"keys": [other]})
    assert issuer.kid in problem
    merged = merged_jwks(archive, {"keys": [other, fresh]})
    assert [k["n"] for k in merged["keys"]] == [same["n"], fresh["n"]]
