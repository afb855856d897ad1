"""Tests for auth.oidc and auth.oidc_comment: each attack on an agent's keyless answer, named.

The tokens come from a local issuer's own RSA key (``tests/helpers/oidc_issuer.py``); the
verification is pure, so no server runs here.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from typing import Any

import jwt
import pytest

from auth.jwk import b64url_encode
from auth.keyring import Keyring
from auth.keys import SigningKey, generate_signing_key
from auth.oidc import OidcTrust
from auth.oidc_comment import oidc_token_kid
from auth.roles import Act
from auth.sign import sign_comment
from auth.verify import Accepted, Rejected, RejectReason, Verdict, verify_comment
from tests.helpers.oidc_issuer import (
    AGENT_LOGIN,
    REPOSITORY_ID,
    WORKFLOW_REF,
    LocalIssuer,
    alices_agent,
    new_rsa_key,
)
from tests.helpers.signing_team import NOW, TICKET

ANSWER = "The build folder is already empty; nothing to do."
JUDGING = frozenset({Act.APPROVE, Act.REJECT})


@pytest.fixture(scope="module")
def issuer() -> LocalIssuer:
    """Return one issuer (RSA key generation is the slow part) for the module."""
    return LocalIssuer()


def _keyring(**changes: str) -> Keyring:
    return Keyring([], oidc_agents=[alices_agent(**changes)])


def _verify(
    body: str,
    issuer: LocalIssuer,
    *,
    keyring: Keyring | None = None,
    used: Callable[[str], bool] = lambda jti: False,
    trust: OidcTrust | str | None = "issuer",
    **options: Any,
) -> Verdict:
    return verify_comment(
        body,
        author_login=AGENT_LOGIN,
        author_id=None,
        ticket=TICKET,
        keyring=keyring or _keyring(),
        now=NOW,
        is_jti_used=used,
        oidc=OidcTrust(issuer.url, issuer.jwks()) if trust == "issuer" else trust,  # type: ignore[arg-type]
        **options,
    )


def _agent_comment(
    issuer: LocalIssuer,
    *,
    ephemeral: SigningKey | None = None,
    token: str | None = None,
    text: str = ANSWER,
    **claims: Any,
) -> str:
    key = ephemeral or generate_signing_key(login=AGENT_LOGIN)
    oidc = token or issuer.mint(key.kid, now=NOW.timestamp(), **claims)
    return sign_comment(text, ticket=TICKET, key=key, now=NOW, oidc_token=oidc)


def _rejected(verdict: Verdict, reason: RejectReason) -> Rejected:
    assert isinstance(verdict, Rejected), verdict
    assert verdict.reason is reason, verdict
    return verdict


def test_agent_answer_bound_to_a_valid_oidc_token_is_accepted_as_alices_agent(
    issuer: LocalIssuer,
) -> None:
    """A listed workflow's token, bound to the key that signed the answer, is accepted."""
    verdict = _verify(_agent_comment(issuer), issuer)
    assert isinstance(verdict, Accepted), verdict
    assert verdict.signer == AGENT_LOGIN
    assert verdict.agent is not None
    assert verdict.agent.describe() == "alice's agent"
    assert verdict.agent.oidc is not None
    assert verdict.agent.oidc.repository_id == REPOSITORY_ID
    assert "valid when received" in verdict.agent.oidc.describe()
    assert verdict.jti.startswith("oidc:")


def test_oidc_token_kid_is_read_from_an_agents_comment(issuer: LocalIssuer) -> None:
    """The desk learns which issuer key to fetch from the comment, before verifying it."""
    assert oidc_token_kid(_agent_comment(issuer)) == issuer.kid
    assert oidc_token_kid("just words") is None


def test_oidc_token_from_an_unlisted_repository_is_refused(issuer: LocalIssuer) -> None:
    """A valid token from a repository the keyring does not list answers nothing."""
    body = _agent_comment(issuer, repository_id="999999", repository="mallory/agent")
    _rejected(_verify(body, issuer), RejectReason.UNTRUSTED_WORKFLOW)


