"""The archive of the OIDC issuer's public keys: what may be kept, compared and read back.

Pure. GitHub rotates the keys its Actions tokens are signed with and drops the old ones from
its JWKS, after which an agent's keyless answer cannot be checked against the issuer any
more. The desk therefore keeps every key it fetched (``ticketing.store``), the operator
exports them (``ticketproxy oidc-keys export``) and the audit reads that file instead of the
network (``ticketproxy audit --oidc-jwks FILE``). Only an RSA public key's members are ever
kept: a JWK carrying private material (``d``, ``p``, ``q``, …) is refused, never stored.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from auth.jwk import PRIVATE_MEMBERS
from ticketing.errors import IssuerKeyRefused

__all__ = [
    "ARCHIVED_MEMBERS",
    "ArchivedKey",
    "archive_document",
    "changed_keys",
    "jwks_kids",
    "material_of",
    "merged_jwks",
    "public_issuer_keys",
    "read_jwks_document",
    "same_material",
]

# What an issuer's RSA signing key is, and nothing else: no private member ever.
ARCHIVED_MEMBERS = ("kty", "n", "e", "kid", "alg", "use")
_MATERIAL = ("kty", "n", "e")
_MAX_KID = 512


@dataclass(frozen=True)
class ArchivedKey:
    """One issuer key the desk fetched: its public JWK, first and last seen in the JWKS."""

    issuer: str
    kid: str
    jwk: Mapping[str, str]
    first_seen: datetime
    last_seen: datetime


def public_issuer_keys(jwks: Mapping[str, Any]) -> tuple[list[dict[str, str]], list[str]]:
    """Return a JWKS's keys fit to keep (public members only), and why any others were not.

    A key with private material is refused outright (its values are never repeated);
    members other than :data:`ARCHIVED_MEMBERS` (``x5c``, say) are dropped.
    """
    kept: list[dict[str, str]] = []
    refused: list[str] = []
    keys = jwks.get("keys")
    for position, jwk in enumerate(keys if isinstance(keys, list) else []):
        public, why = _public_jwk(jwk)
        if public is None:
            refused.append(f"key {position + 1}: {why}")
        else:
            kept.append(public)
    return kept, refused


def _public_jwk(jwk: object) -> tuple[dict[str, str] | None, str]:
    if not isinstance(jwk, Mapping):
        return None, "not a JSON object"
    private = sorted(PRIVATE_MEMBERS & set(jwk))
    if private:
        return None, f"it holds private key material ({', '.join(private)}); never kept"
    kid = jwk.get("kid")
    if not isinstance(kid, str) or not 0 < len(kid) <= _MAX_KID:
        return None, "it has no kid"
    if jwk.get("kty") != "RSA":
        return None, f"{kid} is not an RSA key"
    public = {name: jwk[name] for name in ARCHIVED_MEMBERS if name in jwk}
    if not all(isinstance(value, str) for value in public.values()):
        return None, f"{kid} has a member that is not a string"
    if "n" not in public or "e" not in public:
        return None, f"{kid} lacks its modulus or exponent"
    return public, ""


def material_of(jwk: Mapping[str, Any]) -> str:
    """Return a key's material (type, modulus, exponent) as one comparable string."""
    return json.dumps({name: jwk.get(name) for name in _MATERIAL}, sort_keys=True)


def same_material(one: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """Return whether two JWKs are the same key, compared in constant time."""
    return hmac.compare_digest(material_of(one).encode(), material_of(other).encode())


def archive_document(issuer: str, keys: Sequence[ArchivedKey]) -> dict[str, Any]:
    """Return the archive as a JWKS document, each key with when it was first and last seen."""
    return {
        "issuer": issuer,
        "keys": [
            {
                **key.jwk,
                "first_seen": key.first_seen.isoformat(),
                "last_seen": key.last_seen.isoformat(),
            }
            for key in keys
        ],
    }


def read_jwks_document(document: object, *, source: str) -> tuple[dict[str, Any], str | None]:
    """Return a JWKS file's keys (public members only) and the issuer it names, if any.

    Raises IssuerKeyRefused naming ``source`` when it is not a JWKS, when a key holds private
    material, or when two keys share a kid with different material.
    """
    if not isinstance(document, Mapping) or not isinstance(document.get("keys"), list):
        raise IssuerKeyRefused(f'{source} is not a JWKS (a JSON object with "keys")')
    kept, refused = public_issuer_keys(document)
    private = [why for why in refused if "private key material" in why]
    if private:
        raise IssuerKeyRefused(f"{source}: {private[0]}; a JWKS archive holds public keys only")
    conflicts = changed_keys({"keys": kept}, {"keys": kept})
    if conflicts:
        raise IssuerKeyRefused(f"{source}: {conflicts[0]}")
    issuer = document.get("issuer")
    return {"keys": kept}, issuer if isinstance(issuer, str) else None


def jwks_kids(jwks: Mapping[str, Any]) -> frozenset[str]:
    """Return the kids a JWKS lists."""
    keys = jwks.get("keys")
    return frozenset(
        kid
        for jwk in (keys if isinstance(keys, list) else [])
        if isinstance(jwk, Mapping) and isinstance(kid := jwk.get("kid"), str)
    )


def changed_keys(archive: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """Return a problem for each kid ``current`` lists with material other than ``archive``'s."""
    kept = [k for k in archive.get("keys", []) if isinstance(k, Mapping)]
    problems: list[str] = []
    for now in current.get("keys", []):
        if not isinstance(now, Mapping):
            continue
        for before in kept:
            if before.get("kid") == now.get("kid") and not same_material(before, now):
                problems.append(
                    f"the issuer's key {now.get('kid')} is not the key kept under that kid: "
                    "the same kid names two different keys, so neither can vouch for a token"
                )
                break
    return problems


def merged_jwks(archive: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """Return the archive's keys, then those of ``current`` whose kid the archive lacks."""
    kept = [k for k in archive.get("keys", []) if isinstance(k, Mapping)]
    known = jwks_kids(archive)
    added = [
        k for k in current.get("keys", []) if isinstance(k, Mapping) and k.get("kid") not in known
    ]
    return {"keys": [*kept, *added]}
