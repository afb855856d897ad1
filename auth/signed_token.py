"""A signed token checked with one key: claims, signer, ticket, act, text, window, replay.

Pure. :func:`verify_with_entry` is the second half of :func:`auth.verify.verify_comment`,
shared with :mod:`auth.oidc_comment`, which checks an agent's OIDC-bound signature with
the ephemeral key its token vouches for.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeGuard

import jwt
from jwt.types import Options

from auth.comment import DIGEST_RE, normalise_text, text_digest
from auth.delegation import DELEGATE_CLAIM, Delegation, read_delegations
from auth.keyring import KeyringEntry
from auth.logins import same_login
from auth.roles import ROLE_FOR_ACT, Act, Role
from auth.verdicts import Accepted, AgentIdentity, Rejected, RejectReason, Verdict

__all__ = [
    "DEFAULT_LIMITS",
    "GARBAGE_ERRORS",
    "MAX_COMMENT_CHARS",
    "VerifyLimits",
    "malformed",
    "verify_with_entry",
]

_MAX_TIMESTAMP = 253402300799  # 9999-12-31T23:59:59Z, the last second datetime can hold
_MAX_JTI_LENGTH = 256
MAX_COMMENT_CHARS = 65_536
_ACT_VALUES = frozenset(act.value for act in Act)

_DECODE_OPTIONS: Options = {
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

# Everything PyJWT and the JSON and crypto layers beneath it raise for garbage input.
GARBAGE_ERRORS = (jwt.PyJWTError, ValueError, TypeError, RecursionError, OverflowError)


@dataclass(frozen=True)
class VerifyLimits:
    """The clock tolerances a signature is checked with."""

    leeway: timedelta = timedelta(seconds=60)
    max_lifetime: timedelta = timedelta(hours=24)

    def __post_init__(self) -> None:
        """Refuse a negative leeway or a lifetime that allows nothing."""
        if self.leeway < timedelta(0):
            raise ValueError("leeway must not be negative")
        if self.max_lifetime <= timedelta(0):
            raise ValueError("max_lifetime must be positive")


DEFAULT_LIMITS = VerifyLimits()


@dataclass(frozen=True)
class _Claims:
    sub: str
    aud: str
    act: Act
    sha256: str
    iat: int
    exp: int
    jti: str
    ask: bool
    delegations: tuple[Delegation, ...] = ()


def verify_with_entry(
    text: str,
    token: str,
    entry: KeyringEntry,
    *,
    author_login: str,
    author_id: int | None,
    ticket: str,
    now: datetime,
    is_jti_used: Callable[[str], bool],
    acts: frozenset[Act],
    judged_digest: str | None,
    limits: VerifyLimits,
) -> Verdict:
    """Check ``token`` with ``entry``'s key and algorithm, then everything it claims."""
    try:
        decoded = jwt.decode_complete(
            token, entry.public_key, algorithms=[entry.alg], options=_DECODE_OPTIONS
        )
    except jwt.InvalidSignatureError:
        return Rejected(
            RejectReason.BAD_SIGNATURE,
            f"The signature does not verify with key {entry.kid}; the token was altered or "
            "signed with another key, so sign the answer again.",
        )
    except jwt.InvalidAlgorithmError:
        return Rejected(
            RejectReason.BAD_ALGORITHM,
            f"The signature does not use {entry.alg}, the algorithm of key {entry.kid}.",
        )
    except GARBAGE_ERRORS:
        return malformed("The signed token cannot be read; sign the answer again.")
    claims = _read_claims(decoded["header"], decoded["payload"])
    if claims is None:
        return malformed(
            "The signed token lacks or mistypes a required claim (sub, aud, act, sha256, "
            "iat, exp, jti), carries an `ask` claim other than true on an answer, or a "
            "`delegate` claim off its schema; sign it again with the current tool."
        )
    if not same_login(claims.sub, entry.login):
        return Rejected(
            RejectReason.KEY_NOT_OWNED,
            f"Key {entry.kid} belongs to {entry.login}, not to the signer the token names; "
            "sign with your own key.",
        )
    ids_differ = entry.user_id is not None and author_id is not None and entry.user_id != author_id
    if not same_login(claims.sub, author_login) or ids_differ:
        return Rejected(
            RejectReason.AUTHOR_MISMATCH,
            "The comment was posted by another account than the signer's; only the owner of "
            "a key may post what it signs.",
        )
    if claims.aud != ticket:
        return Rejected(
            RejectReason.WRONG_TICKET,
            f"The signature is for another ticket; sign the answer for {ticket}.",
        )
    if claims.act not in acts:
        allowed = ", ".join(sorted(act.value for act in acts)) or "nothing"
        return Rejected(
            RejectReason.WRONG_ACT,
            f"A signed {claims.act.value} is not expected here; this ticket takes: {allowed}.",
        )
    role = ROLE_FOR_ACT[claims.act]
    # An agent key answers (where the policy lets it); it never approves or rejects.
    agent_answers = claims.act is Act.ANSWER and Role.AGENT in entry.roles
    if role not in entry.roles and not agent_answers:
        return Rejected(
            RejectReason.ROLE_MISSING,
            f"Key {entry.kid} of {entry.login} lacks the {role.value} role needed to "
            f"{claims.act.value}; ask an admin to grant it in the keyring.",
        )
    # An answer and a delegation sign their own text; a judgement, the answer it judges.
    signs_text = claims.act in (Act.ANSWER, Act.DELEGATE)
    expected = text_digest(text) if signs_text else judged_digest
    if expected is None or not hmac.compare_digest(
        claims.sha256.encode("ascii"), expected.encode("utf-8", "replace")
    ):
        judged = "text" if signs_text else "answer under review"
        return Rejected(
            RejectReason.TEXT_MISMATCH,
            f"The {judged} differs from what was signed (edited after signing?); "
            "sign the final text again and post it as a new comment.",
        )
    return _check_window_and_replay(
        text, claims, entry, now=now, is_jti_used=is_jti_used, limits=limits
    )


