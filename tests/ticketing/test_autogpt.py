"""Tests for ticketing.render.autogpt: reading AutoGPT's command list and response interface."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ticketing.render.autogpt_interface import (
    ArrayType,
    LiteralType,
    Member,
    NamedType,
    ObjectType,
    UnionType,
    parse_response_interface,
    uses_json_convention,
)
from ticketing.render.autogpt_prompt import AutoGPTCommand, AutoGPTParam, parse_commands

SAMPLES = Path(__file__).parent.parent / "samples" / "autogpt"
STRING = NamedType("string")


def system_prompt(run: str) -> str:
    """Return the system prompt of a captured AutoGPT agent step."""
    capture = json.loads((SAMPLES / run / "004_POST_v1_chat_completions.json").read_text())
    content: str = capture["body"]["messages"][0]["content"]
    return content


def commands(listing: str) -> tuple[AutoGPTCommand, ...]:
    """Parse a prompt whose ``## Commands`` section holds ``listing``."""
    return parse_commands(f"Intro\n\n## Commands\nThese are the commands:\n{listing}\n\n## Next\n")


# --- commands -------------------------------------------------------------------------------


def test_default_sample_lists_eleven_commands_with_descriptions_and_params() -> None:
    """run1's list is read in order, with fmt_line's ". Params:" split off the description."""
    found = parse_commands(system_prompt("run1_default"))
    assert [c.name for c in found][:3] == ["open_file", "open_folder", "finish"]
    assert len(found) == 11
    write = next(c for c in found if c.name == "write_file")
    assert write == AutoGPTCommand(
        name="write_file",
        description=(
            "Write a file, creating it if necessary. If the file exists, it is overwritten."
        ),
        params=(
            AutoGPTParam("filename", "string", required=True),
            AutoGPTParam("contents", "string", required=True),
        ),
    )


def test_question_mark_marks_a_parameter_as_optional() -> None:
    """``args?: Array<string>`` is an optional parameter whose type is kept as written."""
    (run,) = commands(
        "5. execute_python_file: Run it. Params: (filename: string, args?: Array<string>)"
    )
    assert run.params == (
        AutoGPTParam("filename", "string", required=True),
        AutoGPTParam("args", "Array<string>", required=False),
    )


def test_commas_inside_brackets_do_not_split_parameters() -> None:
    """A type such as ``Record<string, number>`` or ``{a: string, b: number}`` stays whole."""
    (command,) = commands(
        "1. go: Go. Params: (opts: Record<string, number>, at?: {a: string, b: number})"
    )
    assert [(p.name, p.type) for p in command.params] == [
        ("opts", "Record<string, number>"),
        ("at", "{a: string, b: number}"),
    ]


def test_the_last_params_list_on_a_line_is_the_real_one() -> None:
    """A description that itself says "Params: (...)" does not hide the list fmt_line appends."""
    (command,) = commands("1. say: Use Params: (x) wisely. Params: (text: string)")
    assert command.description == "Use Params: (x) wisely"
    assert command.params == (AutoGPTParam("text", "string", required=True),)


def test_command_without_params_keeps_its_whole_description() -> None:
    """A line with no ``Params: (...)`` at its end is a command with no parameters."""
    (command,) = commands("1. stop: Stop now. Params: (unclosed")
    assert command == AutoGPTCommand("stop", "Stop now. Params: (unclosed", ())


def test_parts_that_are_not_name_and_type_are_not_parameters() -> None:
    """Positional types and blank parts are left out; hyphenated names are kept."""
    (command,) = commands("1. say: Say. Params: (string, , the-text: string, bare:)")
    assert command.params == (
        AutoGPTParam("the-text", "string", required=True),
        AutoGPTParam("bare", "", required=True),
    )


def test_list_ends_at_the_next_heading_and_skips_prose() -> None:
    """Only numbered lines between ``## Commands`` and the next heading are commands."""
    found = parse_commands(
        "## Commands\nUse these:\n1. a: A. Params: ()\n- not numbered: x\n2. b : B\n"
        "# Other\n3. c: C"
    )
    assert [(c.name, c.description) for c in found] == [("a", "A"), ("b", "B")]


