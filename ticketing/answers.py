"""From a verified answer text to what the agent receives.

Pure: no I/O, no clock. :func:`prepare_release` reads an editor's signed answer against the
request it answers and returns either a :class:`Release` (content, tool calls and finish
reason, ready to render as a completion) or a :class:`Refusal` listing every problem, one
sentence each, for the ticket. It never raises: whatever a person typed becomes one of the
two.

The order of work:

1. Split the text into content and ```` ```tool_call ```` fenced blocks (CommonMark fences:
   ``` or ~~~, at least three, closed by the same character at least as long; read by
   :mod:`ticketing.render.fences`).
2. Read each block as ``{"name", "arguments"}`` or OpenAI's ``{"type": "function",
   "function": {...}}`` and check it against the offered tools (JSON Schema 2020-12),
   ``tool_choice``, ``parallel_tool_calls`` and the legacy ``functions`` field.
3. Check the content against ``response_format`` and AutoGPT's JSON-in-content convention
   (its prompt is read by :mod:`ticketing.render.autogpt_prompt` and
   :mod:`ticketing.render.autogpt_interface`).
4. Cut the content at the first ``stop`` sequence, then check ``max_tokens``; the text is
   never shortened to fit, because a person's words must not be altered silently.

Problems quote untrusted values (names, paths, schema messages) as one-line code spans, so
a problem is inert markdown wherever it is shown.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]
from referencing import Registry
from referencing.exceptions import Unresolvable

from auth.policy import Command, commands_in
from ticketing.render.autogpt_interface import parse_response_interface, uses_json_convention
from ticketing.render.autogpt_prompt import parse_commands
from ticketing.render.fences import (
    FencedBlock,
    fenced_blocks,
    longest_backtick_run,
    unwrap_json_fence,
)
from ticketing.render.markdown import split_lines
from ticketing.request import ChatRequest, ToolCall, ToolSpec

__all__ = ["CHARS_PER_TOKEN", "TOOL_CALL_INFO", "Refusal", "Release", "prepare_release"]

TOOL_CALL_INFO = "tool_call"
# Info strings an editor plausibly meant as a tool call; they are refused rather than
# released as text, so a typo never turns an intended action into prose for the agent.
_NEAR_MISSES = frozenset({"tool_call", "tool_calls", "toolcall", "toolcalls", "function_call"})
# The OpenAI rule of thumb the proxy also counts usage with: about four characters a token.
CHARS_PER_TOKEN = 4

_VALUE_LIMIT = 120  # characters of one quoted value; the ticket reply clips a problem at 500
_LIST_LIMIT = 300  # characters of a quoted list of names
_EXAMPLE_CALL = '{"name": "...", "arguments": {...}}'


@dataclass(frozen=True)
class Release:
    """What the agent receives."""

    content: str | None
    tool_calls: tuple[ToolCall, ...]
    # "stop", "tool_calls", or "function_call" when the request used legacy `functions`.
    finish_reason: str

    def commands(self) -> tuple[Command, ...]:
        """Return the commands it makes the agent run, as the review policy reads them."""
        return commands_in(self.content, [(c.name, c.arguments) for c in self.tool_calls])


@dataclass(frozen=True)
class Refusal:
    """Why a signed answer cannot be released; posted on the ticket so the editor can fix it."""

    problems: tuple[str, ...]


def prepare_release(text: str, request: ChatRequest, *, call_id_seed: str) -> Release | Refusal:
    """Check an answer against its request and return what to release, or why not."""
    try:
        return _prepare(text, request, call_id_seed)
    except Exception as error:  # noqa: BLE001
        # The contract is "never raises": a bug here must not stop the desk's poll loop.
        # Fail closed, and name the error so the report reaches someone who can fix it.
        return Refusal(
            (
                f"ticketproxy could not check this answer (internal error"
                f" {_code(type(error).__name__)}); please report it to the operators.",
            )
        )


def _prepare(text: str, request: ChatRequest, seed: str) -> Release | Refusal:
    """Do the work of :func:`prepare_release`, which guards it."""
    problems: list[str] = []
    answer = _split_answer(text, problems)
    calls = _read_calls(answer.blocks, problems)
    problems += _call_problems(calls, len(answer.blocks), request)
    content, checked_json = answer.content, False
    if not answer.blocks:
        content, checked_json = _check_content(content, request, problems)
    content = _cut_at_stop(content, request, problems, checked_json=checked_json)
    problems += _length_problems(content, request)
    if content is not None and not _encodable(content):
        problems.append("the answer holds an unpaired surrogate character; remove it.")
    if problems:
        return Refusal(tuple(dict.fromkeys(problems)))
    tool_calls = tuple(
        ToolCall(id=_call_id(seed, index), name=call.name, arguments=call.arguments)
        for index, call in enumerate(calls)
    )
    if not tool_calls:
        finish_reason = "stop"
    elif request.legacy_functions:
        finish_reason = "function_call"
    else:
        finish_reason = "tool_calls"
    return Release(content=content, tool_calls=tool_calls, finish_reason=finish_reason)


def _call_id(seed: str, index: int) -> str:
    """Return a tool call id that a retry of the same ticket gets again."""
    digest = hashlib.sha256(f"{seed}:{index}".encode("utf-8", "surrogatepass")).hexdigest()
    return "call_" + digest[:24]


# --- splitting the text -------------------------------------------------------------------


@dataclass(frozen=True)
class _Answer:
    """An answer split into the content and its ``tool_call`` blocks."""

    content: str | None
    blocks: tuple[FencedBlock, ...]


def _split_answer(text: str, problems: list[str]) -> _Answer:
    """Separate the ``tool_call`` blocks from the content, noting unclosed or misnamed ones."""
    lines = split_lines(text)
    blocks: list[FencedBlock] = []
    segments: list[list[str]] = [[]]
    taken = 0
    for block in fenced_blocks(lines):
        if block.info != TOOL_CALL_INFO:
            if _normal_info(block.info) in _NEAR_MISSES:
                problems.append(
                    f"the fenced block on line {block.line + 1} is labelled"
                    f" {_code(block.info)}; a tool call must be labelled exactly"
                    f" {_code(TOOL_CALL_INFO)}, and any other label is sent as text."
                )
            continue
        if not block.closed:
            problems.append(
                f"the {_code(TOOL_CALL_INFO)} block opened on line {block.line + 1} is never"
                " closed; end it with a fence like the one that opened it."
            )
        blocks.append(block)
        segments[-1] += lines[taken : block.line]
        segments.append([])
        taken = block.end + 1
    segments[-1] += lines[taken:]
    # Join what surrounds the blocks as paragraphs: only blank lines change, never words.
    kept = ["\n".join(_trim_blank(segment)) for segment in segments]
    content = "\n\n".join(part for part in kept if part).strip()
    return _Answer(content=content or None, blocks=tuple(blocks))


def _normal_info(info: str) -> str:
    """Return the first word of an info string, lowercased, with dashes as underscores."""
    words = info.split()
    return words[0].lower().replace("-", "_") if words else ""


def _trim_blank(lines: list[str]) -> list[str]:
    """Drop the blank lines at both ends of a list of lines."""
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


# --- tool calls -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    """A tool call read from a block: the name and the arguments re-serialised."""

    line: int
    name: str
    arguments: str
    value: dict[str, Any]


def _read_calls(blocks: Sequence[FencedBlock], problems: list[str]) -> list[_Call]:
    """Read every closed ``tool_call`` block, noting each one that is not a valid call."""
    calls = []
    for block in blocks:
        if block.closed:
            call = _read_call(block, problems)
            if call is not None:
                calls.append(call)
    return calls


def _read_call(block: FencedBlock, problems: list[str]) -> _Call | None:
    """Read one block as a call, or note why it is not one."""
    where = f"the {_code(TOOL_CALL_INFO)} block on line {block.line + 1}"
    value, error = _parse_json(block.body)
    if error is not None:
        problems.append(f"{where} is not valid JSON: {_code(error)}.")
        return None
    body = value
    allowed = {"name", "arguments"}
    if isinstance(value, dict) and "function" in value:
        # OpenAI's shape, as seen in a completion's `tool_calls` (its `id` is replaced).
        unknown = sorted(set(value) - {"type", "function", "id"})
        if value.get("type", "function") != "function":
            problems.append(
                f"{where} has {_code('type')} {_code(_show(value.get('type')))}; a tool call"
                f" has type {_code('function')}."
            )
            return None
        if unknown:
            problems.append(
                f"{where} has keys {_names(unknown)} that a tool call does not take; remove them."
            )
            return None
        body = value["function"]
    if not isinstance(body, dict) or not isinstance(body.get("name"), str) or not body["name"]:
        problems.append(
            f"{where} must hold one JSON object with a string {_code('name')},"
            f" like {_code(_EXAMPLE_CALL)}."
        )
        return None
    name: str = body["name"]
    unknown = sorted(set(body) - allowed)
    if unknown:
        problems.append(
            f"{where} has keys {_names(unknown)} that a tool call does not take; only"
            f" {_code('name')} and {_code('arguments')} are sent, so remove the others."
        )
        return None
    arguments = body.get("arguments", {})
    if isinstance(arguments, str):
        # OpenAI sends arguments as a JSON string; accept an editor pasting that form.
        arguments, error = _parse_json(arguments)
        if error is not None:
            problems.append(
                f"the arguments of {_code(name)} in {where} are a string that is not valid"
                f" JSON: {_code(error)}."
            )
            return None
    if not isinstance(arguments, dict):
        problems.append(
            f"the arguments of {_code(name)} in {where} must be a JSON object,"
            f" not {_json_type(arguments)}."
        )
        return None
    serialised, error = _dump_json(arguments)
    if error is not None:
        problems.append(f"the arguments of {_code(name)} in {where} {error}.")
        return None
    return _Call(line=block.line, name=name, arguments=serialised, value=arguments)


def _call_problems(calls: Sequence[_Call], blocks: int, request: ChatRequest) -> list[str]:
    """Check the calls against the tools, tool_choice and the one-call limits."""
    # Counts use every block, readable or not: an editor who wrote a broken block meant a
    # call, and hearing "a call is required" on top of the JSON error would only confuse.
    if blocks and not request.tools:
        if _expects_json(request):
            return ["this request offered no tools; answer with text: the JSON object it asks for."]
        return ["this request offered no tools; answer with text."]
    problems: list[str] = []
    offered = {tool.name: tool for tool in request.tools}
    for call in calls:
        tool = offered.get(call.name)
        if tool is None:
            problems.append(
                f"the tool {_code(call.name)} (line {call.line + 1}) is not offered by this"
                f" request; the offered tools are {_names(list(offered))}."
            )
        else:
            problems += _argument_problems(call, tool)
    choice = request.tool_choice
    if choice == "none" and blocks:
        problems.append(
            f"this request set {_code('tool_choice')} to {_code('none')}, so it takes no"
            " tool call; answer with text."
        )
    elif choice == "required" and not blocks:
        problems.append(
            f"this request requires a tool call ({_code('tool_choice')} is"
            f" {_code('required')}); add a {_code(TOOL_CALL_INFO)} block."
        )
    elif choice.startswith("function:"):
        wanted = choice.removeprefix("function:")
        if not blocks:
            problems.append(
                f"this request requires a call to the tool {_code(wanted)}; add a"
                f" {_code(TOOL_CALL_INFO)} block that calls it."
            )
        others = [call.name for call in calls if call.name != wanted]
        if others:
            problems.append(
                f"this request allows only the tool {_code(wanted)}, but the answer also"
                f" calls {_names(others)}."
            )
    if blocks > 1 and (request.legacy_functions or not request.parallel_tool_calls):
        reason = (
            f"it uses the legacy {_code('functions')} field"
            if request.legacy_functions
            else f"{_code('parallel_tool_calls')} is false"
        )
        problems.append(
            f"this request takes at most one tool call per answer ({reason}), but the answer"
            f" has {blocks}; keep one and send the others in later answers."
        )
    return problems


def _argument_problems(call: _Call, tool: ToolSpec) -> list[str]:
    """Validate a call's arguments against its tool's JSON Schema."""
    return _schema_problems(
        call.value,
        tool.parameters,
        subject=f"arguments of {_code(call.name)}",
        owner=f"the parameter schema of the tool {_code(call.name)}",
    )


# --- content --------------------------------------------------------------------------------


def _expects_json(request: ChatRequest) -> bool:
    """Return whether the content must be a JSON object: by response_format, or AutoGPT's way."""
    fmt = request.response_format
    return (fmt is not None and fmt.type in {"json_object", "json_schema"}) or _is_autogpt(request)


