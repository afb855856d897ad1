"""Split an answer into its content and its ``tool_call`` blocks, and read each block as a call.

Pure: no I/O. Blocks are CommonMark fences (``` or ~~~, at least three, closed by the same
character at least as long; read by :mod:`ticketing.render.fences`) whose info string is
exactly ``tool_call``. A block is read as ``{"name", "arguments"}`` or OpenAI's
``{"type": "function", "function": {...}}``; what cannot be read becomes a problem. A fence
labelled with a near miss (``tool_calls``, ``function_call`` ...) is refused too, so a typo
never turns an intended action into prose for the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ticketing.release.json_values import dump_json, parse_json
from ticketing.release.quoting import json_type, quote, quote_names, show_json
from ticketing.render.fences import FencedBlock, fenced_blocks
from ticketing.render.markdown import split_lines

__all__ = ["TOOL_CALL_INFO", "BlockCall", "SplitAnswer", "read_calls", "split_answer"]

TOOL_CALL_INFO = "tool_call"
# Info strings an editor plausibly meant as a tool call; they are refused rather than
# released as text, so a typo never turns an intended action into prose for the agent.
_NEAR_MISSES = frozenset({"tool_call", "tool_calls", "toolcall", "toolcalls", "function_call"})
_EXAMPLE_CALL = '{"name": "...", "arguments": {...}}'


@dataclass(frozen=True)
class SplitAnswer:
    """An answer split into the content and its ``tool_call`` blocks."""

    content: str | None
    blocks: tuple[FencedBlock, ...]


def split_answer(text: str, problems: list[str]) -> SplitAnswer:
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
                    f" {quote(block.info)}; a tool call must be labelled exactly"
                    f" {quote(TOOL_CALL_INFO)}, and any other label is sent as text."
                )
            continue
        if not block.closed:
            problems.append(
                f"the {quote(TOOL_CALL_INFO)} block opened on line {block.line + 1} is never"
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
    return SplitAnswer(content=content or None, blocks=tuple(blocks))


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


@dataclass(frozen=True)
class BlockCall:
    """A tool call read from a block: the name and the arguments re-serialised."""

    line: int
    name: str
    arguments: str
    value: dict[str, Any]


def read_calls(blocks: Sequence[FencedBlock], problems: list[str]) -> list[BlockCall]:
    """Read every closed ``tool_call`` block, noting each one that is not a valid call."""
    calls = []
    for block in blocks:
        if block.closed:
            call = _read_call(block, problems)
            if call is not None:
                calls.append(call)
    return calls


def _read_call(block: FencedBlock, problems: list[str]) -> BlockCall | None:
    """Read one block as a call, or note why it is not one."""
    where = f"the {quote(TOOL_CALL_INFO)} block on line {block.line + 1}"
    value, error = parse_json(block.body)
    if error is not None:
        problems.append(f"{where} is not valid JSON: {quote(error)}.")
        return None
    body = value
    allowed = {"name", "arguments"}
    if isinstance(value, dict) and "function" in value:
        # OpenAI's shape, as seen in a completion's `tool_calls` (its `id` is replaced).
        unknown = sorted(set(value) - {"type", "function", "id"})
        if value.get("type", "function") != "function":
            problems.append(
                f"{where} has {quote('type')} {quote(show_json(value.get('type')))}; a tool call"
                f" has type {quote('function')}."
            )
            return None
        if unknown:
            problems.append(
                f"{where} has keys {quote_names(unknown)} that a tool call does not take;"
                " remove them."
            )
            return None
        body = value["function"]
    if not isinstance(body, dict) or not isinstance(body.get("name"), str) or not body["name"]:
        problems.append(
            f"{where} must hold one JSON object with a string {quote('name')},"
            f" like {quote(_EXAMPLE_CALL)}."
        )
        return None
    name: str = body["name"]
    unknown = sorted(set(body) - allowed)
    if unknown:
        problems.append(
            f"{where} has keys {quote_names(unknown)} that a tool call does not take; only"
            f" {quote('name')} and {quote('arguments')} are sent, so remove the others."
        )
        return None
    arguments = body.get("arguments", {})
    if isinstance(arguments, str):
        # OpenAI sends arguments as a JSON string; accept an editor pasting that form.
        arguments, error = parse_json(arguments)
        if error is not None:
            problems.append(
                f"the arguments of {quote(name)} in {where} are a string that is not valid"
                f" JSON: {quote(error)}."
            )
            return None
    if not isinstance(arguments, dict):
        problems.append(
            f"the arguments of {quote(name)} in {where} must be a JSON object,"
            f" not {json_type(arguments)}."
        )
        return None
    serialised, error = dump_json(arguments)
    if error is not None:
        problems.append(f"the arguments of {quote(name)} in {where} {error}.")
        return None
    return BlockCall(line=block.line, name=name, arguments=serialised, value=arguments)
