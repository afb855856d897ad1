"""What verification concludes: an accepted signed act, or a rejection and its reason.

Pure values, shared by :mod:`auth.verify` (signatures in the keyring) and :mod:`auth.oidc`
(agent signatures bound to a GitHub Actions OIDC token).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from auth.delegation import Delegation
from auth.roles import Act

__all__ = ["Accepted", "AgentIdentity", "OidcProof", "RejectReason", "Rejected", "Verdict"]


@dataclass(frozen=True)
class OidcProof:
    """The facts of an OIDC token that was valid when its answer was received."""

    issuer: str
    repository: str
    repository_id: str
    job_workflow_ref: str
    actor_id: str
    jti: str
    expires_at: datetime

    def describe(self) -> str:
        """Return one line on where the token came from and until when it was valid."""
        return (
            f"GitHub Actions OIDC token from {self.issuer} for repository {self.repository}"
            f" (id {self.repository_id}), workflow {self.job_workflow_ref}, actor id"
            f" {self.actor_id}, valid when received (expires {self.expires_at:%Y-%m-%d %H:%M:%S}"
            " UTC)"
        )


@dataclass(frozen=True)
class AgentIdentity:
    """An agent that answers on an editor's behalf: whose, and how it proved who it is."""

    on_behalf_of: str
    # None: a dedicated key enrolled with role ``agent``; else the OIDC token's facts.
    oidc: OidcProof | None = None

    def describe(self) -> str:
        """Return "alice's agent", as the ticket and the audit say it."""
        return f"{self.on_behalf_of}'s agent"


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
    # An OIDC-bound agent signature: a token the issuer did not sign, or not for this use.
    OIDC_INVALID = "oidc_invalid"
    # The token's ``aud`` is not the thumbprint of the key that signed the answer.
    KEY_NOT_BOUND = "key_not_bound"
    # The token's repository, workflow and actor are not an agent listed in the keyring.
    UNTRUSTED_WORKFLOW = "untrusted_workflow"
    # A delegation addresses a sub-question to a login that holds no key in the keyring.
    UNKNOWN_ADDRESSEE = "unknown_addressee"


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
    # Signed by an agent identity (role ``agent``) on an editor's behalf; None: a person.
    agent: AgentIdentity | None = None
    # A signed ``delegate``: the sub-questions the ticket is split into, in order.
    delegations: tuple[Delegation, ...] = ()


@dataclass(frozen=True)
class Rejected:
    """A comment that does not count, and a public sentence saying what to fix."""

    reason: RejectReason
    detail: str


Verdict = Accepted | Rejected