def _check_window_and_replay(
    text: str,
    claims: _Claims,
    entry: KeyringEntry,
    *,
    now: datetime,
    is_jti_used: Callable[[str], bool],
    limits: VerifyLimits,
) -> Verdict:
    # Compared as POSIX seconds: datetime arithmetic would overflow near year 9999.
    now_s, leeway_s = now.timestamp(), limits.leeway.total_seconds()
    issued_at = datetime.fromtimestamp(claims.iat, UTC)
    expires_at = datetime.fromtimestamp(claims.exp, UTC)
    if claims.iat > now_s + leeway_s:
        return Rejected(
            RejectReason.NOT_YET_VALID,
            f"The signature is dated {issued_at:%Y-%m-%d %H:%M:%S} UTC, in the future; "
            "check your clock and sign again.",
        )
    if now_s > claims.exp + leeway_s:
        return Rejected(
            RejectReason.EXPIRED,
            f"The signature expired at {expires_at:%Y-%m-%d %H:%M:%S} UTC; sign the answer "
            "again and post it as a new comment.",
        )
    if not 0 < claims.exp - claims.iat <= limits.max_lifetime.total_seconds():
        return Rejected(
            RejectReason.LIFETIME_TOO_LONG,
            f"The signature is valid for longer than the allowed {limits.max_lifetime} "
            "(or ends before it starts); sign again with a shorter lifetime.",
        )
    if is_jti_used(claims.jti):
        return Rejected(
            RejectReason.REPLAYED,
            "This signature was already used; sign the answer again to post it anew.",
        )
    return Accepted(
        text=normalise_text(text),
        act=claims.act,
        signer=entry.login,
        kid=entry.kid,
        jti=claims.jti,
        digest=claims.sha256,
        issued_at=issued_at,
        expires_at=expires_at,
        ask=claims.ask,
        agent=None if entry.on_behalf_of is None else AgentIdentity(entry.on_behalf_of),
        delegations=claims.delegations,
    )


def _read_claims(header: Mapping[str, Any], payload: Mapping[str, Any]) -> _Claims | None:
    sub, aud, act, sha256, jti = (payload.get(n) for n in ("sub", "aud", "act", "sha256", "jti"))
    iat, exp = payload.get("iat"), payload.get("exp")
    # Optional, and strict when present: exactly JSON true, and on an answer only.
    ask = payload.get("ask", False)
    if "ask" in payload and not (ask is True and act == Act.ANSWER.value):
        return None
    # Required on a delegation, and only there; its schema is fixed (auth.delegation).
    delegations: tuple[Delegation, ...] | None = ()
    if act == Act.DELEGATE.value or DELEGATE_CLAIM in payload:
        delegations = None
        if act == Act.DELEGATE.value:
            delegations = read_delegations(payload.get(DELEGATE_CLAIM))
    if delegations is None:
        return None
    if not (
        header.get("typ") == "JWT"
        and isinstance(sub, str)
        and isinstance(aud, str)
        and isinstance(act, str)
        and act in _ACT_VALUES
        and isinstance(sha256, str)
        and DIGEST_RE.fullmatch(sha256) is not None
        and isinstance(jti, str)
        and 0 < len(jti) <= _MAX_JTI_LENGTH
        and _is_timestamp(iat)
        and _is_timestamp(exp)
    ):
        return None
    return _Claims(
        sub=sub,
        aud=aud,
        act=Act(act),
        sha256=sha256,
        iat=iat,
        exp=exp,
        jti=jti,
        ask=ask is True,
        delegations=delegations,
    )


def _is_timestamp(value: object) -> TypeGuard[int]:
    # bool is an int in Python but not a JSON number; floats are not NumericDates we issue.
    return type(value) is int and 0 <= value <= _MAX_TIMESTAMP


def malformed(detail: str) -> Rejected:
    """Return the rejection of a comment that cannot be read."""
    return Rejected(RejectReason.MALFORMED, detail)
