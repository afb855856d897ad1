"""``system`` and ``messages`` in: content blocks flattened into a ticket's conversation.

Reference: https://docs.anthropic.com/en/api/messages (``messages``, ``system``). Text blocks
become text, an assistant's ``tool_use`` blocks its tool calls, and a user's ``tool_result``
blocks ``tool`` messages (before the user's text, as Anthropic orders them), so a follow-up
turn is the run's next step exactly as chat's tool messages are. ``thinking`` blocks echoed
back are dropped (people have no reasoning to show); images and documents are refused, as
chat refuses images: people are shown text only.

Claude Code opens a user turn with harness context (``<system-reminder>`` blocks: the date,
project instructions) before the person's words. Those blocks are moved after them, so the
ticket's title and its *Newest message* start with what the person asked; nothing is dropped.
"""

from __future__ import annotations

import json
from typing import Any

from proxy.errors import InvalidRequest
from proxy.wire.invalid import require
from ticketing.request import Message, ToolCall

# Roles a message may have: "system" mid-conversation is Claude Code's (a beta it sends).
_ROLES = ("user", "assistant", "system")
# Blocks an earlier assistant turn may carry that people neither see nor need.
_SKIPPED = frozenset({"thinking", "redacted_thinking"})
# Harness context Claude Code puts before the person's words, as whole text blocks.
_REMINDER = ("<system-reminder>", "</system-reminder>")
# Blocks that hold something other than text: refused, saying why.
_NOT_TEXT = frozenset({"image", "document", "search_result", "container_upload"})


def _refuse_block(kind: Any, param: str) -> None:
    if kind in _NOT_TEXT:
        raise InvalidRequest(
            f"{kind} blocks are not supported: ticketproxy shows people text only; send the "
            "content as text blocks",
            param=param,
            code="unsupported_content",
        )
    raise InvalidRequest(
        f"content blocks of type {kind!r} are not supported here: send text, tool_use "
        "(assistant) and tool_result (user) blocks",
        param=f"{param}.type",
        code="unsupported_block",
    )


def _text(block: dict[str, Any], param: str) -> str:
    require(isinstance(block.get("text"), str), "a text block needs a string 'text'", param)
    return str(block["text"])


def text_blocks(value: Any, param: str) -> str:
    """Return a string, or an array of text blocks joined by newlines, as one text."""
    if isinstance(value, str):
        return value
    require(isinstance(value, list), "must be a string or an array of text blocks", param)
    texts: list[str] = []
    for index, block in enumerate(value):
        where = f"{param}[{index}]"
        require(isinstance(block, dict), "each block must be an object", where, "invalid_type")
        if block.get("type") != "text":
            _refuse_block(block.get("type"), where)
        texts.append(_text(block, where))
    return "\n".join(texts)


def _tool_use(block: dict[str, Any], param: str) -> ToolCall:
    call_id, name, value = block.get("id"), block.get("name"), block.get("input", {})
    require(isinstance(call_id, str) and call_id != "", "a tool_use block needs an id", param)
    require(isinstance(name, str) and name != "", "a tool_use block needs a name", param)
    require(isinstance(value, dict), "a tool_use block's input must be an object", param)
    arguments = json.dumps(value, ensure_ascii=False)
    return ToolCall(id=str(call_id), name=str(name), arguments=arguments)


def _tool_result(block: dict[str, Any], param: str, issued: set[str]) -> Message:
    call_id = block.get("tool_use_id")
    require(isinstance(call_id, str) and call_id != "", "a tool_result needs tool_use_id", param)
    require(
        call_id in issued,
        f"no tool_use block in the previous assistant turn has id {call_id!r}: send the "
        "assistant message with that tool_use before this tool_result",
        f"{param}.tool_use_id",
        "unknown_tool_use_id",
    )
    content = text_blocks(block.get("content", ""), f"{param}.content")
    is_error = block.get("is_error", False)
    require(isinstance(is_error, bool), "is_error must be a boolean", f"{param}.is_error")
    if is_error:
        content = f"(the tool failed) {content}"
    return Message(role="tool", content=content, tool_call_id=str(call_id))


def _assistant(content: Any, param: str) -> Message | None:
    if isinstance(content, str):
        return Message(role="assistant", content=content)
    require(isinstance(content, list), "content must be a string or an array of blocks", param)
    texts: list[str] = []
    calls: list[ToolCall] = []
    for index, block in enumerate(content):
        where = f"{param}[{index}]"
        require(isinstance(block, dict), "each block must be an object", where, "invalid_type")
        kind = block.get("type")
        if kind == "text":
            texts.append(_text(block, where))
        elif kind == "tool_use":
            calls.append(_tool_use(block, where))
        elif kind not in _SKIPPED:
            _refuse_block(kind, where)
    if not texts and not calls:
        return None
    return Message(role="assistant", content="\n".join(texts), tool_calls=tuple(calls))


def _user(content: Any, param: str, issued: set[str]) -> list[Message]:
    if isinstance(content, str):
        return [Message(role="user", content=content)]
    require(isinstance(content, list), "content must be a string or an array of blocks", param)
    results: list[Message] = []
    texts: list[str] = []
    reminders: list[str] = []
    for index, block in enumerate(content):
        where = f"{param}[{index}]"
        require(isinstance(block, dict), "each block must be an object", where, "invalid_type")
        kind = block.get("type")
        if kind == "text":
            text = _text(block, where)
            stripped = text.strip()
            reminder = stripped.startswith(_REMINDER[0]) and stripped.endswith(_REMINDER[1])
            (reminders if reminder else texts).append(text)
        elif kind == "tool_result":
            results.append(_tool_result(block, where, issued))
        else:
            _refuse_block(kind, where)
    if texts or reminders or not results:
        results.append(Message(role="user", content="\n".join(texts + reminders)))
    return results


def parse_conversation(value: Any) -> list[Message]:
    """Return ``messages`` as a ticket's conversation, refusing what people cannot be shown."""
    require(isinstance(value, list), "messages must be an array", "messages", "missing")
    require(len(value) > 0, "messages must not be empty", "messages", "empty_array")
    conversation: list[Message] = []
    issued: set[str] = set()
    for index, message in enumerate(value):
        param = f"messages[{index}]"
        require(isinstance(message, dict), "each message must be an object", param, "invalid_type")
        role = message.get("role")
        require(role in _ROLES, "role must be user or assistant", f"{param}.role")
        content = message.get("content")
        where = f"{param}.content"
        if role == "assistant":
            turn = _assistant(content, where)
            # A tool_result answers a tool_use of the assistant turn just before it.
            issued = {call.id for call in turn.tool_calls} if turn is not None else set()
            if turn is not None:
                conversation.append(turn)
        elif role == "user":
            conversation += _user(content, where, issued)
        else:
            conversation.append(Message(role="system", content=text_blocks(content, where)))
    return conversation
