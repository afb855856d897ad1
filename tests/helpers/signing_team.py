"""The signers every auth test uses, with keys generated afresh in each test run.

No private key is committed: :func:`make_team` generates them once per process, cached so
hypothesis tests (which cannot take function-scoped fixtures) share them too.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from auth.keyring import Keyring
from auth.keys import SigningKey, generate_signing_key, public_jwk
from auth.roles import Role

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
TICKET = "acme/agents#12"


@dataclass(frozen=True)
class Team:
    """Who signs in the tests, and the keyring that knows them."""

    alice: SigningKey  # editor, Ed25519, GitHub id 1001
    bob: SigningKey  # reviewer only, P-256, GitHub id 1002
    carol: SigningKey  # editor and reviewer, P-256
    mallory: SigningKey  # an editor with a key of her own, and bad intentions
    outsider: SigningKey  # a valid key that is in no keyring
    keyring: Keyring


def keyring_jwk(
    key: SigningKey, roles: Iterable[Role], user_id: int | None = None
) -> dict[str, Any]:
    """Return the keyring entry JWK for ``key``."""
    jwk: dict[str, Any] = {**public_jwk(key), "login": key.login, "roles": [r.value for r in roles]}
    if user_id is not None:
        jwk["user_id"] = user_id
    return jwk


@functools.cache
def make_team() -> Team:
    """Generate the team's keys and keyring once per test process."""
    alice = generate_signing_key(login="alice")
    bob = generate_signing_key(login="bob", alg="ES256")
    carol = generate_signing_key(login="carol", alg="ES256")
    mallory = generate_signing_key(login="mallory")
    outsider = generate_signing_key(login="oscar")
    keyring = Keyring.from_jwks(
        {
            "keys": [
                keyring_jwk(alice, [Role.EDITOR], user_id=1001),
                keyring_jwk(bob, [Role.REVIEWER], user_id=1002),
                keyring_jwk(carol, [Role.EDITOR, Role.REVIEWER]),
                keyring_jwk(mallory, [Role.EDITOR], user_id=6666),
            ]
        }
    )
    return Team(
        alice=alice, bob=bob, carol=carol, mallory=mallory, outsider=outsider, keyring=keyring
    )