def test_listed_repository_with_another_workflow_is_refused(issuer: LocalIssuer) -> None:
    """The listed repository running another workflow file is not the listed agent."""
    other = WORKFLOW_REF.replace("agent.yml", "anything.yml")
    body = _agent_comment(issuer, job_workflow_ref=other)
    _rejected(_verify(body, issuer), RejectReason.UNTRUSTED_WORKFLOW)


def test_listed_workflow_run_by_another_actor_is_refused(issuer: LocalIssuer) -> None:
    """The listed workflow triggered by another account is not the listed agent."""
    body = _agent_comment(issuer, actor_id="1003", actor="mallory")
    _rejected(_verify(body, issuer), RejectReason.UNTRUSTED_WORKFLOW)


def test_expired_oidc_token_is_refused(issuer: LocalIssuer) -> None:
    """A token that expired before the answer arrived is refused, however fresh the answer."""
    issued = NOW.timestamp() - 3600
    body = _agent_comment(issuer, iat=int(issued), nbf=int(issued), exp=int(issued) + 300)
    _rejected(_verify(body, issuer), RejectReason.EXPIRED)


def test_oidc_aud_bound_to_a_different_key_is_refused(issuer: LocalIssuer) -> None:
    """A token whose aud names another key cannot vouch for the key that signed the answer."""
    other = generate_signing_key(login=AGENT_LOGIN)
    token = issuer.mint(other.kid, now=NOW.timestamp())
    _rejected(_verify(_agent_comment(issuer, token=token), issuer), RejectReason.KEY_NOT_BOUND)


def test_replayed_oidc_jti_is_refused(issuer: LocalIssuer) -> None:
    """One OIDC token signs one answer: its jti, once used, refuses a second answer."""
    key = generate_signing_key(login=AGENT_LOGIN)
    token = issuer.mint(key.kid, now=NOW.timestamp())
    first = _verify(_agent_comment(issuer, ephemeral=key, token=token), issuer)
    assert isinstance(first, Accepted)
    second = _agent_comment(issuer, ephemeral=key, token=token, text="Another answer.")
    _rejected(_verify(second, issuer, used=lambda jti: jti == first.jti), RejectReason.REPLAYED)


def test_oidc_token_signed_by_a_key_not_in_the_issuers_jwks_is_refused(
    issuer: LocalIssuer,
) -> None:
    """A token signed by an attacker's RSA key, naming a kid the issuer lacks, is refused."""
    key = generate_signing_key(login=AGENT_LOGIN)
    token = issuer.mint(key.kid, key=new_rsa_key(), kid="attacker", now=NOW.timestamp())
    _rejected(_verify(_agent_comment(issuer, token=token), issuer), RejectReason.UNKNOWN_KEY)


def test_oidc_token_signed_by_another_key_under_the_issuers_kid_is_refused(
    issuer: LocalIssuer,
) -> None:
    """An attacker's RSA key claiming the issuer's kid fails the signature check."""
    key = generate_signing_key(login=AGENT_LOGIN)
    token = issuer.mint(key.kid, key=new_rsa_key(), now=NOW.timestamp())
    _rejected(_verify(_agent_comment(issuer, token=token), issuer), RejectReason.BAD_SIGNATURE)


def _forged(issuer: LocalIssuer, audience: str, alg: str) -> str:
    claims = issuer.claims(audience, now=NOW.timestamp())
    if alg == "none":
        return jwt.encode(claims, None, algorithm="none", headers={"kid": issuer.kid})
    # HS256 keyed with the issuer's public key, the classic algorithm confusion.
    public = issuer.jwks()["keys"][0]["n"].encode()
    header = {"alg": "HS256", "kid": issuer.kid, "typ": "JWT"}
    signing_input = (
        b64url_encode(json.dumps(header).encode())
        + "."
        + b64url_encode(json.dumps(claims).encode())
    )
    mac = hmac.new(public, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64url_encode(mac)}"


def test_oidc_alg_switched_to_hs256_is_refused(issuer: LocalIssuer) -> None:
    """A token MACed with HS256 keyed by the issuer's public modulus is never verified."""
    key = generate_signing_key(login=AGENT_LOGIN)
    token = _forged(issuer, key.kid, "HS256")
    verdict = _verify(_agent_comment(issuer, ephemeral=key, token=token), issuer)
    _rejected(verdict, RejectReason.BAD_ALGORITHM)


