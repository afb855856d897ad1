"""The keyring: who may sign, with which public key, in which roles.

The file is a JWKS (RFC 7517 section 5) whose keys carry members of ticketproxy's own
(``login``, ``user_id``, ``roles``, and the optional ``not_before`` and ``revoked_at``)::

    {"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "...", "kid": "...", "alg": "EdDSA",
               "use": "sig", "login": "alice", "user_id": 1001, "roles": ["editor"],
               "not_before": "2026-01-01T00:00:00Z", "revoked_at": "2026-06-01T00:00:00Z"}]}

Validation is strict because the keyring is the whole trust base: a key is revoked by
removing it, rotated by adding a new kid, and anything unexpected is refused. The optional
``not_before`` and ``revoked_at`` (ISO 8601 with a time zone) bound when a key may sign;
keeping a rotated or revoked key with ``revoked_at`` set, rather than deleting it, lets an
offline audit still verify what it signed inside its window.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from auth.agents import OidcAgent, agent_of, oidc_agents_from_json
from auth.errors import JWKError, KeyringError, KeyringUnavailable
from auth.jwk import PRIVATE_MEMBERS, PublicKey, public_key_from_members, public_members, thumbprint
from auth.keys import SigningKey, public_jwk
from auth.logins import is_valid_login
from auth.roles import Role

log = logging.getLogger(__name__)

_ENTRY_MEMBERS = frozenset(
    {"kty", "crv", "x", "y", "kid", "alg", "use", "login", "user_id", "roles"}
    | {"not_before", "revoked_at"}  # optional: the window in which the key may sign
    | {"on_behalf_of"}  # an agent key's editor (auth.agents)
)
_KNOWN_ROLES = ", ".join(role.value for role in Role)
_NEW_KEYRING_MODE = 0o644  # public keys only: readable by the service account


@dataclass(frozen=True)
class KeyringEntry:
    """One public key, the GitHub account that owns it, and the roles it may sign for."""

    kid: str
    alg: str
    login: str
    roles: frozenset[Role]
    public_key: PublicKey
    user_id: int | None = None
    not_before: datetime | None = None
    revoked_at: datetime | None = None
    # An agent key (role ``agent``): the login of the editor whose agent it is.
    on_behalf_of: str | None = None

    def active_at(self, when: datetime) -> bool:
        """Return whether the key may sign at ``when``: not before its start, not once revoked."""
        if self.not_before is not None and when < self.not_before:
            return False
        return self.revoked_at is None or when < self.revoked_at

    def to_jwk(self) -> dict[str, Any]:
        """Return this entry as a keyring JWK."""
        jwk: dict[str, Any] = {
            **public_members(self.public_key),
            "kid": self.kid,
            "alg": self.alg,
            "use": "sig",
            "login": self.login,
        }
        if self.user_id is not None:
            jwk["user_id"] = self.user_id
        jwk["roles"] = sorted(role.value for role in self.roles)
        if self.on_behalf_of is not None:
            jwk["on_behalf_of"] = self.on_behalf_of
        for name, value in (("not_before", self.not_before), ("revoked_at", self.revoked_at)):
            if value is not None:
                jwk[name] = value.astimezone(UTC).isoformat().replace("+00:00", "Z")
        return jwk


class Keyring:
    """The public keys that may sign answers, looked up by kid."""

    def __init__(
        self,
        entries: Iterable[KeyringEntry] = (),
        *,
        source: str = "keyring",
        oidc_agents: Iterable[OidcAgent] = (),
    ) -> None:
        """Hold ``entries``, refusing a repeated kid or one login with two user ids."""
        self.oidc_agents = tuple(oidc_agents)
        self._entries: dict[str, KeyringEntry] = {}
        user_ids: dict[str, int] = {}
        for index, entry in enumerate(entries):
            where = f"{source}: key {index} (kid {entry.kid})"
            if entry.kid in self._entries:
                raise KeyringError(f"{where} appears twice; remove the duplicate")
            self._entries[entry.kid] = entry
            if entry.user_id is not None:
                known = user_ids.setdefault(entry.login.lower(), entry.user_id)
                if known != entry.user_id:
                    raise KeyringError(
                        f"{where}: login {entry.login} has user_id {entry.user_id} here but "
                        f"{known} on another key; a GitHub account has one id, so fix the wrong one"
                    )

    @classmethod
    def from_jwks(cls, data: Mapping[str, Any], *, source: str = "keyring") -> Keyring:
        """Build a keyring from a parsed JWKS, refusing anything it cannot fully trust."""
        keys = data.get("keys") if isinstance(data, Mapping) else None
        if not isinstance(keys, list):
            raise KeyringError(f'{source} must be a JSON object with a "keys" list (a JWKS)')
        entries = [_entry_from_jwk(jwk, where=f"{source}: key {i}") for i, jwk in enumerate(keys)]
        agents = oidc_agents_from_json(data.get("oidc_agents"), source=source)
        return cls(entries, source=source, oidc_agents=agents)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Keyring:
        """Read a keyring file; a missing file is an error, not an empty keyring."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise KeyringError(
                f"no keyring file at {path}; create it with `ticketproxy keygen`, "
                "which adds your public key to the keyring"
            ) from None
        except OSError as exc:
            raise KeyringError(f"cannot read keyring file {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise KeyringError(f"keyring file {path} is not UTF-8 text") from None
        return cls.parse(text, path=path)

    @classmethod
    def parse(cls, text: str, *, path: Path) -> Keyring:
        """Read a keyring from the text of the file at ``path`` (named in errors)."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise KeyringError(
                f"keyring file {path} is not valid JSON "
                f"(line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from None
        return cls.from_jwks(data, source=f"keyring file {path}")

    def get(self, kid: str) -> KeyringEntry | None:
        """Return the entry for ``kid``, or None when no such key is trusted."""
        return self._entries.get(kid)

    def __len__(self) -> int:
        """Return the number of keys."""
        return len(self._entries)

    def __iter__(self) -> Iterator[KeyringEntry]:
        """Iterate over the entries in file order."""
        return iter(self._entries.values())

    def __repr__(self) -> str:
        """Show the kids and logins, which are public."""
        keys = ", ".join(f"{e.kid}={e.login}" for e in self)
        return f"Keyring({keys})"

    def logins_with_role(self, role: Role) -> frozenset[str]:
        """Return the logins, lower-cased, that hold ``role`` on at least one key."""
        # Lower-cased because GitHub logins are case-insensitive: Alice and alice are one.
        return frozenset(e.login.lower() for e in self if role in e.roles)

    def to_jwks(self) -> dict[str, Any]:
        """Return the keyring as a JWKS, the form ``from_jwks`` reads."""
        jwks: dict[str, Any] = {"keys": [entry.to_jwk() for entry in self]}
        if self.oidc_agents:
            jwks["oidc_agents"] = [agent.to_json() for agent in self.oidc_agents]
        return jwks


def add_key_to_keyring(
    path: str | os.PathLike[str],
    key: SigningKey,
    *,
    roles: Iterable[Role],
    user_id: int | None = None,
    on_behalf_of: str | None = None,
) -> KeyringEntry:
    """Add a signing key's public half to a keyring file, creating the file if missing."""
    path = Path(path)
    keyring = Keyring.load(path) if path.exists() else Keyring()
    if keyring.get(key.kid) is not None:
        raise KeyringError(f"kid {key.kid} is already in keyring file {path}; nothing was changed")
    entry = _entry_from_jwk(
        {
            **public_jwk(key),
            "login": key.login,
            "roles": [Role(role).value for role in roles],
            **({} if user_id is None else {"user_id": user_id}),
            **({} if on_behalf_of is None else {"on_behalf_of": on_behalf_of}),
        },
        where=f"new key for {key.login}",
    )
    # The constructor re-checks the whole set, so a new entry cannot spoil the file.
    updated = Keyring(
        [*keyring, entry], source=f"keyring file {path}", oidc_agents=keyring.oidc_agents
    )
    _write_atomically(path, json.dumps(updated.to_jwks(), indent=2) + "\n")
    return entry


def _entry_from_jwk(jwk: object, *, where: str) -> KeyringEntry:
    if not isinstance(jwk, Mapping):
        raise KeyringError(f"{where} must be a JSON object (a JWK)")
    kid = jwk.get("kid")
    if isinstance(kid, str):
        where = f"{where} (kid {kid})"
    leaked = sorted(PRIVATE_MEMBERS & set(jwk))
    if leaked:
        raise KeyringError(
            f"{where} has private members {leaked}: the keyring holds public keys only; "
            "delete this entry, treat the key as leaked and make another with `ticketproxy keygen`"
        )
    try:
        alg, public_key = public_key_from_members(jwk)
    except JWKError as exc:
        raise KeyringError(f"{where}: {exc}") from None
    unknown = sorted(set(jwk) - _ENTRY_MEMBERS)
    if unknown:
        raise KeyringError(
            f"{where} has unknown members {unknown}; allowed are {sorted(_ENTRY_MEMBERS)}"
        )
    expected_kid = thumbprint(public_key)
    if kid != expected_kid:
        raise KeyringError(
            f'{where}: "kid" must be the RFC 7638 thumbprint of the key, {expected_kid}; '
            "copy the entry `ticketproxy keygen` printed"
        )
    login = jwk.get("login")
    if not isinstance(login, str) or not is_valid_login(login):
        raise KeyringError(f'{where}: "login" must be the GitHub login of the key\'s owner')
    roles = jwk.get("roles")
    if not isinstance(roles, list) or not roles:
        raise KeyringError(f'{where}: "roles" must be a non-empty list of: {_KNOWN_ROLES}')
    try:
        role_set = frozenset(Role(role) for role in roles)
    except ValueError:
        raise KeyringError(f'{where}: "roles" may only hold: {_KNOWN_ROLES}') from None
    on_behalf_of = agent_of(role_set, jwk.get("on_behalf_of"), where=where)
    user_id = jwk.get("user_id")
    if user_id is not None and (type(user_id) is not int or user_id <= 0):
        raise KeyringError(f'{where}: "user_id" must be the positive GitHub account id of {login}')
    not_before = _instant(jwk, "not_before", where=where)
    revoked_at = _instant(jwk, "revoked_at", where=where)
    if not_before is not None and revoked_at is not None and revoked_at <= not_before:
        raise KeyringError(
            f'{where}: "revoked_at" must be later than "not_before", or the key never counts'
        )
    return KeyringEntry(
        kid=expected_kid,
        alg=alg,
        login=login,
        roles=role_set,
        public_key=public_key,
        user_id=user_id,
        not_before=not_before,
        revoked_at=revoked_at,
        on_behalf_of=on_behalf_of,
    )


def _instant(jwk: Mapping[str, Any], member: str, *, where: str) -> datetime | None:
    value = jwk.get(member)
    if value is None:
        return None
    example = "2026-01-31T12:00:00Z"
    if not isinstance(value, str):
        raise KeyringError(f'{where}: "{member}" must be an ISO 8601 time string like {example}')
    try:
        instant = datetime.fromisoformat(value)
    except ValueError:
        raise KeyringError(
            f'{where}: "{member}" is not an ISO 8601 time; write it like {example}'
        ) from None
    # A time without a zone means a different instant on every server: refuse to guess.
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise KeyringError(f'{where}: "{member}" needs a time zone; write it like {example}')
    return instant.astimezone(UTC)


def _write_atomically(path: Path, text: str) -> None:
    # A temporary file in the same directory, then os.replace: readers see the old file
    # or the new one, never half of either.
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = _NEW_KEYRING_MODE
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise KeyringError(f"cannot write keyring file {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            os.fchmod(file.fileno(), mode)
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        raise KeyringError(f"cannot write keyring file {path}: {exc.strerror}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


class KeyringSource:
    """The keyring file as it is now, re-read at every use, so a revocation always takes effect.

    The file is read and hashed at each call (a keyring is a few kilobytes, and it is read
    once per signed comment): a change shows whatever kept the modification time (``cp -p``,
    ``rsync -t``), within the same second, or of the same size. While the file is missing,
    unreadable or invalid (an editor saving it in place, caught half-written), ``current``
    raises :class:`KeyringUnavailable`: nothing is judged, neither with the old keys nor
    against them, and the caller comes back to what it could not judge once the file is
    whole again.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        # At start-up a missing or invalid file is a configuration error, said as such.
        self._keyring = Keyring.load(path)
        self._digest: bytes | None = None
        self._problem: str | None = None
        self.current()

    @property
    def problem(self) -> str | None:
        """Return why the keyring could not be used at the last read, or None."""
        return self._problem

    def current(self) -> Keyring:
        """Return the keyring as the file says now; raise KeyringUnavailable if it cannot."""
        try:
            raw = self.path.read_bytes()
            digest = hashlib.sha256(raw).digest()
            if digest != self._digest:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise KeyringError(f"keyring file {self.path} is not UTF-8 text") from None
                keyring = Keyring.parse(text, path=self.path)
                self._keyring, self._digest = keyring, digest
                log.info("keyring loaded: %d key(s) from %s", len(keyring), self.path)
        except (OSError, KeyringError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            problem = f"keyring file {self.path} cannot be used now: {reason}"
            if problem != self._problem:
                log.error("%s; no signed comment is judged until it is whole again", problem)
            self._problem = problem
            raise KeyringUnavailable(problem) from None
        if self._problem is not None:
            log.warning("keyring file %s is whole again", self.path)
            self._problem = None
        return self._keyring
