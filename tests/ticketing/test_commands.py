"""Tests for ticketing.commands: reading the commands an answer would make the agent run."""

from __future__ import annotations

import json
from pathlib import Path

from auth.review_decision import Command
from tests.helpers.autogpt_replies import autogpt
from ticketing.commands import commands_in

SAMPLES = Path(__file__).parents[1] / "samples" / "autogpt"


def test_tool_calls_are_read_with_their_json_arguments() -> None:
    """Each (name, JSON arguments) pair becomes a tool_call command with parsed arguments."""
    commands = commands_in(None, [("execute_shell", '{"command": "ls -la"}')])
    assert commands == (Command("execute_shell", {"command": "ls -la"}, "tool_call"),)


def test_autogpt_use_tool_in_the_content_is_a_command() -> None:
    """AutoGPT 0.5's JSON reply names its command under use_tool."""
    [command] = commands_in(autogpt("write_file", {"filename": "a.txt"}), ())
    assert (command.name, command.arguments, command.source) == (
        "write_file",
        {"filename": "a.txt"},
        "autogpt",
    )


def test_legacy_autogpt_command_with_args_is_a_command() -> None:
    """The older {"command": {"name", "args"}} shape is read too."""
    [command] = commands_in(autogpt("execute_shell", {"command_line": "id"}, legacy=True), ())
    assert command.name == "execute_shell"
    assert command.arguments == {"command_line": "id"}


def test_command_in_a_json_code_fence_surrounded_by_prose_is_found() -> None:
    """Agents also look inside a fenced block, so the policy must as well."""
    content = f"Here is my plan.\n\n```json\n{autogpt('execute_python_code', {'code': '1'})}\n```\n"
    assert [c.name for c in commands_in(content, ())] == ["execute_python_code"]


def test_command_in_braces_inside_prose_is_found() -> None:
    """A JSON object embedded in prose, as AutoGPT's lenient parser finds it, counts."""
    content = f"Sure! {autogpt('web_search', {'query': 'x'})} Hope that helps."
    assert [c.name for c in commands_in(content, ())] == ["web_search"]


def test_tool_call_block_in_raw_answer_text_is_a_command() -> None:
    """A ```tool_call block, as an editor writes it, is read from unreleased answer text."""
    text = '```tool_call\n{"name": "execute_shell", "arguments": {"command": "ls"}}\n```'
    assert commands_in(text, ()) == (Command("execute_shell", {"command": "ls"}, "tool_call"),)


def test_prose_and_broken_json_hold_no_command() -> None:
    """Content that is not JSON is tolerated and holds no command."""
    assert commands_in("Just run the tests { and see", ()) == ()
    assert commands_in("", ()) == ()
    assert commands_in(None, ()) == ()
    assert commands_in('{"thoughts": {"text": "no command"}}', ()) == ()


def test_repeated_use_tool_key_yields_every_command() -> None:
    """Parsers disagree on which duplicate key wins, so every one is a command."""
    content = (
        '{"use_tool": {"name": "finish", "arguments": {}},'
        ' "use_tool": {"name": "execute_shell", "arguments": {"command": "rm -rf /"}}}'
    )
    assert [c.name for c in commands_in(content, ())] == ["finish", "execute_shell"]


def test_unreadable_tool_call_arguments_are_marked_unreadable() -> None:
    """Arguments that are not a JSON object are kept as unreadable, never silently empty."""
    [command] = commands_in(None, [("write_file", "not json")])
    assert command.readable is False
    assert command.arguments == {}


def test_twice_encoded_arguments_are_decoded() -> None:
    """Arguments sent as a JSON string holding JSON are read as the object inside."""
    [command] = commands_in(None, [("write_file", json.dumps('{"filename": "/etc/x"}'))])
    assert command.arguments == {"filename": "/etc/x"}


def test_captured_autogpt_reply_holds_its_write_file_command() -> None:
    """The assistant reply AutoGPT echoed in a real captured request is read as one command."""
    recorded = json.loads(
        (SAMPLES / "run1_default" / "006_POST_v1_chat_completions.json").read_text()
    )
    reply = next(m for m in recorded["body"]["messages"] if m["role"] == "assistant")
    assert commands_in(reply["content"], ()) == (
        Command("write_file", {"filename": "hello.txt", "contents": "hello from stub"}, "autogpt"),
    )
