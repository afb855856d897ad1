"""The offline audit of an agent's keyless answer: its token checked when it was posted."""

from __future__ import annotations

from datetime import timedelta

import pytest

from auth.keyring import Keyring
from auth.keys import generate_signing_key
from auth.oidc import OidcTrust
from auth.sign import sign_comment
from tests.helpers.oidc_issuer import AGENT_LOGIN, LocalIssuer, alices_agent
from tests.helpers.signing_team import NOW, TICKET
from ticketing.audit.answer import audit_ticket
from ticketing.audit.comments import AuditComment
from ticketing.audit.results import TicketAudit

TEXT = "The build folder is already empty."


@pytest.fixture(scope="module")
def issuer() -> LocalIssuer:
    """Return one issuer for the module."""
    return LocalIssuer()


def _posted(body: str, *, after: timedelta) -> AuditComment:
    return AuditComment(
        id=7,
        author_login=AGENT_LOGIN,
        author_id=None,
        body=body,
        created_at=NOW + after,
        updated_at=NOW + after,
        url="https://github.com/acme/agents/issues/12#issuecomment-7",
    )


def _audit(issuer: LocalIssuer, comment: AuditComment, *, trusted: bool = True) -> TicketAudit:
    return audit_ticket(
        TICKET,
        [comment],
        keyring_history=Keyring([], oidc_agents=[alices_agent()]),
        delivered_comment_id=comment.id,
        released_digest=None,
        policy=None,
        oidc=OidcTrust(issuer.url, issuer.jwks()) if trusted else None,
    )


def _agent_answer(issuer: LocalIssuer) -> str:
    key = generate_signing_key(login=AGENT_LOGIN)
    token = issuer.mint(key.kid, now=NOW.timestamp())
    return sign_comment(TEXT, ticket=TICKET, key=key, now=NOW, oidc_token=token)


def test_audit_records_that_the_agents_oidc_token_was_valid_when_received(
    issuer: LocalIssuer,
) -> None:
    """An agent's answer posted while its token was valid audits ok, as alice's agent."""
    result = _audit(issuer, _posted(_agent_answer(issuer), after=timedelta(seconds=30)))
    assert result.verdict == "ok"
    assert result.answer is not None
    agent = result.answer.agent
    assert agent is not None
    assert agent.startswith("alice's agent, by GitHub Actions OIDC token")
    assert "valid when received" in agent


def test_audit_of_an_agent_answer_posted_after_its_token_expired_is_a_mismatch(
    issuer: LocalIssuer,
) -> None:
    """A keyless answer posted once its token had expired never counted: a mismatch."""
    result = _audit(issuer, _posted(_agent_answer(issuer), after=timedelta(hours=1)))
    assert result.verdict == "mismatch"
    assert "expired" in " ".join(result.problems)


def test_audit_without_the_issuers_keys_cannot_pass_a_keyless_answer(issuer: LocalIssuer) -> None:
    """Without the issuer's keys the audit cannot vouch for the token: a mismatch, not ok."""
    comment = _posted(_agent_answer(issuer), after=timedelta(seconds=30))
    assert _audit(issuer, comment, trusted=False).verdict == "mismatch"


def test_audit_after_the_issuer_rotated_its_key_names_the_missing_kid(
    issuer: LocalIssuer,
) -> None:
    """Keys that lack the token's kid: a mismatch naming the kid and the archive to use."""
    comment = _posted(_agent_answer(issuer), after=timedelta(seconds=30))
    rotated = LocalIssuer(url=issuer.url)
    result = audit_ticket(
        TICKET,
        [comment],
        keyring_history=Keyring([], oidc_agents=[alices_agent()]),
        delivered_comment_id=comment.id,
        released_digest=None,
        policy=None,
        oidc=OidcTrust(rotated.url, rotated.jwks()),
    )
    assert result.verdict == "mismatch"
    problems = " ".join(result.problems)
    assert f"the issuer's key {issuer.kid}, which the issuer's keys given to this audit lack" in (
        problems
    )
    assert "--oidc-jwks FILE" in problems
