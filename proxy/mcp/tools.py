"""The two tools, ``ask_team`` and ``request_approval``: their schemas, calls and results.

Pure: no I/O. A call's arguments are checked against the tool's input schema, then become
the ``ChatRequest`` a ticket carries, rendered like any other ticket (the tool's caller shown
as the agent); the ticket's outcome becomes the tool's result, naming the ticket's URL, who
signed, and the sha256 digest of the signed text, so the agent can cite it and ``audit``
can check it.

- ``ask_team``: the answer is the signed editor's text. With ``answer_schema`` the request
  asks for a ``json_schema`` response format, so the answer is checked before it is released
  (a failing one is held and the editor told why), and ``structuredContent`` is the answer
  object itself.
- ``request_approval``: the ticket offers one tool, ``run_command``, whose arguments must be
  the action and command asked about. The editor approves by answering that call, which
  the review policy holds for reviewers' signed approvals (N of M, ``run_*`` in the default
  policy); a plain-text answer refuses, its text the reason. A refusal is ``approved:
  false``, not a tool error.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ticketing.desk import Outcome
from ticketing.release.schemas import schema_error, schema_problems
from ticketing.request import ChatRequest, Message, ResponseFormat, ToolSpec

from .addressing import Addressee
from .wire import InvalidParams

__all__ = [
    "APPROVAL_TOOL",
    "REQUEST_APPROVAL",
    "TOOLS",
    "ToolCall",
    "answer_result",
    "approval_result",
    "expired_result",
    "read_tool_call",
    "refused_result",
    "tool_request",
]

TOOL_MODEL = "mcp-tool"
APPROVAL_TOOL = "run_command"
_TEXT_LIMIT = 100_000

ASK_TEAM: dict[str, Any] = {
    "name": "ask_team",
    "title": "Ask the team",
    "description": (
        "Ask your team a question and wait for a person's signed answer (minutes or hours: "
        "progress notifications keep the call alive). Returns the answer, the ticket's URL, "
        "who signed it and the sha256 digest of the signed text. With answer_schema (a JSON "
        "Schema of an object) the answer is that object, checked before it is returned."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": _TEXT_LIMIT},
            "context": {"type": "string", "maxLength": _TEXT_LIMIT},
            "answer_schema": {"type": "object"},
            "to": {
                "type": "string",
                "minLength": 1,
                "maxLength": 100,
                "description": (
                    "Whom to ask: a GitHub login in the team's keyring, or a team: "
                    "editors or reviewers. The ticket mentions only them."
                ),
            },
        },
        "required": ["question"],
        "additionalProperties": False,
    },
    "outputSchema": {"type": "object"},
    # A client may poll a task instead of holding the call (2025-11-25).
    "execution": {"taskSupport": "optional"},
    "annotations": {
        "title": "Ask the team",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": True,
    },
}

REQUEST_APPROVAL: dict[str, Any] = {
    "name": "request_approval",
    "title": "Request the team's approval",
    "description": (
        "Ask for a signed approval before doing something risky. Waits until the team's "
        "review policy is satisfied (N of M reviewers' signed judgements) or someone "
        "refuses; returns {approved, reviewers, reason, ticket_url}. A refusal is "
        "approved: false with the reason."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "minLength": 1, "maxLength": 2_000},
            "command": {"type": "string", "maxLength": 20_000},
            "details": {"type": "string", "maxLength": _TEXT_LIMIT},
        },
        "required": ["action"],
        "additionalProperties": False,
    },
    "outputSchema": {
        "type": "object",
        "properties": {
            "approved": {"type": "boolean"},
            "reviewers": {"type": "array", "items": {"type": "string"}},
            "reason": {"type": "string"},
            "ticket_url": {"type": "string"},
            "signer": {"type": ["string", "null"]},
            "digest": {"type": ["string", "null"]},
        },
        "required": ["approved", "reviewers", "reason", "ticket_url"],
    },
    "execution": {"taskSupport": "optional"},
    "annotations": {
        "title": "Request the team's approval",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": True,
    },
}

TOOLS: dict[str, dict[str, Any]] = {tool["name"]: tool for tool in (ASK_TEAM, REQUEST_APPROVAL)}

_ASK_PROMPT = (
    "An agent calls the MCP tool `ask_team`: it stopped to ask the team the question below, "
    "and waits. Your signed answer is returned to it as the tool's result."
)
_APPROVAL_PROMPT = (
    "An agent calls the MCP tool `request_approval`: it asks for approval before it does "
    f"what is described below, and waits. To approve, answer with the `{APPROVAL_TOOL}` "
    "tool call with exactly the action and command shown (reviewers must then approve it "
    "as the review policy says). To refuse, answer in plain text: your text is the reason "
    "the agent is given."
)


@dataclass(frozen=True)
class ToolCall:
    """A checked call of one of the tools."""

    name: str
    arguments: Mapping[str, Any]

    @property
    def approval(self) -> bool:
        """Say whether this call asks for an approval (a review ticket)."""
        return self.name == "request_approval"


def read_tool_call(params: Mapping[str, Any]) -> ToolCall | list[str]:
    """Return the checked call; problems with its arguments; or raise for an unknown tool.

    Unknown tools are a protocol error (-32602); arguments that do not match the schema are
    the tool's error, returned so the model can correct itself (specification 2025-11-25).
    """
    name = params.get("name")
    tool = TOOLS.get(name) if isinstance(name, str) else None
    if tool is None or not isinstance(name, str):
        raise InvalidParams(
            f"Unknown tool: {name!r}. This server offers {', '.join(sorted(TOOLS))}."
        )
    arguments = params.get("arguments", {})
    if not isinstance(arguments, dict):
        return ["`arguments` must be an object."]
    problems = schema_problems(
        arguments, tool["inputSchema"], subject="the arguments", owner="the tool's inputSchema"
    )
    schema = arguments.get("answer_schema")
    if not problems and schema is not None:
        problems = _answer_schema_problems(schema)
    return problems or ToolCall(name=name, arguments=arguments)


def _answer_schema_problems(schema: Mapping[str, Any]) -> list[str]:
    """Refuse an answer_schema that is not a valid JSON Schema, or not one of an object."""
    invalid = schema_error(schema, owner="`answer_schema`")
    if invalid is not None:
        return [f"{invalid}: fix it and call again."]
    if schema.get("type") != "object":
        return ['`answer_schema` must describe an object: give it "type": "object".']
    return []


def tool_request(
    call: ToolCall, *, client: str, agent: str, addressee: Addressee | None = None
) -> ChatRequest:
    """Return the ticket's request for a tool call; identical calls share its key.

    ``addressee`` is ``to`` resolved against the keyring: the ticket pings those logins.
    """
    args = call.arguments
    key = hashlib.sha256(
        json.dumps(["mcp", client, call.name, args], sort_keys=True, ensure_ascii=False).encode()
    ).hexdigest()
    if call.approval:
        return _approval_request(args, client=client, agent=agent, key=key)
    parts = [args["question"]]
    if args.get("context"):
        parts.append(f"Context:\n{args['context']}")
    if addressee is not None:
        parts.append(f"Asked of: {addressee.shown}")
    schema = args.get("answer_schema")
    return ChatRequest(
        model=TOOL_MODEL,
        messages=(Message("system", _ASK_PROMPT), Message("user", "\n\n".join(parts))),
        client=client,
        metadata={"agent": agent},
        key=key,
        addressed=() if addressee is None else addressee.logins,
        response_format=(
            None
            if schema is None
            else ResponseFormat(type="json_schema", name="answer", schema=schema, strict=True)
        ),
    )


def _approval_request(args: Mapping[str, Any], *, client: str, agent: str, key: str) -> ChatRequest:
    parts = [f"Action: {args['action']}"]
    if args.get("command"):
        parts.append(f"Command:\n{args['command']}")
    if args.get("details"):
        parts.append(f"Details:\n{args['details']}")
    asked = {name: args[name] for name in ("action", "command") if args.get(name) is not None}
    parameters = {
        "type": "object",
        "properties": {name: {"const": value} for name, value in asked.items()},
        "required": sorted(asked),
        "additionalProperties": False,
    }
    spec = ToolSpec(
        name=APPROVAL_TOOL,
        description="Approve: the agent may do the action (and run the command) shown.",
        parameters=parameters,
        strict=True,
    )
    return ChatRequest(
        model=TOOL_MODEL,
        messages=(Message("system", _APPROVAL_PROMPT), Message("user", "\n\n".join(parts))),
        client=client,
        metadata={"agent": agent},
        key=key,
        tools=(spec,),
        parallel_tool_calls=False,
    )


def _provenance(outcome: Outcome) -> dict[str, Any]:
    answer = outcome.answer
    return {
        "ticket_url": outcome.ticket.issue_url or "",
        "signer": None if answer is None else answer.signer,
        "digest": None if answer is None else f"sha256:{answer.digest}",
        "comment_url": None if answer is None else answer.comment_url,
    }


def _cited(text: str, meta: Mapping[str, Any]) -> str:
    return (
        f"{text}\n\n(Signed by {meta['signer']} on {meta['ticket_url']}; "
        f"signed text {meta['digest']}.)"
    )


def answer_result(outcome: Outcome, *, schema: bool) -> dict[str, Any]:
    """Return ``ask_team``'s result for an answered ticket."""
    release = outcome.release
    assert release is not None
    meta = _provenance(outcome)
    text = release.content or ""
    structured = json.loads(text) if schema else {"answer": text, **meta}
    return {
        "content": [{"type": "text", "text": _cited(text, meta)}],
        "structuredContent": structured,
        "isError": False,
        "_meta": {"ticketproxy": meta},
    }


