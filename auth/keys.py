"""Private signing keys: making them, and keeping them in a file only their owner can read.

A private key file is one JSON private JWK with an extra ``login`` member::

    {"kty": "OKP", "crv": "Ed25519", "x": "...", "d": "...", "kid": "...",
     "alg": "EdDSA", "use": "sig", "login": "alice"}

The ``kid`` is always the RFC 7638 thumbprint of the public key, so a kid names exactly
one key and cannot be chosen to collide with someone else's.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from auth.errors import JWKError, KeyFileError, SigningError
from auth.jwk import (
    EDDSA,
    ES256,
    SUPPORTED_ALGS,
    PrivateKey,
    alg_for_key,
    private_key_from_members,
    private_scalar,
    public_members,
    thumbprint,
)
from auth.logins import is_valid_login

_KEY_FILE_MEMBERS = frozenset({"kty", "crv", "x", "y", "d", "kid", "alg", "use", "login"})
_KEY_FILE_MODE = 0o600


@dataclass(frozen=True)
class SigningKey:
    """A signer's private key, with the kid and login the keyring knows it by."""

    kid: str
    alg: str
    login: str
    # Kept out of repr so a logged or printed key never shows its secret.
    private_key: PrivateKey = field(repr=False, compare=False)

    def __post_init__(self) -> None:
        """Refuse a key whose alg, kid or login does not fit its private key."""
        if not is_valid_login(self.login):
            raise SigningError(f"{self.login!r} is not a GitHub login")
        try:
            alg = alg_for_key(self.private_key)
        except JWKError as exc:
            raise SigningError(str(exc)) from exc
        if alg != self.alg:
            raise SigningError(f'alg "{self.alg}" does not match the key, which is for "{alg}"')
        if self.kid != thumbprint(self.private_key.public_key()):
            raise SigningError("kid is not the RFC 7638 thumbprint of the key")


def generate_signing_key(*, login: str, alg: str = EDDSA) -> SigningKey:
    """Make a new key pair for ``login``: Ed25519 by default, P-256 for ``alg="ES256"``."""
    private_key: PrivateKey
    if alg == EDDSA:
        private_key = Ed25519PrivateKey.generate()
    elif alg == ES256:
        private_key = ec.generate_private_key(ec.SECP256R1())
    else:
        raise SigningError(f"algorithm {alg!r} is not supported; use one of {SUPPORTED_ALGS}")
    return SigningKey(
        kid=thumbprint(private_key.public_key()), alg=alg, login=login, private_key=private_key
    )


def public_jwk(key: SigningKey) -> dict[str, str]:
    """Return the public JWK of a signing key, as the keyring stores it."""
    return {
        **public_members(key.private_key.public_key()),
        "kid": key.kid,
        "alg": key.alg,
        "use": "sig",
    }


def signing_key_to_json(key: SigningKey) -> str:
    """Return the private key file text for a signing key."""
    jwk = {**public_jwk(key), "d": private_scalar(key.private_key), "login": key.login}
    return json.dumps(jwk, indent=2) + "\n"


def signing_key_from_json(text: str, *, source: str = "private key") -> SigningKey:
    """Parse private key file text, checking that every member fits the key."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise KeyFileError(
            f"{source} is not valid JSON (line {exc.lineno}, column {exc.colno}); "
            "it should be the file `ticketproxy keygen` wrote"
        ) from None
    if not isinstance(data, dict):
        raise KeyFileError(f"{source} must hold one JSON object, a private JWK")
    unknown = sorted(set(data) - _KEY_FILE_MEMBERS)
    if unknown:
        raise KeyFileError(
            f"{source} has unknown members {unknown}; allowed are {sorted(_KEY_FILE_MEMBERS)}"
        )
    try:
        alg, private_key = private_key_from_members(data)
    except JWKError as exc:
        # The JWK messages name members, never their values, so no secret leaks here.
        raise KeyFileError(f"{source}: {exc}") from None
    kid, login = data.get("kid"), data.get("login")
    if kid != thumbprint(private_key.public_key()):
        raise KeyFileError(
            f'{source}: "kid" must be the RFC 7638 thumbprint of the key; '
            "the file was edited or is not from `ticketproxy keygen`"
        )
    if not isinstance(login, str) or not is_valid_login(login):
        raise KeyFileError(f'{source}: "login" must be the GitHub login of the key\'s owner')
    return SigningKey(kid=kid, alg=alg, login=login, private_key=private_key)


def load_signing_key(path: str | os.PathLike[str]) -> SigningKey:
    """Read a private key file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KeyFileError(
            f"no private key file at {path}; create one with `ticketproxy keygen`"
        ) from None
    except OSError as exc:
        raise KeyFileError(f"cannot read private key file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise KeyFileError(f"private key file {path} is not UTF-8 text") from None
    return signing_key_from_json(text, source=f"private key file {path}")


def write_signing_key(path: str | os.PathLike[str], key: SigningKey) -> None:
    """Write a private key file readable only by its owner, never replacing an existing file."""
    path = Path(path)
    # Write a private temporary file, then hard-link it into place: the link is atomic and
    # fails if the target exists, so no reader ever sees half a key and no key is clobbered.
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, _KEY_FILE_MODE)
    except OSError as exc:
        raise KeyFileError(f"cannot create private key file {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            os.fchmod(file.fileno(), _KEY_FILE_MODE)  # the umask may have removed owner bits
            file.write(signing_key_to_json(key))
            file.flush()
            os.fsync(file.fileno())
        os.link(temporary, path)
    except FileExistsError:
        raise KeyFileError(
            f"refusing to overwrite the existing file {path}; "
            "move it away first, or choose another path"
        ) from None
    except OSError as exc:
        raise KeyFileError(f"cannot write private key file {path}: {exc.strerror}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