def test_oidc_alg_switched_to_none_is_refused(issuer: LocalIssuer) -> None:
    """An unsigned token (alg none) is never believed."""
    key = generate_signing_key(login=AGENT_LOGIN)
    token = _forged(issuer, key.kid, "none")
    verdict = _verify(_agent_comment(issuer, ephemeral=key, token=token), issuer)
    _rejected(verdict, RejectReason.BAD_ALGORITHM)


def test_agent_signature_with_alg_none_is_refused(issuer: LocalIssuer) -> None:
    """The answer's own signature cannot switch to none: the carried key fixes its alg."""
    key = generate_signing_key(login=AGENT_LOGIN)
    good = _agent_comment(issuer, ephemeral=key)
    token = good.rsplit("<!-- ticketproxy-signature: ", 1)[1].removesuffix(" -->")
    header = jwt.get_unverified_header(token)
    payload = jwt.decode(token, options={"verify_signature": False})
    unsigned = jwt.encode(payload, None, algorithm="none", headers={"jwk": header["jwk"]})
    body = f"{ANSWER}\n\n<!-- ticketproxy-signature: {unsigned}AAAA -->"
    _rejected(_verify(body, issuer), RejectReason.BAD_ALGORITHM)


def test_oidc_token_from_another_issuer_is_refused(issuer: LocalIssuer) -> None:
    """A token whose iss is not the trusted issuer is refused even if its key is published."""
    body = _agent_comment(issuer, iss="https://evil.example")
    _rejected(_verify(body, issuer), RejectReason.OIDC_INVALID)


def test_keyless_agent_signature_without_a_trusted_issuer_is_refused(issuer: LocalIssuer) -> None:
    """With no issuer trusted (TICKETPROXY_OIDC_ISSUER empty), no keyless signature counts."""
    _rejected(_verify(_agent_comment(issuer), issuer, trust=None), RejectReason.UNKNOWN_KEY)


def test_agent_approving_with_an_oidc_bound_signature_is_refused(issuer: LocalIssuer) -> None:
    """An agent identity never approves: its signed approval lacks the reviewer role."""
    key = generate_signing_key(login=AGENT_LOGIN)
    answer = _agent_comment(issuer, ephemeral=key)
    token = answer.rsplit("<!-- ticketproxy-signature: ", 1)[1].removesuffix(" -->")
    claims = jwt.decode(token, options={"verify_signature": False})
    digest = "a" * 64
    approval = jwt.encode(
        {**claims, "act": "approve", "sha256": digest},
        key.private_key,
        algorithm=key.alg,
        headers={"typ": "JWT", "jwk": jwt.get_unverified_header(token)["jwk"]},
    )
    body = f"Looks fine.\n\n<!-- ticketproxy-signature: {approval} -->"
    verdict = _verify(body, issuer, acts=JUDGING, judged_digest=digest)
    _rejected(verdict, RejectReason.ROLE_MISSING)


def test_signing_an_approval_as_a_keyless_agent_is_refused(issuer: LocalIssuer) -> None:
    """The signing side refuses too: an OIDC-bound signature is an answer or nothing."""
    from auth.errors import SigningError

    key = generate_signing_key(login=AGENT_LOGIN)
    with pytest.raises(SigningError, match="never approves"):
        sign_comment(
            "ok",
            ticket=TICKET,
            key=key,
            now=NOW,
            act=Act.APPROVE,
            judged_digest="a" * 64,
            oidc_token=issuer.mint(key.kid),
        )


def test_keyless_agent_answer_posted_by_another_account_is_refused(issuer: LocalIssuer) -> None:
    """Only the account the keyring lists for the agent may post what it signs."""
    verdict = verify_comment(
        _agent_comment(issuer),
        author_login="mallory",
        author_id=None,
        ticket=TICKET,
        keyring=_keyring(),
        now=NOW,
        is_jti_used=lambda jti: False,
        oidc=OidcTrust(issuer.url, issuer.jwks()),
    )
    _rejected(verdict, RejectReason.AUTHOR_MISMATCH)
