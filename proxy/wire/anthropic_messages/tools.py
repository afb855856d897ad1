"""``tools``, ``tool_choice`` and ``output_config`` in, as chat's tools and response format.

Reference: https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use.
A custom tool (``{"name", "description", "input_schema"}``, ``type`` absent or ``custom``)
is a function whose parameters are its ``input_schema``; the checks before release are then
chat's. Server tools (web search, code execution, bash, text editor, computer use, …) run on
Anthropic's servers and are refused, saying why. Claude Code offers its own tools (Bash,
Read, Edit, WebSearch, …) as custom tools, so its turns are never refused for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proxy.errors import InvalidRequest
from proxy.wire.invalid import require

# tool_choice types → chat's tool_choice strings ("tool" names one function instead).
_CHOICES = {"auto": "auto", "any": "required", "none": "none"}
# What a custom tool carries besides its function (prompt caching, SDK hints): not shown.
_FUNCTION_FIELDS = ("name", "description", "strict")


def _server_tool(kind: Any, param: str) -> InvalidRequest:
    return InvalidRequest(
        f"the server tool {kind!r} runs on Anthropic's servers, and the people answering this "
        "ticketproxy cannot run it for you: offer it as a custom tool "
        '({"name": ..., "description": ..., "input_schema": ...}) that your agent runs',
        param=param,
        code="unsupported_tool",
    )


def _function(tool: Any, param: str) -> dict[str, Any]:
    require(isinstance(tool, dict), "each tool must be an object", param, "invalid_type")
    kind = tool.get("type")
    if kind not in (None, "custom"):
        raise _server_tool(kind, f"{param}.type")
    schema = tool.get("input_schema")
    require(
        isinstance(schema, dict),
        "a custom tool needs input_schema, a JSON Schema object",
        f"{param}.input_schema",
        "missing",
    )
    function = {name: tool[name] for name in _FUNCTION_FIELDS if name in tool}
    function["parameters"] = schema
    return {"type": "function", "function": function}


def _choice(body: Mapping[str, Any]) -> tuple[Any, bool]:
    """Return chat's ``tool_choice`` and whether parallel tool calls are allowed."""
    choice = body.get("tool_choice")
    if choice is None:
        return None, True
    require(isinstance(choice, dict), "tool_choice must be an object", "tool_choice")
    kind = choice.get("type")
    parallel = not choice.get("disable_parallel_tool_use", False)
    if kind == "tool":
        name = choice.get("name")
        require(isinstance(name, str), "tool_choice of type tool needs a name", "tool_choice")
        return {"type": "function", "function": {"name": name}}, parallel
    require(
        kind in _CHOICES,
        "tool_choice.type must be auto, any, tool or none",
        "tool_choice.type",
    )
    return _CHOICES[kind], parallel


def _output_format(body: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``output_config.format`` (structured outputs) as chat's ``response_format``."""
    config = body.get("output_config")
    if config is None:
        return {}
    require(isinstance(config, dict), "output_config must be an object", "output_config")
    fmt = config.get("format")
    if fmt is None:
        return {}
    param = "output_config.format"
    require(isinstance(fmt, dict), "output_config.format must be an object", param)
    require(fmt.get("type") == "json_schema", "format.type must be json_schema", f"{param}.type")
    spec = {"name": "output", "schema": fmt.get("schema"), "strict": True}
    return {"response_format": {"type": "json_schema", "json_schema": spec}}


def chat_tools(body: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """Return the body's tools, tool choice and output format in chat's form, and parallelism."""
    raw = body.get("tools")
    require(raw is None or isinstance(raw, list), "tools must be an array", "tools", "invalid_type")
    if body.get("mcp_servers"):
        raise InvalidRequest(
            "MCP servers named in the request are called by Anthropic's servers, which "
            "ticketproxy is not: connect them to your agent and offer their tools as custom tools",
            param="mcp_servers",
            code="unsupported_tool",
        )
    tools = [_function(tool, f"tools[{index}]") for index, tool in enumerate(raw or [])]
    choice, parallel = _choice(body)
    return {"tools": tools, "tool_choice": choice, **_output_format(body)}, parallel
