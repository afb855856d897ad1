"""Redact secrets from an agent's prompt before it is posted on GitHub.

Agents paste whatever their tools returned into the conversation: API keys, tokens and
private keys end up in prompts. A ticket is read by many people (and on a public
repository, by anyone), so known secret shapes (:mod:`ticketing.render.secret_patterns`)
are replaced before rendering, and the ticket says which kinds and where. Every piece of
agent text a ticket can show is covered: messages and their tool calls, the tools offered
(names, descriptions, JSON Schemas), the response format's schema, stop sequences,
``metadata``, ``user`` and the model's name. The title, step comments, continuations, the
answer page and the drafting model all start from the redacted request. The request kept in
the local store is not changed: answers are checked against what the agent really sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ticketing.render.secret_patterns import DEFAULT_PATTERNS, SecretPattern
from ticketing.request import ChatRequest, Message, ResponseFormat, ToolCall, ToolSpec

__all__ = [
    "DEFAULT_PATTERNS",
    "Redaction",
    "SecretPattern",
    "describe_redactions",
    "redact_request",
    "redact_text",
    "redacted",
]


@dataclass(frozen=True)
class Redaction:
    """One secret replaced: which kind, and in which message (1-based) or field."""

    kind: str
    where: str


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    """Return the span to replace: the first capture group that matched, else the match."""
    for group in range(1, (match.re.groups or 0) + 1):
        if match.start(group) >= 0:
            return match.span(group)
    return match.span()


def redact_text(
    text: str, *, where: str, patterns: Sequence[SecretPattern] = DEFAULT_PATTERNS
) -> tuple[str, list[Redaction]]:
    """Replace every secret in ``text`` with a visible placeholder; report what was replaced."""
    found: list[Redaction] = []
    for secret in patterns:
        if secret.hints and not any(hint in text.lower() for hint in secret.hints):
            continue

        def placeholder(match: re.Match[str], secret: SecretPattern = secret) -> str:
            start, end = _secret_span(match)
            whole = match.group()
            offset = match.start()
            value = whole[start - offset : end - offset]
            if secret.spares is not None and secret.spares(match, value):
                return whole
            kind = secret.name
            found.append(Redaction(kind=kind, where=where))
            return f"{whole[: start - offset]}[redacted {kind}]{whole[end - offset :]}"

        text = secret.pattern.sub(placeholder, text)
    return text, found


def redacted(text: str) -> str:
    """Return text with every known secret replaced, for a value quoted in a bot comment."""
    return redact_text(text, where="reply")[0]


class _Redactor:
    """Redact the pieces of one request, collecting what was replaced."""

    def __init__(self, patterns: Sequence[SecretPattern]) -> None:
        self.patterns = patterns
        self.found: list[Redaction] = []

    def text(self, text: str, where: str) -> str:
        shown, hits = redact_text(text, where=where, patterns=self.patterns)
        self.found += hits
        return shown

    def optional(self, text: str | None, where: str) -> str | None:
        return None if text is None else self.text(text, where)

    def json(self, value: Any, where: str) -> Any:
        """Redact every string of a JSON value, keys included (a schema is agent text too)."""
        if isinstance(value, str):
            return self.text(value, where)
        if isinstance(value, Mapping):
            shown: dict[str, Any] = {}
            for key, item in value.items():
                name = self.text(key, where) if isinstance(key, str) else key
                while name in shown:  # two keys redacted alike must both stay
                    name = f"{name}'"
                shown[name] = self.json(item, where)
            return shown
        if isinstance(value, list | tuple):
            return [self.json(item, where) for item in value]
        return value

    def message(self, message: Message, where: str) -> Message:
        calls = tuple(
            ToolCall(
                id=self.text(call.id, where),
                name=self.text(call.name, where),
                arguments=self.text(call.arguments, where),
            )
            for call in message.tool_calls
        )
        return replace(
            message,
            content=self.text(message.content, where),
            name=self.optional(message.name, where),
            tool_calls=calls,
            tool_call_id=self.optional(message.tool_call_id, where),
        )

    def tool(self, tool: ToolSpec) -> ToolSpec:
        name = self.text(tool.name, "tool names")
        where = f"tool {name}"
        return replace(
            tool,
            name=name,
            description=self.text(tool.description, where),
            parameters=self.json(tool.parameters, where),
        )

    def response_format(self, fmt: ResponseFormat | None) -> ResponseFormat | None:
        if fmt is None:
            return None
        where = "response format"
        schema = None if fmt.schema is None else self.json(fmt.schema, where)
        return replace(fmt, name=self.optional(fmt.name, where), schema=schema)


def redact_request(
    request: ChatRequest, *, patterns: Sequence[SecretPattern] = DEFAULT_PATTERNS
) -> tuple[ChatRequest, tuple[Redaction, ...]]:
    """Return the request as a ticket may show it, and the list of redactions made."""
    redactor = _Redactor(patterns)
    model = redactor.text(request.model, "model")
    messages = tuple(
        redactor.message(message, f"message {index}")
        for index, message in enumerate(request.messages, start=1)
    )
    metadata: dict[str, str] = {}
    for key, value in request.metadata.items():
        # The note names the field: the key is shown redacted, like the value.
        name = redactor.text(key, "metadata keys")
        metadata[name] = redactor.text(value, f"metadata {name}")
    shown = replace(
        request,
        model=model,
        messages=messages,
        metadata=metadata,
        user=redactor.optional(request.user, "user"),
        tools=tuple(redactor.tool(tool) for tool in request.tools),
        response_format=redactor.response_format(request.response_format),
        stop=tuple(redactor.text(stop, "stop sequences") for stop in request.stop),
    )
    return shown, tuple(redactor.found)


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
