"""Redact secrets from an agent's prompt before it is posted on GitHub.

Agents paste whatever their tools returned into the conversation: API keys, tokens and
private keys end up in prompts. A ticket is read by many people (and on a public
repository, by anyone), so known secret shapes are replaced before rendering, and the
ticket says where. The request kept in the local store is not changed: answers are
checked against what the agent really sent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ticketing.request import ChatRequest, Message, ToolCall


@dataclass(frozen=True)
class SecretPattern:
    """A named shape of secret."""

    name: str
    pattern: re.Pattern[str]


DEFAULT_PATTERNS: tuple[SecretPattern, ...] = tuple(
    SecretPattern(name, re.compile(regex))
    for name, regex in (
        (
            "private key",
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)",
        ),
        ("Anthropic API key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
        ("OpenAI API key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        ("GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
        ("AWS access key id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
        ("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
        ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
        ("JSON Web Token", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        ("bearer token", r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=-]{20,}"),
        (
            "password in a URL",
            r"(?<=://)[^/\s:@]{1,64}:[^/\s@]{1,128}(?=@)",
        ),
    )
)


@dataclass(frozen=True)
class Redaction:
    """One secret replaced: which kind, and in which message (1-based) or field."""

    kind: str
    where: str


def redact_text(
    text: str, *, where: str, patterns: Sequence[SecretPattern] = DEFAULT_PATTERNS
) -> tuple[str, list[Redaction]]:
    """Replace every secret in ``text`` with a visible placeholder; report what was replaced."""
    found: list[Redaction] = []
    for secret in patterns:

        def placeholder(_: re.Match[str], kind: str = secret.name) -> str:
            found.append(Redaction(kind=kind, where=where))
            return f"[redacted {kind}]"

        text = secret.pattern.sub(placeholder, text)
    return text, found


def redact_request(
    request: ChatRequest, *, patterns: Sequence[SecretPattern] = DEFAULT_PATTERNS
) -> tuple[ChatRequest, tuple[Redaction, ...]]:
    """Return the request as a ticket may show it, and the list of redactions made."""
    found: list[Redaction] = []
    messages: list[Message] = []
    for index, message in enumerate(request.messages, start=1):
        where = f"message {index}"
        content, hits = redact_text(message.content, where=where, patterns=patterns)
        found += hits
        calls: list[ToolCall] = []
        for call in message.tool_calls:
            arguments, hits = redact_text(call.arguments, where=where, patterns=patterns)
            found += hits
            calls.append(replace(call, arguments=arguments))
        messages.append(replace(message, content=content, tool_calls=tuple(calls)))
    metadata: dict[str, str] = {}
    for key, value in request.metadata.items():
        metadata[key], hits = redact_text(value, where=f"metadata {key}", patterns=patterns)
        found += hits
    user = request.user
    if user is not None:
        user, hits = redact_text(user, where="user", patterns=patterns)
        found += hits
    return (
        replace(request, messages=tuple(messages), metadata=metadata, user=user),
        tuple(found),
    )


def describe_redactions(found: Sequence[Redaction]) -> str | None:
    """Say on the ticket what was redacted and where, or None when nothing was."""
    if not found:
        return None
    counts: dict[tuple[str, str], int] = {}
    for item in found:
        counts[(item.kind, item.where)] = counts.get((item.kind, item.where), 0) + 1
    parts = [f"{n} {kind}{'s' if n > 1 else ''} in {where}" for (kind, where), n in counts.items()]
    return (
        f"ticketproxy redacted {len(found)} secret{'s' if len(found) > 1 else ''} from this"
        f" prompt before posting it: {'; '.join(parts)}. The agent's request is unchanged."
    )
