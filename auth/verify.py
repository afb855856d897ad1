"""Verifying a signed comment: one pure function from a comment to a verdict.

:func:`verify_comment` never raises for anything a commenter can write. Every way a
comment can fail is a :class:`Rejected` with a :class:`RejectReason` and a one-sentence
``detail`` that is safe to post on the public ticket: it never echoes the token and
tells the editor what to fix. Checks run cheapest and unauthenticated first, but nothing
in the token is believed before its signature has been checked with the key and the
algorithm the keyring (never the token) names. An agent's keyless signature, whose header
carries its own key, is checked by :func:`auth.oidc_comment.verify_oidc_bound` against the
trusted issuer's keys (``oidc``) first.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

import jwt

from auth.comment import split_signed_comment
from auth.delegation import unknown_addressees
from auth.errors import CommentFormatError
from auth.keyring import Keyring
from auth.oidc import OidcTrust
from auth.oidc_comment import is_oidc_bound, verify_oidc_bound
from auth.roles import Act
from auth.signed_token import (
    DEFAULT_LIMITS,
    GARBAGE_ERRORS,
    MAX_COMMENT_CHARS,
    VerifyLimits,
    malformed,
    verify_with_entry,
)
from auth.verdicts import Accepted, AgentIdentity, Rejected, RejectReason, Verdict

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_COMMENT_CHARS",
    "Accepted",
    "AgentIdentity",
    "RejectReason",
    "Rejected",
    "Verdict",
    "VerifyLimits",
    "verify_comment",
]

_KID_SHAPE_RE = re.compile(r"[A-Za-z0-9_-]{43}")  # an RFC 7638 SHA-256 thumbprint


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
    oidc: OidcTrust | None = None,
) -> Verdict:
    """Decide whether a comment by ``author_login`` is a valid signed act on ``ticket``.

    ``acts`` lists what this comment may do here; ``judged_digest`` is the digest of the
    answer under review when approvals or rejections are accepted. ``is_jti_used`` is
    asked last, only for an otherwise valid signature; the caller must then record the
    jti before acting on the verdict. Raises ``ValueError`` only for a naive ``now``;
    an exception from ``is_jti_used`` propagates, since a store outage is not a verdict.
    ``oidc`` is the trusted OIDC issuer and its JWKS, for agents' keyless signatures.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be an aware datetime, such as datetime.now(UTC)")
    if len(body) > MAX_COMMENT_CHARS:
        # GitHub stores at most 65,536 characters; anything longer did not come from it.
        return malformed(
            f"The comment is longer than GitHub allows ({MAX_COMMENT_CHARS} characters)."
        )
    try:
        body.encode("utf-8")
        text, token = split_signed_comment(body)
    except UnicodeEncodeError:
        return malformed("The comment is not valid Unicode; post it again from a normal editor.")
    except CommentFormatError as exc:
        return malformed(f"The comment is ambiguous: {exc}.")
    if token is None:
        return Rejected(
            RejectReason.UNSIGNED,
            "The comment has no signature trailer; sign the answer with your key and post it "
            "with the trailer as its last line.",
        )
    try:
        header = jwt.get_unverified_header(token)
    except GARBAGE_ERRORS:
        return malformed("The signature trailer does not hold a valid token; sign it again.")
    if is_oidc_bound(header):
        # A keyless agent: its key rides in the header, vouched for by an OIDC token.
        return verify_oidc_bound(
            text,
            token,
            header,
            author_login=author_login,
            author_id=author_id,
            ticket=ticket,
            keyring=keyring,
            trust=oidc,
            now=now,
            is_jti_used=is_jti_used,
            acts=acts,
            judged_digest=judged_digest,
            limits=limits,
        )
    kid = header.get("kid")
    if not isinstance(kid, str):
        return malformed("The signature names no key id; sign it again with your key.")
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
    verdict = verify_with_entry(
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
    return _check_addressees(verdict, keyring)


def _check_addressees(verdict: Verdict, keyring: Keyring) -> Verdict:
    """Refuse a delegation that addresses a sub-question to a login outside the keyring."""
    if not isinstance(verdict, Accepted) or not verdict.delegations:
        return verdict
    missing = unknown_addressees(verdict.delegations, (entry.login for entry in keyring))
    if not missing:
        return verdict
    return Rejected(
        RejectReason.UNKNOWN_ADDRESSEE,
        f"The delegation addresses {', '.join(missing)}, who hold no key in the keyring and "
        "could not sign an answer; address keyring members (or nobody) and sign it again.",
    )
