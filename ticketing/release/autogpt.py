"""Check an AutoGPT step: the keys its interface declares, and a command it can run.

Pure: no I/O. AutoGPT wants each step as one JSON object in the content, shaped by the
``interface AssistantResponse`` of its system prompt
(:mod:`ticketing.render.autogpt_interface`), naming a command of its ``## Commands`` list
(:mod:`ticketing.render.autogpt_prompt`) with that command's required parameters. With
``OPENAI_FUNCTIONS=True`` the command is a tool call instead, and AutoGPT runs the first one:
a step without one makes it ask again, three times, then stop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ticketing.release.blocks import TOOL_CALL_INFO
from ticketing.release.quoting import json_type, quote, quote_names
from ticketing.render.autogpt_interface import parse_response_interface
from ticketing.render.autogpt_prompt import parse_commands

__all__ = ["autogpt_problems", "function_command_problems"]


def autogpt_problems(value: Mapping[str, Any], prompt: str) -> list[str]:
    """Check an AutoGPT step: the interface's keys, and a command it can run."""
    problems = [
        f"the answer lacks the key {quote(key)}, which the agent's"
        f" {quote('AssistantResponse')} interface declares."
        for key, required in _interface_keys(prompt)
        if required and key not in value
    ]
    slot = "use_tool" if "use_tool" in value else "command" if "command" in value else None
    if slot is None:
        return problems
    command = value[slot]
    if not isinstance(command, dict):
        problems.append(f"{quote(slot)} must be a JSON object, not {json_type(command)}.")
        return problems
    name = command.get("name")
    # Before agpt 0.5 the legacy `command` carried its arguments as `args`.
    arguments_key = "args" if slot == "command" and "arguments" not in command else "arguments"
    arguments = command.get(arguments_key)
    if not isinstance(name, str):
        problems.append(f"{quote(slot + '.name')} must be a string, not {json_type(name)}.")
    if not isinstance(arguments, dict):
        problems.append(
            f"{quote(f'{slot}.{arguments_key}')} must be a JSON object, not {json_type(arguments)}."
        )
    if not isinstance(name, str):
        return problems
    commands = _listed_commands(prompt)
    if commands and name not in commands:
        problems.append(
            f"{quote(f'{slot}.name')} is {quote(name)}, which is not one of the agent's"
            f" commands: {quote_names(list(commands))}."
        )
    elif name in commands and isinstance(arguments, dict):
        problems += [
            f"{quote(f'{slot}.{arguments_key}')} lacks {quote(param)}, which the command"
            f" {quote(name)} requires."
            for param in commands[name]
            if param not in arguments
        ]
    return problems


def function_command_problems(blocks: int) -> list[str]:
    """Check an AutoGPT functions-mode step holds exactly one tool call: the command it runs."""
    agent = f"this agent (AutoGPT with {quote('OPENAI_FUNCTIONS')})"
    if not blocks:
        return [
            f"{agent} runs its next command from a tool call, and the answer has none; add one"
            f" {quote(TOOL_CALL_INFO)} block below the JSON object, calling one of its tools."
        ]
    if blocks > 1:
        return [
            f"{agent} runs only the first tool call of an answer, and the answer has {blocks};"
            f" keep one {quote(TOOL_CALL_INFO)} block and send the others in later answers."
        ]
    return []


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
