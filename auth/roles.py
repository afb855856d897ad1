"""What a signer may do: roles held in the keyring, and the act each signature claims."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType


class Role(StrEnum):
    """A role a keyring entry grants to its key."""

    EDITOR = "editor"
    REVIEWER = "reviewer"
    # Answers on an editor's behalf (``on_behalf_of``), only where the review policy lets
    # agents answer; never approves or rejects. See :mod:`auth.agents`.
    AGENT = "agent"


class Act(StrEnum):
    """What a signed comment does: answer a ticket, judge an answer, or split a ticket."""

    ANSWER = "answer"
    APPROVE = "approve"
    REJECT = "reject"
    # Split an open ticket into sub-questions (auth.delegation); an editor's act.
    DELEGATE = "delegate"


# Read-only so no caller can grant a role to an act at run time.
ROLE_FOR_ACT: Mapping[Act, Role] = MappingProxyType(
    {
        Act.ANSWER: Role.EDITOR,
        Act.APPROVE: Role.REVIEWER,
        Act.REJECT: Role.REVIEWER,
        Act.DELEGATE: Role.EDITOR,
    }
)
