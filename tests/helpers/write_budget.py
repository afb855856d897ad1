"""Two replicas' write throttles on one shared ledger, taking turns to write."""

from __future__ import annotations

from dataclasses import dataclass

from ticketing.errors import GitHubUnavailable
from ticketing.github.throttle import WriteThrottle


@dataclass
class Turns:
    """What the throttles let through: writes sent, and the waits told to those refused."""

    sent: int
    refused: list[float | None]
    reaction_left: bool


async def take_turns(throttles: list[WriteThrottle], rounds: int = 3) -> Turns:
    """Write through each throttle in turn for ``rounds``, then try a reaction; close them."""
    sent = 0
    refused: list[float | None] = []
    try:
        for _ in range(rounds):
            for throttle in throttles:
                try:
                    await throttle.acquire()
                    sent += 1
                except GitHubUnavailable as exc:
                    refused.append(exc.retry_after)
        # Reactions take only the spare half of the budget.
        reaction_left = await throttles[-1].try_acquire(share=0.5)
    finally:
        for throttle in throttles:
            await throttle.close()
    return Turns(sent=sent, refused=refused, reaction_left=reaction_left)
