"""GitHub's timestamps: whole seconds, UTC, written ``YYYY-MM-DDTHH:MM:SSZ``."""

from __future__ import annotations

import math
from datetime import UTC, datetime


def utc_now() -> datetime:
    """Return the current time, aware and in UTC."""
    return datetime.now(UTC)


def to_epoch(moment: datetime) -> int:
    """Return the whole second a datetime falls in; naive datetimes are taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return math.floor(moment.timestamp())


def format_timestamp(epoch: int) -> str:
    """Render epoch seconds the way GitHub's REST API does."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_since(text: str) -> int | None:
    """Parse an ISO-8601 ``since`` into the first whole second not before it, or None if bad."""
    candidate = text.strip()
    # An unescaped "+" in a query string arrives as a space: "...T00:00:00 02:00".
    if len(candidate) > 6 and candidate[-6] == " " and candidate[-3] == ":":
        candidate = f"{candidate[:-6]}+{candidate[-5:]}"
    if candidate.endswith(("Z", "z")):
        candidate = candidate[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(candidate)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    # Stored times are whole seconds, so `updated_at >= 12.5` means `>= 13`.
    return math.ceil(moment.timestamp())