def _is_autogpt(request: ChatRequest) -> bool:
    """Return whether the agent asks, AutoGPT-style, for its step as JSON in the content."""
    # With tools, AutoGPT (OPENAI_FUNCTIONS) takes the command as a tool call instead.
    return not request.tools and uses_json_convention(request.system_prompt)


def _check_content(
    content: str | None, request: ChatRequest, problems: list[str]
) -> tuple[str | None, bool]:
    """Check content that must be JSON; return it unwrapped, and whether it was valid JSON."""
    if not _expects_json(request):
        return content, False
    if content is None:
        problems.append("this agent expects a JSON object as the answer, and the answer is empty.")
        return None, False
    fmt = request.response_format
    # Editors often fence JSON for readability; the agent wants the JSON itself.
    content = unwrap_json_fence(content)
    value, error = _parse_json(content)
    if error is not None:
        problems.append(
            f"this agent expects a JSON object as the answer, and it is not valid JSON:"
            f" {_code(error)}."
        )
        return content, False
    if not isinstance(value, dict):
        problems.append(f"this agent expects a JSON object as the answer, not {_json_type(value)}.")
        return content, False
    if fmt is not None and fmt.type == "json_schema" and fmt.schema is not None:
        problems += _schema_problems(
            value,
            fmt.schema,
            subject="the answer",
            owner=f"the response format {_code(fmt.name or 'schema')}",
        )
    if _is_autogpt(request):
        problems += _autogpt_problems(value, request.system_prompt)
    return content, True


