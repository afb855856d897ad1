"""Verifying a signed comment: one pure function from a comment to a verdict.

:func:`verify_comment` never raises for anything a commenter can write. Every way a
comment can fail is a :class:`Rejected` with a :class:`RejectReason` and a one-sentence
``detail`` that is safe to post on the public ticket: it never echoes the token and
tells the editor what to fix. Checks run cheapest and unauthenticated first, but nothing
in the token is believed before its signature has been checked with the key and the
algorithm the keyring (never the token) names.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, TypeGuard

import jwt
from jwt.types import Options

from auth.comment import DIGEST_RE, normalise_text, split_signed_comment, text_digest
from auth.errors import CommentFormatError
from auth.keyring import Keyring, KeyringEntry
from auth.logins import same_login
from auth.roles import ROLE_FOR_ACT, Act

_KID_SHAPE_RE = re.compile(r"[A-Za-z0-9_-]{43}")  # an RFC 7638 SHA-256 thumbprint
_MAX_TIMESTAMP = 253402300799  # 9999-12-31T23:59:59Z, the last second datetime can hold
_MAX_JTI_LENGTH = 256
MAX_COMMENT_CHARS = 65_536
_ACT_VALUES = frozenset(act.value for act in Act)

# PyJWT checks the signature only: the time checks use the injected clock, never the
# wall clock, and the audience is compared exactly below.
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
_GARBAGE_ERRORS = (jwt.PyJWTError, ValueError, TypeError, RecursionError, OverflowError)


class RejectReason(StrEnum):
    """Why a comment does not count as a signed answer or judgement."""

    UNSIGNED = "unsigned"
    MALFORMED = "malformed"
    UNKNOWN_KEY = "unknown_key"
    KEY_REVOKED = "key_revoked"
    BAD_ALGORITHM = "bad_algorithm"
    BAD_SIGNATURE = "bad_signature"
    AUTHOR_MISMATCH = "author_mismatch"
    KEY_NOT_OWNED = "key_not_owned"
    WRONG_TICKET = "wrong_ticket"
    WRONG_ACT = "wrong_act"
    TEXT_MISMATCH = "text_mismatch"
    NOT_YET_VALID = "not_yet_valid"
    EXPIRED = "expired"
    LIFETIME_TOO_LONG = "lifetime_too_long"
    REPLAYED = "replayed"
    ROLE_MISSING = "role_missing"


@dataclass(frozen=True)
class Accepted:
    """A comment whose signature, signer, ticket, text and time window all check out."""

    text: str
    act: Act
    signer: str
    kid: str
    jti: str
    digest: str
    issued_at: datetime
    expires_at: datetime
    # Signed with ``--ask``: the answer is a question back to the agent's user, not final.
    ask: bool = False


@dataclass(frozen=True)
class Rejected:
    """A comment that does not count, and a public sentence saying what to fix."""

    reason: RejectReason
    detail: str


Verdict = Accepted | Rejected


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


def verify_comment(
    body: str,
    *,
    author_login: str,
    author_id: int | None,
    ticket: str,
    keyring: Keyring,
    now: datetime,
    is_jti_used: Callable[[str], bool],
    acts: frozenset[Act] = frozenset({Act.ANSWER}),
    judged_digest: str | None = None,
    limits: VerifyLimits = DEFAULT_LIMITS,
) -> Verdict:
    """Decide whether a comment by ``author_login`` is a valid signed act on ``ticket``.

    ``acts`` lists what this comment may do here; ``judged_digest`` is the digest of the
    answer under review when approvals or rejections are accepted. ``is_jti_used`` is
    asked last, only for an otherwise valid signature; the caller must then record the
    jti before acting on the verdict. Raises ``ValueError`` only for a naive ``now``;
    an exception from ``is_jti_used`` propagates, since a store outage is not a verdict.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be an aware datetime, such as datetime.now(UTC)")
    if len(body) > MAX_COMMENT_CHARS:
        # GitHub stores at most 65,536 characters; anything longer did not come from it.
        return _malformed(
            f"The comment is longer than GitHub allows ({MAX_COMMENT_CHARS} characters)."
        )
    try:
        body.encode("utf-8")
        text, token = split_signed_comment(body)
    except UnicodeEncodeError:
        return _malformed("The comment is not valid Unicode; post it again from a normal editor.")
    except CommentFormatError as exc:
        return _malformed(f"The comment is ambiguous: {exc}.")
    if token is None:
        return Rejected(
            RejectReason.UNSIGNED,
            "The comment has no signature trailer; sign the answer with your key and post it "
            "with the trailer as its last line.",
        )
    try:
        header = jwt.get_unverified_header(token)
    except _GARBAGE_ERRORS:
        return _malformed("The signature trailer does not hold a valid token; sign it again.")
    kid = header.get("kid")
    if not isinstance(kid, str):
        return _malformed("The signature names no key id; sign it again with your key.")
    entry = keyring.get(kid)
    if entry is None:
        named = f"key {kid}" if _KID_SHAPE_RE.fullmatch(kid) else "the signing key"
        return Rejected(
            RejectReason.UNKNOWN_KEY,
            f"The keyring does not hold {named}; sign with a key in the keyring, or ask an "
            "admin to add your public key.",
        )
    # Checked at `now`, so an audit that passes a comment's creation time still accepts
    # what a since-rotated key signed inside its window.
    if not entry.active_at(now):
        if entry.revoked_at is not None and now >= entry.revoked_at:
            when = f"was revoked at {entry.revoked_at:%Y-%m-%d %H:%M:%S} UTC"
        else:
            when = f"is not valid before {entry.not_before:%Y-%m-%d %H:%M:%S} UTC"
        return Rejected(
            RejectReason.KEY_REVOKED,
            f"Key {entry.kid} of {entry.login} {when}; sign again with a current key.",
        )
    # The keyring fixes the algorithm: this refuses none, HS256 keyed with the public key,
    # and any other algorithm than the one the key was made for.
    if header.get("alg") != entry.alg:
        return Rejected(
            RejectReason.BAD_ALGORITHM,
            f"The signature does not use {entry.alg}, the algorithm of key {entry.kid}; "
            "sign it again with that key.",
        )
    return _verify_signed(
        text,
        token,
        entry,
        author_login=author_login,
        author_id=author_id,
        ticket=ticket,
        now=now,
        is_jti_used=is_jti_used,
        acts=acts,
        judged_digest=judged_digest,
        limits=limits,
    )


