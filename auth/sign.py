"""Signing an answer, or a judgement of an answer, as a comment body ready to post."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import jwt

from auth.comment import DIGEST_RE, normalise_text, render_signed_comment, text_digest
from auth.delegation import DELEGATE_CLAIM, Delegation, delegations_claim
from auth.errors import CommentFormatError, SigningError
from auth.jwk import public_members
from auth.keys import SigningKey
from auth.oidc_comment import OIDC_CLAIM
from auth.roles import Act

DEFAULT_TTL = timedelta(hours=1)


def sign_comment(
    text: str,
    *,
    ticket: str,
    key: SigningKey,
    now: datetime,
    act: Act = Act.ANSWER,
    ttl: timedelta = DEFAULT_TTL,
    judged_digest: str | None = None,
    jti: str | None = None,
    ask: bool = False,
    oidc_token: str | None = None,
    delegations: Sequence[Delegation] = (),
) -> str:
    """Return a comment body carrying ``text`` and a signature over it for ``ticket``.

    For an answer the signature covers ``text`` itself. To approve or reject, ``text`` is
    the reviewer's note and ``judged_digest`` (the answer's :func:`text_digest`) is signed.
    ``ask`` signs the answer as a question back to the agent's user (the ``ask`` claim), so
    whether it ends the task cannot be changed after signing.

    With ``oidc_token`` the comment is an agent's keyless, OIDC-bound signature
    (:mod:`auth.oidc_comment`): ``key`` is the ephemeral key the token's ``aud`` names by
    its thumbprint, and its public JWK goes in the header instead of a keyring kid.

    To delegate (``act=Act.DELEGATE``), ``delegations`` are the sub-questions: they go in
    the ``delegate`` claim, and ``text`` (signed like an answer's) is what the ticket shows,
    by default :func:`auth.delegation.render_delegations` of them.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise SigningError("now must be an aware datetime, such as datetime.now(UTC)")
    if ttl <= timedelta(0):
        raise SigningError("ttl must be positive")
    if not ticket:
        raise SigningError("ticket must name the ticket the comment answers, like owner/repo#12")
    if jti is not None and not jti:
        raise SigningError("jti must be a non-empty unique id, or None for a random one")
    act = Act(act)
    if ask and act is not Act.ANSWER:
        raise SigningError("only an answer can ask a question back; approvals cannot")
    if (act is Act.DELEGATE) != bool(delegations):
        raise SigningError("a delegate act, and only it, names its sub-questions (delegations)")
    if act in (Act.ANSWER, Act.DELEGATE):
        if judged_digest is not None:
            raise SigningError("an answer signs its own text; judged_digest is for approve/reject")
        try:
            digest = text_digest(text)
        except UnicodeEncodeError:
            raise SigningError("text is not valid Unicode (it holds a lone surrogate)") from None
    else:
        if judged_digest is None or DIGEST_RE.fullmatch(judged_digest) is None:
            raise SigningError(
                f"to {act.value} an answer, pass judged_digest, the answer's hex text_digest"
            )
        digest = judged_digest
    issued_at = int(now.timestamp())
    claims: dict[str, Any] = {
        "sub": key.login,
        "aud": ticket,
        "act": act.value,
        "sha256": digest,
        "iat": issued_at,
        "exp": issued_at + max(1, int(ttl.total_seconds())),
        "jti": jti if jti is not None else secrets.token_urlsafe(16),
    }
    if ask:
        claims["ask"] = True
    if delegations:
        try:
            claims[DELEGATE_CLAIM] = delegations_claim(delegations)
        except ValueError as exc:
            raise SigningError(str(exc)) from None
    headers: dict[str, Any] = {"kid": key.kid, "typ": "JWT"}
    if oidc_token is not None:
        if act is not Act.ANSWER:
            raise SigningError("an agent only answers; it never approves or rejects")
        claims[OIDC_CLAIM] = oidc_token
        headers = {"typ": "JWT", "jwk": public_members(key.private_key.public_key())}
    token = jwt.encode(claims, key.private_key, algorithm=key.alg, headers=headers)
    try:
        return render_signed_comment(normalise_text(text), token)
    except CommentFormatError as exc:
        raise SigningError(f"cannot sign this text: {exc}") from None