def _cut_at_stop(
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
    if checked_json and _parse_json(cut)[1] is not None:
        problems.append(
            f"the answer contains the stop sequence {_code(_show(sequence))}, and cutting it there"
            " would leave invalid JSON; remove that text from the answer."
        )
    return cut or None


def _length_problems(content: str | None, request: ChatRequest) -> list[str]:
    """Refuse content longer than the agent's max_tokens allows, rather than cut it."""
    limit = request.max_tokens
    if limit is None or content is None or len(content) <= limit * CHARS_PER_TOKEN:
        return []
    return [
        f"the agent allows at most {limit} tokens (about {limit * CHARS_PER_TOKEN}"
        f" characters); shorten the answer, which has {len(content)} characters."
    ]


# --- AutoGPT's JSON-in-content convention ---------------------------------------------------


def _autogpt_problems(value: Mapping[str, Any], prompt: str) -> list[str]:
    """Check an AutoGPT step: the interface's keys, and a command it can run."""
    problems = [
        f"the answer lacks the key {_code(key)}, which the agent's"
        f" {_code('AssistantResponse')} interface declares."
        for key, required in _interface_keys(prompt)
        if required and key not in value
    ]
    slot = "use_tool" if "use_tool" in value else "command" if "command" in value else None
    if slot is None:
        return problems
    command = value[slot]
    if not isinstance(command, dict):
        problems.append(f"{_code(slot)} must be a JSON object, not {_json_type(command)}.")
        return problems
    name = command.get("name")
    # Before agpt 0.5 the legacy `command` carried its arguments as `args`.
    arguments_key = "args" if slot == "command" and "arguments" not in command else "arguments"
    arguments = command.get(arguments_key)
    if not isinstance(name, str):
        problems.append(f"{_code(slot + '.name')} must be a string, not {_json_type(name)}.")
    if not isinstance(arguments, dict):
        problems.append(
            f"{_code(f'{slot}.{arguments_key}')} must be a JSON object,"
            f" not {_json_type(arguments)}."
        )
    if not isinstance(name, str):
        return problems
    commands = _listed_commands(prompt)
    if commands and name not in commands:
        problems.append(
            f"{_code(f'{slot}.name')} is {_code(name)}, which is not one of the agent's"
            f" commands: {_names(list(commands))}."
        )
    elif name in commands and isinstance(arguments, dict):
        problems += [
            f"{_code(f'{slot}.{arguments_key}')} lacks {_code(param)}, which the command"
            f" {_code(name)} requires."
            for param in commands[name]
            if param not in arguments
        ]
    return problems


def _interface_keys(prompt: str) -> list[tuple[str, bool]]:
    """Return the top-level members of ``interface AssistantResponse``, and whether required."""
    # Read even when part of the interface is not: the members that are read still bind.
    shape = parse_response_interface(prompt)
    return [] if shape is None else [(member.name, member.required) for member in shape.members]


def _listed_commands(prompt: str) -> dict[str, tuple[str, ...]]:
    """Return the ``## Commands`` list: each command with its required parameters."""
    commands: dict[str, tuple[str, ...]] = {}
    for command in parse_commands(prompt):
        # AutoGPT never lists a name twice; where a prompt does, its first line decides.
        required = tuple(param.name for param in command.params if param.required)
        commands.setdefault(command.name, required)
    return commands


# --- JSON and JSON Schema -------------------------------------------------------------------


class _JSONValueError(ValueError):
    """Raised from the decoder hooks for JSON that Python accepts but a client may not."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Build an object, refusing duplicate keys: a reviewer and a client could read different
    values."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _JSONValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _finite(text: str) -> float:
    """Parse a JSON number, refusing one too large for a float (it would become Infinity)."""
    number = float(text)
    if number in {float("inf"), float("-inf")}:
        raise _JSONValueError(f"number {text[:20]} is too large")
    return number


def _no_constant(name: str) -> Any:
    """Refuse NaN and Infinity, which Python's decoder accepts and JSON does not have."""
    raise _JSONValueError(f"{name} is not valid JSON")


def _parse_json(text: str) -> tuple[Any, str | None]:
    """Parse strict JSON; return the value, or None and a message saying where it failed."""
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_float=_finite,
            parse_constant=_no_constant,
        )
    except json.JSONDecodeError as error:
        return None, f"{error.msg} at line {error.lineno}, column {error.colno}"
    except _JSONValueError as error:
        return None, str(error)
    except ValueError as error:  # e.g. an integer past Python's digit limit
        return None, str(error)
    except RecursionError:
        return None, "nested too deeply"
    return value, None