def _verify_signed(
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
    except _GARBAGE_ERRORS:
        return _malformed("The signed token cannot be read; sign the answer again.")
    claims = _read_claims(decoded["header"], decoded["payload"])
    if claims is None:
        return _malformed(
            "The signed token lacks or mistypes a required claim (sub, aud, act, sha256, "
            "iat, exp, jti) or carries an `ask` claim other than true on an answer; sign it "
            "again with the current tool."
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
    if role not in entry.roles:
        return Rejected(
            RejectReason.ROLE_MISSING,
            f"Key {entry.kid} of {entry.login} lacks the {role.value} role needed to "
            f"{claims.act.value}; ask an admin to grant it in the keyring.",
        )
    expected = text_digest(text) if claims.act is Act.ANSWER else judged_digest
    if expected is None or not hmac.compare_digest(
        claims.sha256.encode("ascii"), expected.encode("utf-8", "replace")
    ):
        judged = "text" if claims.act is Act.ANSWER else "answer under review"
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
    )


def _read_claims(header: Mapping[str, Any], payload: Mapping[str, Any]) -> _Claims | None:
    sub, aud, act, sha256, jti = (payload.get(n) for n in ("sub", "aud", "act", "sha256", "jti"))
    iat, exp = payload.get("iat"), payload.get("exp")
    # Optional, and strict when present: exactly JSON true, and on an answer only.
    ask = payload.get("ask", False)
    if "ask" in payload and not (ask is True and act == Act.ANSWER.value):
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
        sub=sub, aud=aud, act=Act(act), sha256=sha256, iat=iat, exp=exp, jti=jti, ask=ask is True
    )


def _is_timestamp(value: object) -> TypeGuard[int]:
    # bool is an int in Python but not a JSON number; floats are not NumericDates we issue.
    return type(value) is int and 0 <= value <= _MAX_TIMESTAMP


def _malformed(detail: str) -> Rejected:
    return Rejected(RejectReason.MALFORMED, detail)
