"""Answer templates: what a valid answer to a request looks like, for the editor to copy.

Pure: no I/O, no clock. A template is derived from what the request asks for:

- ``response_format`` ``json_schema``: a JSON skeleton of the schema
  (:mod:`ticketing.render.schema_skeleton`); ``json_object``: ``{}``;
- an AutoGPT-style system prompt: a JSON skeleton of its ``interface AssistantResponse``,
  when all of the interface could be read (:mod:`ticketing.render.autogpt_skeleton`);
- ``tools`` (unless ``tool_choice`` is ``none``): a ``tool_call`` block for the first tool,
  or for the function ``tool_choice`` names. The table of every tool is
  :mod:`ticketing.render.tool_table`'s.

Everything here comes from the agent and is untrusted. The template is raw text that the
renderer fences, and the ``tool_call`` block's fence is longer than any backtick run inside.
Notes are fixed sentences that hold no agent text.
"""

from __future__ import annotations

from typing import Any

from ticketing.render.autogpt_skeleton import (
    command_choice,
    interface_skeleton,
    uses_function_commands,
)
from ticketing.render.fences import backtick_fence
from ticketing.render.schema_skeleton import PLACEHOLDER, format_skeleton, schema_skeleton
from ticketing.request import ChatRequest, ToolSpec

__all__ = ["FUNCTION_COMMANDS_NOTE", "answer_notes", "answer_template", "offers_tools"]


def answer_template(request: ChatRequest) -> str | None:
    """Return the template text an editor copies and edits, or None for plain chat."""
    parts = [part for part in (_content_template(request), _tool_call_template(request)) if part]
    return "\n\n".join(parts) if parts else None


def answer_notes(request: ChatRequest, *, table: str = "the table below") -> tuple[str, ...]:
    """Return the markdown sentences that explain the template; they hold no agent text.

    ``table`` says where the table of tools or commands is, as the notes refer to it.
    """
    notes: list[str] = []
    fmt = request.response_format
    if fmt is not None and fmt.type == "json_schema" and fmt.schema is not None:
        notes.append(
            "The agent asked for JSON matching its schema. The template holds every property,"
            f" with `{PLACEHOLDER}` for text, `0` for numbers, `false` for yes/no and the first"
            " allowed value for a choice: replace them and keep each value's type; delete"
            " optional properties you do not need."
        )
    elif fmt is not None and fmt.type in {"json_object", "json_schema"}:
        notes.append(
            "The agent asked for a JSON object, so the whole answer must be one: `{}` is the"
            " smallest, put your keys in it."
        )
    elif interface_skeleton(request) is not None:
        notes.append(
            "The agent reads its content as this JSON object: replace each placeholder with your"
            " own words and keep every key."
        )
        if command_choice(request):
            notes.append(
                f"The command name must be one of the commands in {table}, and its"
                " arguments are that command's parameters."
            )
    if offers_tools(request):
        notes.extend(_tool_notes(request, table))
    return tuple(notes)


def _content_template(request: ChatRequest) -> str | None:
    """Return the JSON content skeleton the request asks for, pretty-printed, or None."""
    fmt = request.response_format
    if fmt is not None and fmt.type == "json_schema" and fmt.schema is not None:
        return format_skeleton(schema_skeleton(fmt.schema))
    if fmt is not None and fmt.type in {"json_object", "json_schema"}:
        return "{}"
    skeleton = interface_skeleton(request)
    return None if skeleton is None else format_skeleton(skeleton)


def offers_tools(request: ChatRequest) -> bool:
    """Return whether the editor may answer with a tool call."""
    return bool(request.tools) and request.tool_choice != "none"


def _chosen_tool(request: ChatRequest) -> ToolSpec | str:
    """Return the tool the template calls: the one ``tool_choice`` names, else the first."""
    if request.tool_choice.startswith("function:"):
        name = request.tool_choice.removeprefix("function:")
        return next((t for t in request.tools if t.name == name), name)
    return request.tools[0]


def _tool_call_template(request: ChatRequest) -> str | None:
    """Return a ``tool_call`` block calling the chosen tool with skeleton arguments."""
    if not offers_tools(request):
        return None
    tool = _chosen_tool(request)
    if isinstance(tool, str):
        call: dict[str, Any] = {"name": tool, "arguments": {}}
    else:
        arguments = schema_skeleton(tool.parameters)
        call = {"name": tool.name, "arguments": arguments if isinstance(arguments, dict) else {}}
    text = format_skeleton(call)
    # The block must not be closed early by a backtick run in a name or enum value.
    fence = backtick_fence(text)
    return f"{fence}tool_call\n{text}\n{fence}"


# AutoGPT with OPENAI_FUNCTIONS parses both parts and runs the first call only.
FUNCTION_COMMANDS_NOTE = (
    "This agent needs both parts: the JSON object above as text (its thoughts), and exactly one"
    " `tool_call` block, the command it runs next. An answer with only text, only the block,"
    " or several blocks is held back."
)


def _tool_notes(request: ChatRequest, table: str) -> list[str]:
    """Return the notes on how to call tools under this request's tool_choice."""
    notes = []
    if request.tool_choice.startswith("function:"):
        notes.append(
            "The agent requires a call to the function in the `tool_call` block: keep its name"
            " and fill in its arguments."
        )
    else:
        notes.append(
            "The `tool_call` block calls the first tool offered: to call another, change the"
            f" name and arguments to one from {table}."
        )
    if uses_function_commands(request):
        return [*notes, FUNCTION_COMMANDS_NOTE]
    if request.parallel_tool_calls and not request.legacy_functions:
        notes.append(
            "To make several calls, write one `tool_call` block per call, one after another."
            " Text outside the blocks goes to the agent beside the calls, as the message content."
        )
    else:
        notes.append(
            "The agent accepts at most one call: write a single `tool_call` block. Text outside"
            " it goes to the agent beside the call, as the message content."
        )
    if request.tool_choice == "required":
        notes.append(
            "A tool call is required: the answer must hold at least one `tool_call` block."
        )
    elif request.tool_choice == "auto":
        notes.append("A tool call is optional: delete the block to answer with text only.")
    return notes