@pytest.mark.parametrize("heading", ["## Commands", "### commands", "##Commands", "# COMMANDS  "])
def test_commands_heading_is_found_in_any_case_with_crlf_lines(heading: str) -> None:
    """The heading may be any level and case; CRLF line ends are CommonMark line ends."""
    found = parse_commands(f"{heading}\r\n1. a: A. Params: (x: string)\r\n")
    assert found == (AutoGPTCommand("a", "A", (AutoGPTParam("x", "string", required=True),)),)


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("1. web.search: S", "web.search"),
        ("1. 2fa-code: S", "2fa-code"),
        ("1. sagé : S", "sagé"),
        ("1. .hidden: S", None),
        ("1 say: S", None),
    ],
)
def test_command_names_are_word_characters_dots_and_hyphens(line: str, name: str | None) -> None:
    """A name starts with a word character; a line without "N." is not a command."""
    assert [c.name for c in commands(line)] == ([name] if name else [])


def test_prompt_without_a_commands_heading_has_no_commands() -> None:
    """A numbered list under another heading is not a command list."""
    assert parse_commands("## Constraints\n1. a: b. Params: (x: string)") == ()


def test_a_command_listed_twice_is_kept_twice_in_order() -> None:
    """The parser reports every line; which one counts is for the caller to say."""
    found = commands("1. say: A. Params: (a: string)\n2. say: B. Params: (b: string)")
    assert [c.description for c in found] == ["A", "B"]


# --- the interface --------------------------------------------------------------------------


def test_default_sample_interface_is_read_with_nested_members_types_and_comments() -> None:
    """run1's interface reads whole: thoughts with commented members, and use_tool."""
    shape = parse_response_interface(system_prompt("run1_default"))
    assert shape is not None
    assert shape.complete
    thoughts, use_tool = shape.members
    assert (thoughts.name, use_tool.name) == ("thoughts", "use_tool")
    assert isinstance(thoughts.type, ObjectType)
    plan = next(m for m in thoughts.type.members if m.name == "plan")
    assert plan == Member(
        "plan",
        NamedType("Array", (STRING,)),
        required=True,
        comments=("Short list that conveys the long-term plan",),
    )
    assert use_tool.type == ObjectType(
        (
            Member("name", STRING, required=True),
            Member("arguments", NamedType("Record", (STRING, NamedType("any"))), required=True),
        )
    )


def test_unions_arrays_literals_optional_and_quoted_members_are_read() -> None:
    """Each TypeScript form AutoGPT-like prompts use becomes its own type shape."""
    shape = parse_response_interface(
        "interface AssistantResponse {\n"
        "  /* skipped */\n"
        "  mood: 'happy' | \"sad\";\n"
        "  steps?: (string | null)[];\n"
        "  // How sure\n"
        "  // you are\n"
        "  confidence: 0.5,\n"
        '  "quoted key": boolean\n'
        "}"
    )
    assert shape is not None
    assert shape.complete
    assert shape.members == (
        Member("mood", UnionType((LiteralType("happy"), LiteralType("sad"))), required=True),
        Member("steps", ArrayType(UnionType((STRING, NamedType("null")))), required=False),
        Member("confidence", LiteralType(0.5), required=True, comments=("How sure", "you are")),
        Member("quoted key", NamedType("boolean"), required=True),
    )


def test_prompt_without_the_interface_has_none() -> None:
    """No ``interface AssistantResponse {`` means no shape, even if the name is mentioned."""
    assert parse_response_interface("Answer as an AssistantResponse object.") is None
    assert (
        parse_response_interface(system_prompt("run1_default").replace("interface", "type")) is None
    )


@pytest.mark.parametrize(
    ("body", "heads"),
    [
        ("{ thoughts: ???; speak: string }", [("thoughts", True), ("speak", True)]),
        ("{ thoughts: { text: string; }", [("thoughts", True)]),
        ("{" + " a: {" * 40 + "}" * 41, [("a", True)]),
        ("{\n  a:\n  b?: string\n}", [("a", True), ("b", False)]),
        ("{ [key: string]: any; c: string }", [("c", True)]),
        ("{ a: string b:: number }", [("a", True)]),
    ],
    ids=["garbage-type", "unclosed", "too-deep", "missing-type", "index-signature", "double-colon"],
)
def test_unreadable_interface_still_gives_its_top_level_member_names(
    body: str, heads: list[tuple[str, bool]]
) -> None:
    """When the interface does not read whole, its top-level names are found without types."""
    shape = parse_response_interface("interface AssistantResponse " + body)
    assert shape is not None
    assert not shape.complete
    assert [(m.name, m.required) for m in shape.members] == heads
    assert all(m.type is None for m in shape.members)


