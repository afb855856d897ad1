"""The skeleton of AutoGPT's ``AssistantResponse`` interface, and the commands its answer names.

Pure: no I/O, no clock. An AutoGPT-style system prompt (``interface AssistantResponse {...}``
and ``## Commands``, read by :mod:`ticketing.render.autogpt_interface` and
:mod:`ticketing.render.autogpt_prompt`) gives a JSON skeleton of the interface, its ``//``
comments as placeholders, but only when all of the interface could be read: no template
rather than a wrong one. Where the answer names a command (``use_tool.name``, or the older
``command.name``), the placeholder lists the prompt's commands.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ticketing.render.autogpt_interface import (
    ArrayType,
    LiteralType,
    Member,
    NamedType,
    ObjectType,
    TypeShape,
    UnionType,
    parse_response_interface,
    uses_json_convention,
)
from ticketing.render.autogpt_prompt import AutoGPTCommand, parse_commands
from ticketing.render.schema_skeleton import PLACEHOLDER
from ticketing.request import ChatRequest

__all__ = ["command_choice", "interface_skeleton", "uses_function_commands"]

_MAX_COMMANDS = 64  # command names listed in a placeholder

# Keys whose `name` member is the command to run, in AutoGPT's current and older replies.
_COMMAND_KEYS = frozenset({"use_tool", "command"})


def interface_skeleton(request: ChatRequest) -> dict[str, Any] | None:
    """Return the skeleton of the prompt's ``interface AssistantResponse``, if all of it reads."""
    prompt = request.system_prompt
    shape = parse_response_interface(prompt)
    if shape is None or not shape.complete:
        return None  # no template rather than a wrong one
    names = [c.name for c in parse_commands(prompt)]
    return _members_skeleton(shape.members, parent=None, commands=names)


def uses_function_commands(request: ChatRequest) -> bool:
    """Return whether the agent wants JSON thoughts as text and its command as a tool call.

    AutoGPT with ``OPENAI_FUNCTIONS=True`` (``tests/samples/autogpt/run2_functions``) keeps
    its JSON convention for the thoughts and offers its commands as tools: it parses both,
    and runs the first tool call only.
    """
    return (
        bool(request.tools)
        and request.tool_choice != "none"
        and uses_json_convention(request.system_prompt)
    )


def command_choice(request: ChatRequest) -> tuple[AutoGPTCommand, ...]:
    """Return the prompt's commands when the answer names one (AutoGPT without tools)."""
    if request.tools:
        return ()  # the agent calls tools instead: its prompt's list only mirrors them
    skeleton = interface_skeleton(request)
    if skeleton is None or not _COMMAND_KEYS & skeleton.keys():
        return ()
    return parse_commands(request.system_prompt)


def _members_skeleton(
    members: Sequence[Member], *, parent: str | None, commands: Sequence[str]
) -> dict[str, Any]:
    """Return a JSON object with one placeholder value per member, its comments as the hint."""
    skeleton: dict[str, Any] = {}
    for member in members:
        hint = " ".join(member.comments) or None
        if member.name == "name" and parent in _COMMAND_KEYS and commands:
            shown = list(commands[:_MAX_COMMANDS])
            more = ", …" if len(commands) > _MAX_COMMANDS else ""
            hint = "one of: " + ", ".join(shown) + more
        skeleton[member.name] = _type_skeleton(
            member.type, name=member.name, hint=hint, commands=commands
        )
    return skeleton


def _type_skeleton(
    shape: TypeShape | None, *, name: str, hint: str | None, commands: Sequence[str]
) -> Any:
    """Return the placeholder for a member's type: the first useful option of a union."""
    if isinstance(shape, UnionType):
        values = (_type_skeleton(o, name=name, hint=hint, commands=commands) for o in shape.options)
        return next((v for v in values if v is not None), None)
    if isinstance(shape, ArrayType):
        return [_type_skeleton(shape.element, name=name, hint=hint, commands=commands)]
    if isinstance(shape, ObjectType):
        # Nested members take their own comments; `name` makes `use_tool.name` a choice.
        return _members_skeleton(shape.members, parent=name, commands=commands)
    if isinstance(shape, LiteralType):
        return shape.value
    if isinstance(shape, NamedType):
        arguments = [
            _type_skeleton(a, name=name, hint=hint, commands=commands) for a in shape.arguments
        ]
        return _named_type(shape.name, arguments, hint)
    return hint or PLACEHOLDER  # unreadable: only in an incomplete shape, never templated


def _named_type(name: str, arguments: Sequence[Any], hint: str | None) -> Any:
    """Return the skeleton of a named TypeScript type such as ``string`` or ``Array<T>``."""
    simple: dict[str, Any] = {"number": 0, "boolean": False, "true": True, "false": False}
    if name in simple:
        return simple[name]
    if name in {"null", "undefined", "void", "never"}:
        return None
    if name in {"Array", "ReadonlyArray"}:
        return [arguments[0] if arguments else hint or PLACEHOLDER]
    if name in {"Record", "Map", "object", "Object"}:
        return {}
    return hint or PLACEHOLDER  # string, any, unknown, and types defined elsewhere
