"""What an answer would make the agent run: its tool calls and AutoGPT's JSON commands.

Pure: answer text and tool calls in, :class:`~auth.review_decision.Command` values out, for
the review policy to judge. AutoGPT looks for its command in the whole reply, in fenced code
blocks and in the outermost ``{...}`` span, so this reads all of them; a repeated JSON key
yields every one of its values, because parsers disagree on which one wins.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from auth.review_decision import Command, CommandSource
from ticketing.json_depth import MAX_JSON_DEPTH, too_deep

__all__ = ["commands_in", "unreadable_json"]

# A fenced code block anywhere in the text (CommonMark: ``` or ~~~, closed by the same run).
_FENCED_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n(.*?)^ {0,3}\1[`~]*[ \t]*$", re.M | re.S)


class _Repeated(tuple[Any, ...]):
    """Every value a JSON object gave one key: parsers disagree on which one wins."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            earlier = result[key]
            result[key] = _Repeated(
                (*earlier, value) if isinstance(earlier, _Repeated) else (earlier, value)
            )
        else:
            result[key] = value
    return result


def _loads(text: str) -> Any:
    """Parse JSON leniently about control characters, keeping every value of a repeated key."""
    try:
        return json.loads(text, object_pairs_hook=_pairs, strict=False)
    except (ValueError, RecursionError):
        return None


def _every(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, _Repeated) else (value,)


def _arguments(value: Any) -> tuple[Mapping[str, Any], bool]:
    """Return arguments as an object, and whether they could be read as one."""
    if isinstance(value, str):
        # Tool call arguments are JSON text; some clients encode them twice.
        if not value.strip():
            return {}, True
        value = _loads(value)
        if isinstance(value, str):
            value = _loads(value)
    if value is None:
        return {}, False
    if isinstance(value, dict):
        return value, True
    return {}, False


def commands_in(content: str | None, tool_calls: Sequence[tuple[str, str]]) -> tuple[Command, ...]:
    """Return every command in an answer: its tool calls, then commands in JSON in its text.

    ``tool_calls`` are ``(name, JSON arguments)`` pairs. In ``content``, the whole text, each
    fenced code block and the outermost ``{...}`` span are read as JSON, because agents
    (AutoGPT among them) look for their command in all of those places. Text that is not
    JSON holds no command.
    """
    found: dict[str, Command] = {}
    for name, raw in tool_calls:
        arguments, readable = _arguments(raw)
        _add(found, Command(name, arguments, "tool_call", readable))
    for candidate in _json_candidates(content or ""):
        value = _loads(candidate)
        if isinstance(value, dict):
            for command in _commands_in_object(value):
                _add(found, command)
    return tuple(found.values())


def unreadable_json(content: str | None) -> bool:
    """Say whether the text holds JSON nested too deep to be read for commands.

    Such JSON could hide a command from the review policy, which reads commands only from
    JSON it can parse: the release refuses it instead (fail closed).
    """
    for candidate in _json_candidates(content or ""):
        if not candidate.lstrip().startswith(("{", "[")):
            continue
        try:
            value = json.loads(candidate, strict=False)
        except RecursionError:
            return True
        except ValueError:
            continue
        if too_deep(value, MAX_JSON_DEPTH):
            return True
    return False


def _add(found: dict[str, Command], command: Command) -> None:
    key = json.dumps(
        [command.name, command.arguments, command.readable], sort_keys=True, default=str
    )
    found.setdefault(key, command)


def _json_candidates(content: str) -> Iterator[str]:
    yield content
    for match in _FENCED_RE.finditer(content.replace("\r\n", "\n")):
        yield match.group(2)
    start, end = content.find("{"), content.rfind("}")
    if 0 <= start < end:
        yield content[start : end + 1]


def _commands_in_object(value: Mapping[str, Any]) -> Iterator[Command]:
    # AutoGPT 0.5: {"thoughts": ..., "use_tool": {"name", "arguments"}}.
    for call in _every(value.get("use_tool")):
        yield from _named(call, "arguments", "autogpt")
    # Older AutoGPT: {"thoughts": ..., "command": {"name", "args"}}.
    for call in _every(value.get("command")):
        yield from _named(call, "args", "autogpt")
    # A ```tool_call block as an editor writes it, bare or in OpenAI's function shape.
    if "name" in value:
        yield from _named(value, "arguments", "tool_call")
    if value.get("type") == "function":
        for call in _every(value.get("function")):
            yield from _named(call, "arguments", "tool_call")


def _named(call: Any, arguments_key: str, source: CommandSource) -> Iterator[Command]:
    if not isinstance(call, dict):
        return
    for name in _every(call.get("name")):
        if not isinstance(name, str) or not name:
            continue
        values = _every(call.get(arguments_key, {}))
        for raw in values:
            arguments, readable = _arguments(raw)
            yield Command(name, arguments, source, readable)
