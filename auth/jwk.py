"""JSON Web Keys (RFC 7517) for the two key types ticketproxy accepts, and their thumbprints.

Only Ed25519 (``OKP``/``Ed25519``, alg ``EdDSA``, RFC 8037) and P-256 (``EC``/``P-256``, alg
``ES256``, RFC 7518) keys exist here. The algorithm is always derived from the key type,
never taken from a token, so a key can only ever verify the one algorithm it was made for.
Errors are :class:`~auth.errors.JWKError`; callers add the file and key they came from.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from auth.errors import JWKError

PublicKey = Ed25519PublicKey | ec.EllipticCurvePublicKey
PrivateKey = Ed25519PrivateKey | ec.EllipticCurvePrivateKey

EDDSA = "EdDSA"
ES256 = "ES256"
SUPPORTED_ALGS = (EDDSA, ES256)

# Members that only a private key has (RFC 7518 section 6, RFC 8037): a keyring that
# holds one has leaked a secret, and a public-key slot must never accept a symmetric key.
PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})

_B64URL_RE = re.compile(r"[A-Za-z0-9_-]*")
_COORDINATE_BYTES = 32  # Ed25519 keys and P-256 coordinates and scalars are all 32 bytes.
_KTY_CRV_ALG = {("OKP", "Ed25519"): EDDSA, ("EC", "P-256"): ES256}


def b64url_encode(data: bytes) -> str:
    """Encode bytes as unpadded base64url, as JOSE does."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(value: object, *, member: str) -> bytes:
    """Decode an unpadded base64url member, refusing padding, other alphabets and slack bits."""
    if not isinstance(value, str) or _B64URL_RE.fullmatch(value) is None:
        raise JWKError(f'member "{member}" must be an unpadded base64url string')
    try:
        data = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError) as exc:
        raise JWKError(f'member "{member}" is not valid base64url') from exc
    # A non-canonical encoding would let one key have several spellings (and kids).
    if b64url_encode(data) != value:
        raise JWKError(f'member "{member}" is not canonical base64url')
    return data


def alg_for_key(key: PublicKey | PrivateKey) -> str:
    """Return the JWS algorithm a key is for, refusing curves other than P-256."""
    if isinstance(key, Ed25519PublicKey | Ed25519PrivateKey):
        return EDDSA
    if isinstance(key.curve, ec.SECP256R1):
        return ES256
    raise JWKError(f"curve {key.curve.name} is not supported; use Ed25519 or P-256")


def public_members(key: PublicKey) -> dict[str, str]:
    """Return the required public members of a key's JWK: kty, crv, x and, for EC, y."""
    if isinstance(key, Ed25519PublicKey):
        raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return {"kty": "OKP", "crv": "Ed25519", "x": b64url_encode(raw)}
    alg_for_key(key)
    numbers = key.public_numbers()
    return {
        "kty": "EC",
        "crv": "P-256",
        "x": b64url_encode(numbers.x.to_bytes(_COORDINATE_BYTES, "big")),
        "y": b64url_encode(numbers.y.to_bytes(_COORDINATE_BYTES, "big")),
    }


def private_scalar(key: PrivateKey) -> str:
    """Return the private member ``d`` of a key's JWK."""
    if isinstance(key, Ed25519PrivateKey):
        raw = key.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        return b64url_encode(raw)
    alg_for_key(key)
    return b64url_encode(key.private_numbers().private_value.to_bytes(_COORDINATE_BYTES, "big"))


def thumbprint(key: PublicKey) -> str:
    """Return the RFC 7638 SHA-256 thumbprint of a public key, as unpadded base64url."""
    # RFC 7638 section 3: the required members only, sorted, no whitespace.
    canonical = json.dumps(public_members(key), sort_keys=True, separators=(",", ":"))
    return b64url_encode(hashlib.sha256(canonical.encode("ascii")).digest())


def alg_for_members(members: Mapping[str, Any]) -> str:
    """Return the algorithm fixed by a JWK's kty and crv, checking any ``alg`` it states."""
    kty, crv = members.get("kty"), members.get("crv")
    if kty in {"RSA", "oct"}:
        raise JWKError(f'kty "{kty}" is not accepted; use an Ed25519 (or P-256) key')
    alg = _KTY_CRV_ALG.get((kty, crv)) if isinstance(kty, str) and isinstance(crv, str) else None
    if alg is None:
        raise JWKError(
            f"kty {kty!r} with crv {crv!r} is not supported; "
            'use kty "OKP" with crv "Ed25519", or kty "EC" with crv "P-256"'
        )
    stated = members.get("alg", alg)
    if stated != alg:
        raise JWKError(f'alg {stated!r} does not match the key type, which is for "{alg}"')
    if members.get("use", "sig") != "sig":
        raise JWKError('member "use" must be "sig"')
    return alg


def public_key_from_members(members: Mapping[str, Any]) -> tuple[str, PublicKey]:
    """Return the algorithm and public key a JWK describes."""
    alg = alg_for_members(members)
    x = _coordinate(members, "x")
    if alg == EDDSA:
        try:
            return alg, Ed25519PublicKey.from_public_bytes(x)
        except ValueError as exc:
            raise JWKError('member "x" is not an Ed25519 public key') from exc
    y = _coordinate(members, "y")
    numbers = ec.EllipticCurvePublicNumbers(
        int.from_bytes(x, "big"), int.from_bytes(y, "big"), ec.SECP256R1()
    )
    try:
        return alg, numbers.public_key()
    except ValueError as exc:
        raise JWKError("members x and y are not a point on P-256") from exc


def private_key_from_members(members: Mapping[str, Any]) -> tuple[str, PrivateKey]:
    """Return the algorithm and private key a private JWK describes, checked against x/y."""
    alg, public = public_key_from_members(members)
    d = _coordinate(members, "d")
    private: PrivateKey
    if alg == EDDSA:
        private = Ed25519PrivateKey.from_private_bytes(d)
    else:
        try:
            private = ec.derive_private_key(int.from_bytes(d, "big"), ec.SECP256R1())
        except ValueError as exc:
            raise JWKError('member "d" is not a valid P-256 private scalar') from exc
    if public_members(private.public_key()) != public_members(public):
        raise JWKError('the public members do not belong to the private member "d"')
    return alg, private


def _coordinate(members: Mapping[str, Any], member: str) -> bytes:
    if member not in members:
        raise JWKError(f'member "{member}" is missing')
    data = b64url_decode(members[member], member=member)
    if len(data) != _COORDINATE_BYTES:
        raise JWKError(f'member "{member}" must encode {_COORDINATE_BYTES} bytes, not {len(data)}')
    return data
