"""Check an answer's content: the JSON the agent expects, its stop sequences and max_tokens.

Pure: no I/O. Content must be one JSON object when ``response_format`` asks for one (and
match its schema), or when the agent follows AutoGPT's JSON-in-content convention
(:mod:`ticketing.release.autogpt`), also beside the tool call that AutoGPT's functions mode
runs. It is cut at the first ``stop`` sequence, as a model
stops before emitting it, but never shortened to fit ``max_tokens``: a person's words must
not be altered silently, so a long answer is refused instead.
"""

from __future__ import annotations

from ticketing.release.autogpt import autogpt_problems
from ticketing.release.blocks import TOOL_CALL_INFO
from ticketing.release.json_values import parse_json
from ticketing.release.quoting import json_type, quote, show_json
from ticketing.release.schemas import schema_problems
from ticketing.render.autogpt_interface import uses_json_convention
from ticketing.render.fences import unwrap_json_fence
from ticketing.request import ChatRequest

__all__ = ["CHARS_PER_TOKEN", "check_content", "cut_at_stop", "expects_json", "length_problems"]

# The OpenAI rule of thumb the proxy also counts usage with: about four characters a token.
CHARS_PER_TOKEN = 4


def expects_json(request: ChatRequest) -> bool:
    """Return whether the content must be a JSON object: by response_format, or AutoGPT's way."""
    fmt = request.response_format
    return (fmt is not None and fmt.type in {"json_object", "json_schema"}) or _is_autogpt(request)


def _is_autogpt(request: ChatRequest) -> bool:
    """Return whether the agent asks, AutoGPT-style, for its step as JSON in the content."""
    # With tools (OPENAI_FUNCTIONS) AutoGPT takes its command as a tool call, but still
    # parses the content as its JSON thoughts and gives up on a step whose text is not.
    return uses_json_convention(request.system_prompt)


def check_content(
    content: str | None, request: ChatRequest, problems: list[str], *, beside_call: bool = False
) -> tuple[str | None, bool]:
    """Check content that must be JSON; return it unwrapped, and whether it was valid JSON.

    ``beside_call`` says the content goes with a tool call (AutoGPT's functions mode).
    """
    if not expects_json(request):
        return content, False
    if content is None and beside_call:
        problems.append(
            f"beside its tool call, this agent expects a JSON object as text, and the answer"
            f" has none; put the template's JSON object above the {quote(TOOL_CALL_INFO)} block."
        )
        return None, False
    if content is None:
        problems.append("this agent expects a JSON object as the answer, and the answer is empty.")
        return None, False
    fmt = request.response_format
    # Editors often fence JSON for readability; the agent wants the JSON itself.
    content = unwrap_json_fence(content)
    value, error = parse_json(content)
    if error is not None:
        problems.append(
            f"this agent expects a JSON object as the answer, and it is not valid JSON:"
            f" {quote(error)}."
        )
        return content, False
    if not isinstance(value, dict):
        problems.append(f"this agent expects a JSON object as the answer, not {json_type(value)}.")
        return content, False
    if fmt is not None and fmt.type == "json_schema" and fmt.schema is not None:
        problems += schema_problems(
            value,
            fmt.schema,
            subject="the answer",
            owner=f"the response format {quote(fmt.name or 'schema')}",
        )
    if _is_autogpt(request):
        problems += autogpt_problems(value, request.system_prompt)
    return content, True


def cut_at_stop(
    content: str | None, request: ChatRequest, problems: list[str], *, checked_json: bool
) -> str | None:
    """Cut content at the first stop sequence, as a model stops before emitting it."""
    if content is None:
        return None
    found = [(content.find(s), s) for s in request.stop if s and s in content]
    if not found:
        return content
    at, sequence = min(found)
    cut = content[:at]
    if checked_json and parse_json(cut)[1] is not None:
        problems.append(
            f"the answer contains the stop sequence {quote(show_json(sequence))}, and cutting it"
            " there would leave invalid JSON; remove that text from the answer."
        )
    return cut or None


def length_problems(content: str | None, request: ChatRequest) -> list[str]:
    """Refuse content longer than the agent's max_tokens allows, rather than cut it."""
    limit = request.max_tokens
    if limit is None or content is None or len(content) <= limit * CHARS_PER_TOKEN:
        return []
    return [
        f"the agent allows at most {limit} tokens (about {limit * CHARS_PER_TOKEN}"
        f" characters); shorten the answer, which has {len(content)} characters."
    ]
