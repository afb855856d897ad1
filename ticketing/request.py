"""The conversation a ticket carries, and the request key that names it.

The proxy parses the OpenAI wire format into a :class:`ChatRequest`; everything in
``ticketing`` works on this value and never on raw HTTP.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

# Fields that do not change what the right answer is: a retry that flips them must
# still re-attach to the same ticket.
_FIELDS_NOT_IN_KEY = frozenset({"stream", "stream_options", "timeout"})


@dataclass(frozen=True)
class ToolCall:
    """A function call, as the assistant made it in the history or as an editor answers it."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolSpec:
    """A function the agent offers, with its JSON Schema for the arguments."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    strict: bool = False


@dataclass(frozen=True)
class ResponseFormat:
    """What the content must be: ``text``, ``json_object`` or ``json_schema`` (with its schema)."""

    type: str = "text"
    name: str | None = None
    schema: Mapping[str, Any] | None = None
    strict: bool = False


@dataclass(frozen=True)
class Message:
    """One message of the conversation, with its content flattened to text."""

    role: str
    content: str
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True)
class ChatRequest:
    """A validated chat completion request, as a ticket shows it."""

    model: str
    messages: tuple[Message, ...]
    client: str = "anonymous"
    user: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    max_tokens: int | None = None
    key: str = ""
    tools: tuple[ToolSpec, ...] = ()
    # "auto", "none", "required", or "function:<name>" for a named function.
    tool_choice: str = "auto"
    parallel_tool_calls: bool = True
    # The request used the legacy `functions` field: answer with `function_call`.
    legacy_functions: bool = False
    response_format: ResponseFormat | None = None
    stop: tuple[str, ...] = ()
    # A task's step (Agent Protocol, A2A): the answer's ```artifact path=...``` blocks are
    # files the agent created, and their paths are checked before it is released.
    answer_artifacts: bool = False
    # Keyring logins the request is asked of (MCP's ``to``, resolved by the front against the
    # keyring, never the agent's text): the ticket shows and mentions them.
    addressed: tuple[str, ...] = ()

    @property
    def system_prompt(self) -> str:
        """Return the system (and developer) messages joined, or an empty string."""
        return "\n\n".join(m.content for m in self.messages if m.role in {"system", "developer"})

    @property
    def last_user_message(self) -> Message | None:
        """Return the newest user message, the one the ticket shows first."""
        for message in reversed(self.messages):
            if message.role == "user":
                return message
        return None

    def to_json(self) -> str:
        """Serialise the request for the durable store."""
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ChatRequest:
        """Rebuild a request stored with :meth:`to_json`."""
        data = json.loads(text)
        messages = tuple(
            Message(
                role=m["role"],
                content=m["content"],
                name=m["name"],
                tool_calls=tuple(ToolCall(**c) for c in m["tool_calls"]),
                tool_call_id=m["tool_call_id"],
            )
            for m in data.pop("messages")
        )
        tools = tuple(ToolSpec(**t) for t in data.pop("tools"))
        fmt = data.pop("response_format")
        return cls(
            messages=messages,
            tools=tools,
            response_format=None if fmt is None else ResponseFormat(**fmt),
            stop=tuple(data.pop("stop")),
            addressed=tuple(data.pop("addressed", ())),
            **data,
        )


def request_key(client: str, body: Mapping[str, Any]) -> str:
    """Hash the canonical form of a request body, so a byte-identical retry maps to one ticket.

    Keys are sorted and whitespace removed, so two encodings of the same JSON value
    give the same key; fields that do not change the answer are left out.
    """
    kept = {k: v for k, v in body.items() if k not in _FIELDS_NOT_IN_KEY}
    canonical = json.dumps(
        {"client": client, "body": kept},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()
