"""GitHub Actions OIDC tokens: checked against the trusted issuer's published keys.

Pure: the issuer's JWKS arrives as a value (the desk fetches and caches it, see
:mod:`ticketing.oidc_keys`). The token must be RS256, the only algorithm GitHub uses and
the only one accepted here (never HS256 or ``none``), signed by a key of the JWKS named by
its ``kid``; ``iss`` must be the trusted issuer exactly, ``aud`` the RFC 7638 thumbprint of
the ephemeral key that signs the answer, and it must be unexpired when the answer arrives.
See https://docs.github.com/en/actions/security-for-github-actions/security-hardening-your-deployments/about-security-hardening-with-openid-connect
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from jwt.algorithms import RSAAlgorithm

from auth.jwk import PRIVATE_MEMBERS
from auth.signed_token import GARBAGE_ERRORS
from auth.verdicts import Rejected, RejectReason

__all__ = [
    "DEFAULT_ISSUER",
    "OIDC_ALGORITHMS",
    "OidcTrust",
    "oidc_key_id",
    "verify_oidc_token",
]

DEFAULT_ISSUER = "https://token.actions.githubusercontent.com"
OIDC_ALGORITHMS = ("RS256",)
_MIN_RSA_BITS = 2048
_ID_CLAIMS = ("repository", "repository_id", "job_workflow_ref", "actor_id", "jti")
_MAX_CLAIM = 512
_SIGNATURE_ONLY: Any = {
    "verify_signature": True,
    "verify_exp": False,
    "verify_nbf": False,
    "verify_iat": False,
    "verify_aud": False,
    "verify_iss": False,
    "verify_sub": False,
    "verify_jti": False,
    "require": [],
}


@dataclass(frozen=True)
class OidcTrust:
    """The one trusted OIDC issuer and its JSON Web Key Set as last fetched."""

    issuer: str
    jwks: Mapping[str, Any]


def oidc_key_id(token: str) -> str | None:
    """Return the ``kid`` an OIDC token names (unverified), so its key can be fetched."""
    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except GARBAGE_ERRORS:
        return None
    return kid if isinstance(kid, str) and 0 < len(kid) <= _MAX_CLAIM else None


def verify_oidc_token(
    token: str, *, trust: OidcTrust, audience: str, now: datetime, leeway: timedelta
) -> Mapping[str, Any] | Rejected:
    """Return the claims of a valid token for ``audience`` at ``now``, or why it is not."""
    try:
        header = jwt.get_unverified_header(token)
    except GARBAGE_ERRORS:
        return _invalid("The OIDC token in the signature cannot be read.")
    # Fixed before anything else: HS256 keyed with a public key, or none, is never tried.
    if header.get("alg") not in OIDC_ALGORITHMS:
        return Rejected(
            RejectReason.BAD_ALGORITHM,
            "The OIDC token is not signed with RS256, the only algorithm accepted for it.",
        )
    key = _issuer_key(trust.jwks, header.get("kid"))
    if key is None:
        return Rejected(
            RejectReason.UNKNOWN_KEY,
            "The OIDC token is signed by a key the trusted issuer does not publish.",
        )
    try:
        claims = jwt.decode(token, key, algorithms=list(OIDC_ALGORITHMS), options=_SIGNATURE_ONLY)
    except jwt.InvalidSignatureError:
        return Rejected(RejectReason.BAD_SIGNATURE, "The OIDC token's signature does not verify.")
    except GARBAGE_ERRORS:
        return _invalid("The OIDC token in the signature cannot be read.")
    return _check_claims(claims, trust=trust, audience=audience, now=now, leeway=leeway)


def _check_claims(
    claims: Mapping[str, Any],
    *,
    trust: OidcTrust,
    audience: str,
    now: datetime,
    leeway: timedelta,
) -> Mapping[str, Any] | Rejected:
    issuer = claims.get("iss")
    if not isinstance(issuer, str) or not hmac.compare_digest(
        issuer.encode("utf-8", "replace"), trust.issuer.encode("utf-8")
    ):
        return _invalid("The OIDC token was not issued by the trusted issuer.")
    aud = claims.get("aud")
    if not isinstance(aud, str) or not hmac.compare_digest(
        aud.encode("utf-8", "replace"), audience.encode("ascii")
    ):
        return Rejected(
            RejectReason.KEY_NOT_BOUND,
            "The OIDC token's audience is not the thumbprint of the key that signed the "
            "answer; request a token with audience set to that key's thumbprint.",
        )
    exp, iat = claims.get("exp"), claims.get("iat")
    if type(exp) is not int or type(iat) is not int:
        return _invalid("The OIDC token lacks its exp or iat time.")
    now_s, leeway_s = now.timestamp(), leeway.total_seconds()
    if now_s > exp + leeway_s:
        expired = datetime.fromtimestamp(exp, UTC)
        return Rejected(
            RejectReason.EXPIRED,
            f"The OIDC token expired at {expired:%Y-%m-%d %H:%M:%S} UTC, before the answer "
            "arrived; run the workflow again.",
        )
    nbf = claims.get("nbf", iat)
    if type(nbf) is not int or max(iat, nbf) > now_s + leeway_s:
        return Rejected(RejectReason.NOT_YET_VALID, "The OIDC token is dated in the future.")
    for name in _ID_CLAIMS:
        value = claims.get(name)
        if not isinstance(value, str) or not 0 < len(value) <= _MAX_CLAIM:
            return _invalid(f"The OIDC token lacks the claim {name}.")
    return claims


def _issuer_key(jwks: Mapping[str, Any], kid: object) -> RSAPublicKey | None:
    """Return the issuer's RSA public key named ``kid``, or None."""
    keys = jwks.get("keys")
    if not isinstance(kid, str) or not isinstance(keys, list):
        return None
    for jwk in keys:
        if not isinstance(jwk, Mapping) or jwk.get("kid") != kid:
            continue
        if jwk.get("kty") != "RSA" or PRIVATE_MEMBERS & set(jwk):
            return None
        if jwk.get("alg", "RS256") != "RS256" or jwk.get("use", "sig") != "sig":
            return None
        try:
            key = RSAAlgorithm.from_jwk(dict(jwk))
        except GARBAGE_ERRORS:
            return None
        if isinstance(key, RSAPublicKey) and key.key_size >= _MIN_RSA_BITS:
            return key
        return None
    return None


def _invalid(detail: str) -> Rejected:
    return Rejected(RejectReason.OIDC_INVALID, detail)