def approval_result(outcome: Outcome, reviewers: Sequence[str]) -> dict[str, Any]:
    """Return ``request_approval``'s result: approved by the call, refused by plain text.

    A reviewer's signed rejection of the held approval is ``approved: false`` too: its
    reviewer is the one named, and signed; the digest is of the answer they rejected.
    """
    release = outcome.release
    meta = _provenance(outcome)
    rejection = outcome.rejection
    approved = release is not None and any(c.name == APPROVAL_TOOL for c in release.tool_calls)
    if rejection is not None:
        reviewers = [rejection.reviewer]
        reason = rejection.reason or f"Rejected by {rejection.reviewer}."
        meta = {
            **meta,
            "signer": rejection.reviewer,
            "digest": f"sha256:{rejection.candidate.digest}",
            "comment_url": rejection.candidate.comment_url,
        }
    elif release is None:
        reason = "Nobody answered before the ticket's deadline: not approved."
    elif approved:
        reason = release.content or "Approved."
    else:
        reason = release.content or "Refused."
    named = approved or rejection is not None
    structured = {
        "approved": approved,
        "reviewers": list(reviewers) if named else [],
        "reason": reason,
        "ticket_url": meta["ticket_url"],
        "signer": meta["signer"],
        "digest": meta["digest"],
    }
    verdict = "Approved" if approved else "Not approved"
    if rejection is not None:
        verdict = f"Rejected by {rejection.reviewer}"
    text = f"{verdict}: {reason}"
    if reviewers and approved:
        text += f" (reviewers: {', '.join(reviewers)})"
    return {
        "content": [{"type": "text", "text": _cited(text, meta)}],
        "structuredContent": structured,
        "isError": False,
        "_meta": {"ticketproxy": meta},
    }


def expired_result(outcome: Outcome) -> dict[str, Any]:
    """Return ``ask_team``'s result when nobody answered in time: a tool error."""
    url = outcome.ticket.issue_url or "the ticket"
    text = f"Nobody on the team answered before the deadline ({url} is closed as expired)."
    return {
        "content": [{"type": "text", "text": text}],
        "isError": True,
        "_meta": {"ticketproxy": _provenance(outcome)},
    }


def refused_result(problems: Sequence[str]) -> dict[str, Any]:
    """Return a tool error for arguments the tool cannot take, naming each problem."""
    text = "The call was refused: " + " ".join(problems)
    return {"content": [{"type": "text", "text": text}], "isError": True}
