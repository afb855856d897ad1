"""Tests for agent identities: keyring entries (auth.agents), an agent key's verdict, policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from auth.comment import text_digest
from auth.errors import KeyringError
from auth.keyring import Keyring, add_key_to_keyring
from auth.keys import generate_signing_key, public_jwk
from auth.review_decision import AGENT_RULE, Command, ReviewDecision, decide_for_agent
from auth.roles import Act, Role
from auth.sign import sign_comment
from auth.verify import Accepted, Rejected, RejectReason, verify_comment
from tests.helpers.oidc_issuer import alices_agent
from tests.helpers.signing_team import NOW, TICKET

AGENT = generate_signing_key(login="alice-agent")


def _agent_jwk(**changes: Any) -> dict[str, Any]:
    jwk = {**public_jwk(AGENT), "login": "alice-agent", "roles": ["agent"], "on_behalf_of": "alice"}
    jwk.update(changes)
    return {name: value for name, value in jwk.items() if value is not None}


def _oidc_entry(**changes: Any) -> dict[str, Any]:
    entry: dict[str, Any] = alices_agent().to_json()
    entry.update(changes)
    return entry


def test_agent_key_names_whose_agent_it_is() -> None:
    """A key with the role agent and on_behalf_of reads back as that editor's agent."""
    keyring = Keyring.from_jwks({"keys": [_agent_jwk()]})
    entry = keyring.get(AGENT.kid)
    assert entry is not None
    assert entry.on_behalf_of == "alice"
    assert Keyring.from_jwks(keyring.to_jwks()).get(AGENT.kid) == entry


def test_agent_key_without_on_behalf_of_is_refused() -> None:
    """An agent key must say whose agent it is."""
    with pytest.raises(KeyringError, match="on_behalf_of"):
        Keyring.from_jwks({"keys": [_agent_jwk(on_behalf_of=None)]})


def test_agent_key_with_a_persons_roles_too_is_refused() -> None:
    """An agent key cannot also be an editor's or a reviewer's key."""
    with pytest.raises(KeyringError, match='role "agent" only'):
        Keyring.from_jwks({"keys": [_agent_jwk(roles=["agent", "reviewer"])]})


def test_on_behalf_of_on_a_persons_key_is_refused() -> None:
    """on_behalf_of belongs to agent keys only."""
    with pytest.raises(KeyringError, match="only for keys with the role"):
        Keyring.from_jwks({"keys": [_agent_jwk(roles=["editor"])]})


def test_oidc_agent_listed_by_repository_name_instead_of_id_is_refused() -> None:
    """Ids, not names: a renamed repository's name can be taken by someone else."""
    entry = _oidc_entry(repository_id="alice/ticketproxy-agent")
    with pytest.raises(KeyringError, match="numeric GitHub id"):
        Keyring.from_jwks({"keys": [], "oidc_agents": [entry]})


def test_oidc_agent_without_its_workflow_is_refused() -> None:
    """An entry that lists no workflow would let any workflow of the repository answer."""
    entry = _oidc_entry()
    del entry["job_workflow_ref"]
    with pytest.raises(KeyringError, match="missing members"):
        Keyring.from_jwks({"keys": [], "oidc_agents": [entry]})


def test_oidc_agent_listed_twice_is_refused() -> None:
    """The same workflow and actor listed twice is a mistake to fix, not to guess about."""
    with pytest.raises(KeyringError, match="twice"):
        Keyring.from_jwks({"keys": [], "oidc_agents": [_oidc_entry(), _oidc_entry()]})


def test_adding_a_key_keeps_the_listed_oidc_agents(tmp_path: Path) -> None:
    """keygen rewrites the keyring file without dropping its oidc_agents."""
    path = tmp_path / "keyring.json"
    path.write_text(json.dumps({"keys": [], "oidc_agents": [_oidc_entry()]}))
    add_key_to_keyring(path, generate_signing_key(login="bob"), roles=[Role.EDITOR])
    assert Keyring.load(path).oidc_agents == (alices_agent(),)


def _keyring() -> Keyring:
    return Keyring.from_jwks({"keys": [_agent_jwk()]})


def test_agent_key_answer_is_accepted_as_alices_agent() -> None:
    """Way (a): an answer signed by an enrolled agent key is accepted, as alice's agent."""
    body = sign_comment("All done.", ticket=TICKET, key=AGENT, now=NOW)
    verdict = verify_comment(
        body,
        author_login="alice-agent",
        author_id=None,
        ticket=TICKET,
        keyring=_keyring(),
        now=NOW,
        is_jti_used=lambda jti: False,
    )
    assert isinstance(verdict, Accepted)
    assert verdict.agent is not None
    assert verdict.agent.describe() == "alice's agent"
    assert verdict.agent.oidc is None


def test_agent_key_approving_is_refused() -> None:
    """An agent identity never approves: its key lacks the reviewer role."""
    digest = text_digest("rm -rf build")
    body = sign_comment(
        "ok", ticket=TICKET, key=AGENT, now=NOW, act=Act.APPROVE, judged_digest=digest
    )
    verdict = verify_comment(
        body,
        author_login="alice-agent",
        author_id=None,
        ticket=TICKET,
        keyring=_keyring(),
        now=NOW,
        is_jti_used=lambda jti: False,
        acts=frozenset({Act.APPROVE, Act.REJECT}),
        judged_digest=digest,
    )
    assert isinstance(verdict, Rejected)
    assert verdict.reason is RejectReason.ROLE_MISSING


SHELL = Command("execute_shell", {"command": "ls"}, "tool_call")


def test_agents_plain_text_answer_needs_no_approval() -> None:
    """Plain text from an agent is released as the policy would release a person's."""
    decision = ReviewDecision(0, ())
    assert decide_for_agent(decision, [], agent="alice's agent") == decision


def test_agents_command_needs_a_persons_approval_even_where_the_policy_needs_none() -> None:
    """Any command an agent sends waits for a person, with the reason shown to them."""
    decided = decide_for_agent(ReviewDecision(0, ()), [SHELL], agent="alice's agent")
    assert decided.required_approvals == 1
    assert decided.findings[-1].rule == AGENT_RULE
    assert "alice's agent" in decided.findings[-1].detail


def test_agents_command_keeps_the_policys_higher_count() -> None:
    """Where the policy asks two approvals, the agent's answer needs two, not one."""
    assert decide_for_agent(ReviewDecision(2, ()), [SHELL], agent="a").required_approvals == 2
