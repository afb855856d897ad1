"""How a ticket ended, as the fronts deliver it, and the delivered outcomes kept in memory."""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from datetime import timedelta

from ticketing.clock import Clock
from ticketing.release import Release
from ticketing.request import ToolCall
from ticketing.store.model import Candidate, StoredAnswer, StoredJudgement, Ticket

__all__ = ["DeliveredOutcomes", "Outcome", "Rejection", "decode_release", "encode_release"]

# Delivered outcomes kept in memory to answer retries without touching the store.
_DELIVERED_CACHE = 4096


def encode_release(release: Release) -> str:
    """Serialise what is released to the agent, for the store."""
    data: dict[str, object] = {
        "content": release.content,
        "tool_calls": [[c.id, c.name, c.arguments] for c in release.tool_calls],
        "finish_reason": release.finish_reason,
    }
    if release.ask:
        data["ask"] = True
    return json.dumps(data, ensure_ascii=False)


def decode_release(text: str) -> Release:
    """Rebuild a release stored with :func:`encode_release`."""
    data = json.loads(text)
    return Release(
        content=data["content"],
        tool_calls=tuple(ToolCall(id=i, name=n, arguments=a) for i, n, a in data["tool_calls"]),
        finish_reason=data["finish_reason"],
        ask=data.get("ask") is True,
    )


@dataclass(frozen=True)
class Rejection:
    """A held answer that a reviewer's signed judgement rejected: who, and why."""

    candidate: Candidate
    judgement: StoredJudgement

    @property
    def reviewer(self) -> str:
        """Return the login of the reviewer who rejected the answer."""
        return self.judgement.reviewer

    @property
    def reason(self) -> str:
        """Return the reviewer's signed text, the reason given."""
        return self.judgement.reason


@dataclass(frozen=True)
class Outcome:
    """How a ticket ended: with an accepted answer, or expired without one.

    For a watcher that asked to settle on it, a reviewer's rejection of the held answer ends
    it too (``rejection``, and no answer), though the ticket itself waits for another answer.
    """

    ticket: Ticket
    answer: StoredAnswer | None
    rejection: Rejection | None = None

    @property
    def expired(self) -> bool:
        """Say whether nobody answered before the deadline."""
        return self.answer is None and self.rejection is None

    @property
    def release(self) -> Release | None:
        """Return what the agent receives: text and tool calls; None when expired or rejected."""
        if self.answer is None:
            return None
        if not self.answer.release:
            return Release(content=self.answer.text, tool_calls=(), finish_reason="stop")
        return decode_release(self.answer.release)


class DeliveredOutcomes:
    """Delivered outcomes by request key, kept while a retry may still ask for them.

    A delivered outcome never changes again, so any replica may keep it in memory; bounded,
    oldest first out.
    """

    def __init__(self, *, window: timedelta, clock: Clock) -> None:
        self.window = window
        self._clock = clock
        self._outcomes: OrderedDict[str, Outcome] = OrderedDict()

    def recent(self, request_key: str) -> Outcome | None:
        """Return a delivered outcome still inside the redeliver window."""
        outcome = self._outcomes.get(request_key)
        if outcome is None or outcome.answer is None or outcome.answer.delivered_at is None:
            return None
        if self._clock() - outcome.answer.delivered_at >= self.window:
            del self._outcomes[request_key]
            return None
        return outcome

    def remember(self, outcome: Outcome) -> None:
        """Keep a delivered outcome for the retries of its request."""
        self._outcomes[outcome.ticket.request_key] = outcome
        while len(self._outcomes) > _DELIVERED_CACHE:
            self._outcomes.popitem(last=False)