def _dump_json(value: Any) -> tuple[str, str | None]:
    """Serialise arguments as the agent receives them, or say why that cannot be done."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (ValueError, RecursionError):
        return "", "are nested too deeply"
    if not _encodable(text):
        return "", "hold an unpaired surrogate escape such as \\ud800; remove it"
    return text, None


def _encodable(text: str) -> bool:
    """Return whether text is valid Unicode, so UTF-8 responses can carry it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _schema_problems(
    instance: Any, schema: Mapping[str, Any], *, subject: str, owner: str
) -> list[str]:
    """Validate with JSON Schema 2020-12, one problem per error, each naming its JSON path."""
    schema = dict(schema)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        return [
            f"{owner} is not a valid JSON Schema ({_code(error.json_path)}:"
            f" {_code(error.message)}), so {subject} cannot be checked; the agent must fix it."
        ]
    # An empty registry: a `$ref` to a URL is reported, never fetched (this module does no I/O).
    validator = Draft202012Validator(schema, registry=Registry())
    try:
        errors = sorted(validator.iter_errors(instance), key=lambda e: (e.json_path, e.message))
    except (Unresolvable, re.error, RecursionError) as error:
        return [
            f"{owner} cannot be applied ({_code(type(error).__name__)}:"
            f" {_code(str(error))}), so {subject} cannot be checked; the agent must fix it."
        ]
    return [f"{subject} at {_code(e.json_path)}: {_code(e.message)}." for e in errors]


