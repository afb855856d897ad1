"""What the desk counts, read by the proxy's metrics at scrape time.

Ticketing imports no metrics library: the proxy reads these numbers when scraped.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

__all__ = ["AnswerCounters"]


@dataclass
class AnswerCounters:
    """Answers accepted, and signed comments refused by reason."""

    accepted: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
