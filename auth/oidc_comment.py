"""An agent's OIDC-bound signed comment: keyless, self-contained, checked in three steps.

The trailer's token is signed by an ephemeral key whose public JWK is in its protected
header (``jwk``, RFC 7515 section 4.1.3), and it carries the workflow's GitHub Actions
OIDC token in its ``oidc`` claim::

    header  {"alg": "EdDSA", "typ": "JWT", "jwk": {"kty": "OKP", "crv": "Ed25519", "x": …}}
    claims  {"sub": "alice-agent", "aud": "owner/repo#12", "act": "answer", "sha256": …,
             "iat": …, "exp": …, "jti": …, "oidc": "<the OIDC token>"}

:func:`verify_oidc_bound` checks (1) the OIDC token (:func:`auth.oidc.verify_oidc_token`,
``aud`` = the ephemeral key's RFC 7638 thumbprint), (2) that its repository, workflow and
actor ids are an agent listed in the keyring (:mod:`auth.agents`) and its ``jti`` is
unused, then (3) the answer itself with the ephemeral key, exactly as a keyring key's
(:func:`auth.signed_token.verify_with_entry`), as that agent. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import jwt

from auth.comment import split_signed_comment
from auth.errors import CommentFormatError, JWKError
from auth.jwk import PRIVATE_MEMBERS, public_key_from_members, thumbprint
from auth.keyring import Keyring, KeyringEntry
from auth.oidc import OidcTrust, oidc_key_id, verify_oidc_token
from auth.roles import Act, Role
from auth.signed_token import GARBAGE_ERRORS, VerifyLimits, malformed, verify_with_entry
from auth.verdicts import Accepted, AgentIdentity, OidcProof, Rejected, RejectReason, Verdict

__all__ = ["OIDC_CLAIM", "is_oidc_bound", "oidc_token_kid", "verify_oidc_bound"]

OIDC_CLAIM = "oidc"
# The stored jti of an OIDC-bound answer: the token's own, so one token answers once.
_JTI_PREFIX = "oidc:"


def is_oidc_bound(header: Mapping[str, Any]) -> bool:
    """Return whether a signature's header carries its own key (an OIDC-bound signature)."""
    return "jwk" in header


def oidc_token_kid(body: str) -> str | None:
    """Return the kid of the OIDC token an agent's comment carries (unverified), or None."""
    try:
        _, token = split_signed_comment(body)
        if token is None or not is_oidc_bound(jwt.get_unverified_header(token)):
            return None
        payload = jwt.decode(token, options={"verify_signature": False})
    except (CommentFormatError, *GARBAGE_ERRORS):
        return None
    oidc = payload.get(OIDC_CLAIM)
    return oidc_key_id(oidc) if isinstance(oidc, str) else None


def verify_oidc_bound(
    text: str,
    token: str,
    header: Mapping[str, Any],
    *,
    author_login: str,
    author_id: int | None,
    ticket: str,
    keyring: Keyring,
    trust: OidcTrust | None,
    now: datetime,
    is_jti_used: Callable[[str], bool],
    acts: frozenset[Act],
    judged_digest: str | None,
    limits: VerifyLimits,
) -> Verdict:
    """Decide whether an agent's OIDC-bound comment is a valid signed act on ``ticket``."""
    if trust is None:
        return Rejected(
            RejectReason.UNKNOWN_KEY,
            "No OIDC issuer is trusted here, or the keyring lists no OIDC agent, so a "
            "keyless agent signature cannot count; sign with a key in the keyring.",
        )
    jwk = header.get("jwk")
    if not isinstance(jwk, Mapping) or PRIVATE_MEMBERS & set(jwk):
        return malformed("The signature's key is not a public JWK; sign it again.")
    try:
        alg, key = public_key_from_members(jwk)
    except JWKError:
        return malformed("The signature's key is not an Ed25519 or P-256 public key.")
    if header.get("alg") != alg:
        return Rejected(
            RejectReason.BAD_ALGORITHM,
            f"The signature does not use {alg}, the algorithm of the key it carries.",
        )
    try:
        oidc = jwt.decode(token, options={"verify_signature": False}).get(OIDC_CLAIM)
    except GARBAGE_ERRORS:
        return malformed("The signed token cannot be read; sign the answer again.")
    if not isinstance(oidc, str):
        return malformed("The signature carries a key but no OIDC token; sign it again.")
    kid = thumbprint(key)
    claims = verify_oidc_token(oidc, trust=trust, audience=kid, now=now, leeway=limits.leeway)
    if isinstance(claims, Rejected):
        return claims
    agent = next((a for a in keyring.oidc_agents if a.matches(claims)), None)
    if agent is None:
        return Rejected(
            RejectReason.UNTRUSTED_WORKFLOW,
            "The OIDC token's repository, workflow and actor are not an agent listed in the "
            "keyring; ask an admin to list the workflow, or sign with a key.",
        )
    jti = _JTI_PREFIX + claims["jti"]
    if is_jti_used(jti):
        return Rejected(
            RejectReason.REPLAYED,
            "This OIDC token already signed an answer; run the workflow again for a new one.",
        )
    entry = KeyringEntry(
        kid=kid,
        alg=alg,
        login=agent.login,
        roles=frozenset({Role.AGENT}),
        public_key=key,
        on_behalf_of=agent.on_behalf_of,
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
    if not isinstance(verdict, Accepted):
        return verdict
    proof = OidcProof(
        issuer=trust.issuer,
        repository=claims["repository"],
        repository_id=claims["repository_id"],
        job_workflow_ref=claims["job_workflow_ref"],
        actor_id=claims["actor_id"],
        jti=claims["jti"],
        expires_at=datetime.fromtimestamp(claims["exp"], UTC),
    )
    return replace(verdict, jti=jti, agent=AgentIdentity(agent.on_behalf_of, proof))
