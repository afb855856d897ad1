"""GitHub's timestamps: parse its ``2026-01-02T03:04:05Z`` form and format ``since`` values."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_github_time(value: str) -> datetime:
    """Parse a GitHub timestamp such as ``2026-01-02T03:04:05Z`` into an aware datetime."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def format_github_time(value: datetime) -> str:
    """Format an aware datetime the way GitHub's ``since`` parameter expects."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def as_utc(value: datetime) -> datetime:
    """Return ``value`` in UTC, reading a naive datetime (as PyGithub may give) as UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
