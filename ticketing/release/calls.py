"""Check the tool calls an answer makes against what the request offers and allows.

Pure: no I/O. Each call must name an offered tool and match its parameter schema
(JSON Schema 2020-12); together the calls must obey ``tool_choice``, ``parallel_tool_calls``
and the legacy ``functions`` field's one call.
"""

from __future__ import annotations

from collections.abc import Sequence

from ticketing.release.blocks import TOOL_CALL_INFO, BlockCall
from ticketing.release.content import expects_json
from ticketing.release.quoting import quote, quote_names
from ticketing.release.schemas import schema_problems
from ticketing.request import ChatRequest, ToolSpec

__all__ = ["call_problems"]


def call_problems(calls: Sequence[BlockCall], blocks: int, request: ChatRequest) -> list[str]:
    """Check the calls against the tools, tool_choice and the one-call limits."""
    # Counts use every block, readable or not: an editor who wrote a broken block meant a
    # call, and hearing "a call is required" on top of the JSON error would only confuse.
    if blocks and not request.tools:
        if expects_json(request):
            return ["this request offered no tools; answer with text: the JSON object it asks for."]
        return ["this request offered no tools; answer with text."]
    problems: list[str] = []
    offered = {tool.name: tool for tool in request.tools}
    for call in calls:
        tool = offered.get(call.name)
        if tool is None:
            problems.append(
                f"the tool {quote(call.name)} (line {call.line + 1}) is not offered by this"
                f" request; the offered tools are {quote_names(list(offered))}."
            )
        else:
            problems += _argument_problems(call, tool)
    choice = request.tool_choice
    if choice == "none" and blocks:
        problems.append(
            f"this request set {quote('tool_choice')} to {quote('none')}, so it takes no"
            " tool call; answer with text."
        )
    elif choice == "required" and not blocks:
        problems.append(
            f"this request requires a tool call ({quote('tool_choice')} is"
            f" {quote('required')}); add a {quote(TOOL_CALL_INFO)} block."
        )
    elif choice.startswith("function:"):
        wanted = choice.removeprefix("function:")
        if not blocks:
            problems.append(
                f"this request requires a call to the tool {quote(wanted)}; add a"
                f" {quote(TOOL_CALL_INFO)} block that calls it."
            )
        others = [call.name for call in calls if call.name != wanted]
        if others:
            problems.append(
                f"this request allows only the tool {quote(wanted)}, but the answer also"
                f" calls {quote_names(others)}."
            )
    if blocks > 1 and (request.legacy_functions or not request.parallel_tool_calls):
        reason = (
            f"it uses the legacy {quote('functions')} field"
            if request.legacy_functions
            else f"{quote('parallel_tool_calls')} is false"
        )
        problems.append(
            f"this request takes at most one tool call per answer ({reason}), but the answer"
            f" has {blocks}; keep one and send the others in later answers."
        )
    return problems


def _argument_problems(call: BlockCall, tool: ToolSpec) -> list[str]:
    """Validate a call's arguments against its tool's JSON Schema."""
    return schema_problems(
        call.value,
        tool.parameters,
        subject=f"arguments of {quote(call.name)}",
        owner=f"the parameter schema of the tool {quote(call.name)}",
    )