# --- quoting --------------------------------------------------------------------------------


def _code(value: str, limit: int = _VALUE_LIMIT) -> str:
    """Quote untrusted text as a one-line markdown code span, where nothing is rendered."""
    text = " ".join("".join(_inert(c) for c in value).split()) or "(empty)"
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    ticks = "`" * (longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _inert(char: str) -> str:
    """Turn line breaks and controls into spaces, and invisible or broken ones into U+FFFD."""
    category = unicodedata.category(char)
    if category in {"Cc", "Zl", "Zp"}:
        return " "
    # Format characters (bidi overrides, joiners) can disguise text; surrogates break UTF-8.
    if category in {"Cf", "Cs"}:
        return "\ufffd"
    return char


def _names(names: Sequence[str]) -> str:
    """Quote a list of names, shortened with a count when long."""
    if not names:
        return "(none)"
    shown: list[str] = []
    size = 0
    for name in dict.fromkeys(names):
        quoted = _code(name, limit=64)
        if shown and size + len(quoted) > _LIST_LIMIT:
            break
        shown.append(quoted)
        size += len(quoted) + 2
    rest = len(dict.fromkeys(names)) - len(shown)
    return ", ".join(shown) + (f" and {rest} more" if rest else "")


def _json_type(value: Any) -> str:
    """Name a decoded JSON value's type the way JSON Schema does."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _show(value: Any) -> str:
    """Return a short JSON rendering of a decoded value, for quoting in a problem."""
    try:
        return json.dumps(value, ensure_ascii=False)[:_VALUE_LIMIT]
    except (ValueError, RecursionError):
        return "?"
