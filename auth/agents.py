"""Agent identities in the keyring: whose agent a signer is, and keyless OIDC agents.

An agent answers on an editor's behalf under its own identity, never the editor's key, in
one of two ways:

- (a) a dedicated key, a keyring entry whose ``roles`` is exactly ``["agent"]`` and whose
  ``on_behalf_of`` names the editor (checked by :func:`agent_of`);
- (b) keyless: a GitHub Actions workflow's OIDC token, allow-listed by the ids GitHub puts
  in it, in the keyring's top-level ``oidc_agents`` list::

      {"keys": [...],
       "oidc_agents": [{"login": "alice-agent", "on_behalf_of": "alice",
                        "repository_id": "123456", "actor_id": "1001",
                        "job_workflow_ref":
                          "alice/ticketproxy-agent/.github/workflows/agent.yml@refs/heads/main"}]}

Ids, not names: a repository or an account can be renamed, and a new one can take the old
name, but its id never changes. ``login`` is the account that posts the agent's comments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from auth.errors import KeyringError
from auth.logins import is_valid_login
from auth.roles import Role

__all__ = ["OIDC_AGENT_MEMBERS", "OidcAgent", "agent_of", "oidc_agents_from_json"]

OIDC_AGENT_MEMBERS = frozenset(
    {"login", "on_behalf_of", "repository_id", "job_workflow_ref", "actor_id"}
)
_ID_RE = re.compile(r"[1-9][0-9]{0,19}")
# owner/repo/path/to/workflow.yml@ref, as GitHub writes job_workflow_ref.
_WORKFLOW_REF_RE = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/[^@\s]+\.ya?ml@\S+")


@dataclass(frozen=True)
class OidcAgent:
    """A workflow allowed to answer as an agent: its ids, whose agent it is, who posts."""

    login: str
    on_behalf_of: str
    repository_id: str
    job_workflow_ref: str
    actor_id: str

    def matches(self, claims: Mapping[str, Any]) -> bool:
        """Return whether a verified token's claims name exactly this workflow and actor."""
        return (
            claims.get("repository_id") == self.repository_id
            and claims.get("job_workflow_ref") == self.job_workflow_ref
            and claims.get("actor_id") == self.actor_id
        )

    def to_json(self) -> dict[str, str]:
        """Return this entry as the keyring writes it."""
        return {
            "login": self.login,
            "on_behalf_of": self.on_behalf_of,
            "repository_id": self.repository_id,
            "job_workflow_ref": self.job_workflow_ref,
            "actor_id": self.actor_id,
        }


def agent_of(roles: frozenset[Role], on_behalf_of: object, *, where: str) -> str | None:
    """Return whose agent a key is (None for a person's key), refusing mixed entries."""
    if Role.AGENT not in roles:
        if on_behalf_of is not None:
            raise KeyringError(f'{where}: "on_behalf_of" is only for keys with the role "agent"')
        return None
    if roles != {Role.AGENT}:
        raise KeyringError(
            f'{where}: an agent key has the role "agent" only; an agent never reviews or '
            "answers as a person, so give the person their own key"
        )
    if not isinstance(on_behalf_of, str) or not is_valid_login(on_behalf_of):
        raise KeyringError(
            f'{where}: an agent key needs "on_behalf_of", the GitHub login of the editor '
            "whose agent it is"
        )
    return on_behalf_of


def oidc_agents_from_json(value: object, *, source: str) -> tuple[OidcAgent, ...]:
    """Read the keyring's ``oidc_agents`` list, refusing anything not exactly as documented."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise KeyringError(f'{source}: "oidc_agents" must be a list of agent entries')
    agents = tuple(
        _agent(item, where=f"{source}: oidc_agents[{i}]") for i, item in enumerate(value)
    )
    _refuse_duplicates(agents, source=source)
    return agents


def _agent(item: object, *, where: str) -> OidcAgent:
    if not isinstance(item, Mapping):
        raise KeyringError(f"{where} must be a JSON object")
    unknown = sorted(set(item) - OIDC_AGENT_MEMBERS)
    missing = sorted(OIDC_AGENT_MEMBERS - set(item))
    if unknown or missing:
        raise KeyringError(
            f"{where}: unknown members {unknown}, missing members {missing}; an OIDC agent "
            f"has exactly {sorted(OIDC_AGENT_MEMBERS)}"
        )
    for member in ("login", "on_behalf_of"):
        value = item[member]
        if not isinstance(value, str) or not is_valid_login(value):
            raise KeyringError(f'{where}: "{member}" must be a GitHub login')
    for member in ("repository_id", "actor_id"):
        value = item[member]
        # A string, as GitHub's token carries it; a JSON number is accepted when integral.
        if type(value) is int and value > 0:
            value = str(value)
        if not isinstance(value, str) or _ID_RE.fullmatch(value) is None:
            raise KeyringError(
                f'{where}: "{member}" must be the numeric GitHub id (not a name), like "123456"'
            )
    ref = item["job_workflow_ref"]
    if not isinstance(ref, str) or _WORKFLOW_REF_RE.fullmatch(ref) is None:
        raise KeyringError(
            f'{where}: "job_workflow_ref" must be like '
            '"owner/repo/.github/workflows/agent.yml@refs/heads/main"'
        )
    return OidcAgent(
        login=item["login"],
        on_behalf_of=item["on_behalf_of"],
        repository_id=str(item["repository_id"]),
        job_workflow_ref=ref,
        actor_id=str(item["actor_id"]),
    )


def _refuse_duplicates(agents: Sequence[OidcAgent], *, source: str) -> None:
    seen: set[tuple[str, str, str]] = set()
    for agent in agents:
        key = (agent.repository_id, agent.job_workflow_ref, agent.actor_id)
        if key in seen:
            raise KeyringError(
                f"{source}: oidc_agents lists repository {agent.repository_id}, workflow "
                f"{agent.job_workflow_ref} and actor {agent.actor_id} twice; remove one"
            )
        seen.add(key)