def test_interface_that_extends_another_is_read_but_not_complete() -> None:
    """Inherited members are unknown, so a shape with ``extends`` is not complete."""
    shape = parse_response_interface("interface AssistantResponse extends Base { a: string }")
    assert shape is not None
    assert shape.members == (Member("a", STRING, required=True),)
    assert not shape.complete


def test_comment_holding_punctuation_is_not_read_as_syntax() -> None:
    """A ``// |`` or ``// {`` comment is text about the next member, never a union or object."""
    shape = parse_response_interface(
        "interface AssistantResponse {\n  a: string // |\n  // {\n  b: number\n}"
    )
    assert shape is not None
    assert shape.complete
    assert shape.members == (
        Member("a", STRING, required=True),
        Member("b", NamedType("number"), required=True, comments=("|", "{")),
    )


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("YOU MUST ALWAYS RESPOND WITH A JSON OBJECT OF THE FOLLOWING TYPE:", True),
        ("interface AssistantResponse { a: string }", True),
        ("interface\n  AssistantResponse {}", True),
        ("You are a helpful assistant. Respond in JSON if you like.", False),
        ("", False),
    ],
)
def test_json_convention_is_recognised_by_the_interface_or_the_instruction(
    prompt: str, expected: bool
) -> None:
    """Either AutoGPT marker means the reply's content must be one JSON object."""
    assert uses_json_convention(prompt) is expected


def test_both_captured_autogpt_prompts_use_the_json_convention() -> None:
    """run1 (JSON in content) and run2 (functions) both describe the JSON reply."""
    assert uses_json_convention(system_prompt("run1_default"))
    assert uses_json_convention(system_prompt("run2_functions"))


# --- hostile prompts ------------------------------------------------------------------------

_HEAD = "## Commands\n1. a: b. Params: (x: string)\n## Format\ninterface AssistantResponse { v: "
_HOSTILE = {
    "deep-parens": _HEAD + "(" * 3_000 + "string" + ")" * 3_000 + "; }",
    "deep-generics": _HEAD + "Array<" * 3_000 + "string" + ">" * 3_000 + "; }",
    "huge-number": _HEAD + "9" * 10_000 + "; }",
    "unclosed-comments": _HEAD + "/* x " * 50_000,
    "many-params-openers": "## Commands\n1. a: " + "Params: (" * 50_000 + "\n",
    "spaces-in-a-param": "## Commands\n1. a: b. Params: (x" + " " * 50_000 + "y)\n",
    "many-brackets": "## Commands\n1. a: b. Params: (" + "<(" * 20_000 + ")\n",
}


@pytest.mark.parametrize("prompt", _HOSTILE.values(), ids=_HOSTILE.keys())
def test_hostile_prompt_is_read_quickly_without_raising(prompt: str) -> None:
    """Deep nesting, huge literals and regex traps are read, or given up on, within a second."""
    started = time.perf_counter()
    found = parse_commands(prompt)
    shape = parse_response_interface(prompt)
    uses_json_convention(prompt)
    assert time.perf_counter() - started < 1
    assert [c.name for c in found] == ["a"]
    assert shape is None or not shape.complete or shape.members[0].name == "v"


_PIECES = st.sampled_from(
    [
        *("{", "}", "<", ">", "(", ")", "[", "]", ";", ":", "?", "|", ",", "// c\n", "/*", "*/"),
        *("string", "Array", "name", '"q"', "'s'", "1.5", " ", "\n", "1. ", "Params: (", "#"),
    ]
)


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(_PIECES, max_size=40))
def test_any_prompt_text_is_read_without_raising(pieces: list[str]) -> None:
    """Whatever follows the markers, both readers return values; complete shapes have types."""
    text = "".join(pieces)
    prompt = f"## Commands\n{text}\ninterface AssistantResponse {{{text}"
    assert all(c.name for c in parse_commands(prompt))
    shape = parse_response_interface(prompt)
    assert shape is not None
    if shape.complete:
        assert all(m.type is not None for m in shape.members)
