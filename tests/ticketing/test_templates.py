"""Tests for ticketing.render.templates: the answer skeletons and tool tables an editor copies."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ticketing.render.schema_skeleton import PLACEHOLDER, schema_skeleton
from ticketing.render.templates import FUNCTION_COMMANDS_NOTE, answer_notes, answer_template
from ticketing.render.tool_table import tool_table
from ticketing.request import ChatRequest, Message, ResponseFormat, ToolSpec

SAMPLES = Path(__file__).parent.parent / "samples" / "autogpt"
COMMANDS = [
    "open_file",
    "open_folder",
    "finish",
    "execute_python_code",
    "execute_python_file",
    "read_file",
    "write_file",
    "list_folder",
    "ask_user",
    "web_search",
    "read_webpage",
]
_TOOL_BLOCK = re.compile(r"^(`{3,})tool_call\n(.*?)\n\1$", re.MULTILINE | re.DOTALL)


def sample(run: str, **fields: Any) -> ChatRequest:
    """Build a ChatRequest from a captured AutoGPT agent step, with its tools."""
    body = json.loads((SAMPLES / run / "004_POST_v1_chat_completions.json").read_text())["body"]
    tools = tuple(
        ToolSpec(
            name=t["function"]["name"],
            description=t["function"].get("description", ""),
            parameters=t["function"].get("parameters", {}),
        )
        for t in body.get("tools", [])
    )
    fields.setdefault("tool_choice", "auto" if tools else "none")
    messages = tuple(Message(m["role"], m["content"]) for m in body["messages"])
    return ChatRequest(model=body["model"], messages=messages, tools=tools, **fields)


def without_prompt(run: str, **fields: Any) -> ChatRequest:
    """Build a request with a captured step's tools but not AutoGPT's prompt: a plain agent."""
    request = sample(run, **fields)
    messages = tuple(m for m in request.messages if m.role != "system")
    return dataclasses.replace(request, messages=messages)


def with_schema(schema: dict[str, Any]) -> ChatRequest:
    """Build a plain request that asks for JSON matching ``schema``."""
    fmt = ResponseFormat(type="json_schema", name="answer", schema=schema)
    return ChatRequest(model="gpt-4o", messages=(Message("user", "hi"),), response_format=fmt)


def with_prompt(prompt: str) -> ChatRequest:
    """Build a request whose system prompt is ``prompt``."""
    return ChatRequest(model="gpt-4o", messages=(Message("system", prompt), Message("user", "go")))


def tool_blocks(template: str) -> list[Any]:
    """Return the parsed JSON of every tool_call block in a template."""
    return [json.loads(body) for _, body in _TOOL_BLOCK.findall(template)]


def content_part(template: str) -> Any:
    """Return the parsed JSON that precedes any tool_call block in a template."""
    return json.loads(template.split("```")[0])


def table_rows(table: str) -> list[str]:
    """Return the body rows of a markdown table (without header and separator)."""
    return table.split("\n")[2:]


def test_autogpt_default_sample_yields_a_skeleton_with_thoughts_and_use_tool() -> None:
    """The interface becomes JSON whose comments are the placeholders of the next member."""
    skeleton = json.loads(answer_template(sample("run1_default")) or "")
    assert set(skeleton) == {"thoughts", "use_tool"}
    thoughts = skeleton["thoughts"]
    assert thoughts["observations"] == "Relevant observations from your last action (if any)"
    assert thoughts["plan"] == ["Short list that conveys the long-term plan"]
    assert list(thoughts) == [
        "observations",
        "text",
        "reasoning",
        "self_criticism",
        "plan",
        "speak",
    ]
    assert skeleton["use_tool"]["arguments"] == {}


def test_autogpt_use_tool_name_placeholder_lists_every_command() -> None:
    """use_tool.name says which commands the prompt's ## Commands list allows."""
    skeleton = json.loads(answer_template(sample("run1_default")) or "")
    assert skeleton["use_tool"]["name"] == "one of: " + ", ".join(COMMANDS)


def test_autogpt_default_sample_table_lists_commands_with_required_parameters() -> None:
    """Without tools, the table holds the prompt's commands and marks required parameters."""
    table = tool_table(sample("run1_default")) or ""
    rows = table_rows(table)
    assert table.startswith("| Command | Description | Parameters |")
    assert len(rows) == 11
    write = next(r for r in rows if r.startswith("| write\\_file |"))
    assert "filename\\: string \\(required\\)\\; contents\\: string \\(required\\)" in write
    run = next(r for r in rows if r.startswith("| execute\\_python\\_file |"))
    assert run.endswith("args\\: Array\\<string\\> |")


def test_functions_sample_yields_a_tool_table_with_eleven_rows() -> None:
    """Each of the 11 offered tools gets one row, in order, with its typed parameters."""
    table = tool_table(sample("run2_functions")) or ""
    rows = table_rows(table)
    assert table.startswith("| Tool | Description | Parameters |")
    assert [r.split(" | ")[0] for r in rows] == [
        "| " + name.replace("_", "\\_") for name in COMMANDS
    ]
    assert "num\\_results\\: integer |" in rows[9]
    assert "topics\\_of\\_interest\\: array of string" in rows[10]


def test_functions_sample_template_holds_the_content_json_and_a_first_tool_call() -> None:
    """The thoughts object comes first as content, then a tool_call for the first tool."""
    template = answer_template(sample("run2_functions")) or ""
    assert set(content_part(template)) == {"thoughts"}
    assert tool_blocks(template) == [{"name": "open_file", "arguments": {"file_path": "…"}}]


def test_named_tool_choice_gives_that_functions_skeleton() -> None:
    """tool_choice naming write_file yields a write_file call with both arguments."""
    request = sample("run2_functions", tool_choice="function:write_file")
    template = answer_template(request) or ""
    expected = {"name": "write_file", "arguments": {"filename": "…", "contents": "…"}}
    assert tool_blocks(template) == [expected]
    assert any("requires a call to the function" in note for note in answer_notes(request))


def test_tool_choice_none_gives_no_tool_section() -> None:
    """With tool_choice none the template has no tool_call and there is no table."""
    request = sample("run2_functions", tool_choice="none")
    template = answer_template(request) or ""
    assert "tool_call" not in template
    assert set(json.loads(template)) == {"thoughts"}
    assert tool_table(request) is None
    assert not any("tool_call" in note for note in answer_notes(request))


def test_tool_choice_required_says_a_call_is_required() -> None:
    """A required tool choice is stated, and deleting the block is not suggested."""
    notes = " ".join(answer_notes(without_prompt("run2_functions", tool_choice="required")))
    assert "A tool call is required" in notes
    assert "delete the block" not in notes


def test_parallel_calls_are_explained_as_several_blocks_beside_text() -> None:
    """With parallel calls allowed, the notes say one block per call and text may go beside."""
    notes = " ".join(answer_notes(without_prompt("run2_functions")))
    assert "one `tool_call` block per call" in notes
    assert "Text outside the blocks goes to the agent" in notes
    assert "delete the block to answer with text only" in notes


@pytest.mark.parametrize(
    "fields", [{"parallel_tool_calls": False}, {"legacy_functions": True}], ids=["serial", "legacy"]
)
def test_serial_or_legacy_tool_calls_allow_a_single_block(fields: dict[str, Any]) -> None:
    """Without parallel calls, or with legacy functions, the notes allow at most one call."""
    notes = " ".join(answer_notes(without_prompt("run2_functions", **fields)))
    assert "at most one call" in notes
    assert "one `tool_call` block per call" not in notes


def test_autogpt_functions_notes_ask_for_thoughts_and_exactly_one_call() -> None:
    """AutoGPT's functions mode is told it needs the JSON text and one block, nothing less."""
    notes = answer_notes(sample("run2_functions"))
    assert FUNCTION_COMMANDS_NOTE in notes
    joined = " ".join(notes)
    assert "delete the block to answer with text only" not in joined
    assert "one `tool_call` block per call" not in joined


def test_plain_chat_has_no_template_table_or_notes() -> None:
    """A request with no format, tools or AutoGPT prompt gets nothing to copy."""
    request = with_prompt("You are a helpful assistant.")
    assert answer_template(request) is None
    assert tool_table(request) is None
    assert answer_notes(request) == ()


def test_json_object_gives_an_empty_object_and_a_note() -> None:
    """json_object asks for any object: the template is {} and a note says so."""
    request = ChatRequest(
        model="gpt-4o",
        messages=(Message("user", "hi"),),
        response_format=ResponseFormat(type="json_object"),
    )
    assert answer_template(request) == "{}"
    assert any("must be one: `{}` is the smallest" in note for note in answer_notes(request))


_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 3},
        "score": {"type": "integer", "exclusiveMinimum": 0, "maximum": 10},
        "ratio": {"type": "number", "minimum": 0.5},
        "cold": {"type": "number", "maximum": -5},
        "done": {"type": "boolean"},
        "kind": {"enum": ["bug", "feature"]},
        "version": {"const": 2},
        "note": {"type": ["string", "null"]},
        "owner": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/person"}]},
        "reviewers": {"type": "array", "items": {"$ref": "#/$defs/person"}, "minItems": 2},
        "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}]},
        "shape": {"oneOf": [{"$ref": "#/$defs/circle"}, {"type": "string"}]},
        "both": {
            "allOf": [
                {"$ref": "#/$defs/circle"},
                {"properties": {"label": {"type": "string"}}, "required": ["label", "extra"]},
            ]
        },
        "legacy": {"$ref": "#/definitions/old"},
    },
    "required": ["title", "score", "kind", "reviewers", "owner", "tags"],
    "additionalProperties": True,
    "$defs": {
        "person": {
            "type": "object",
            "properties": {"login": {"type": "string"}, "admin": {"type": "boolean"}},
            "required": ["login", "admin"],
            "additionalProperties": False,
        },
        "circle": {"type": "object", "properties": {"r": {"type": "number", "minimum": 1}}},
    },
    "definitions": {"old": {"type": "string", "enum": ["x"]}},
}


def test_json_schema_skeleton_validates_against_its_schema() -> None:
    """With placeholders kept as typed, the skeleton is valid under Draft 2020-12."""
    template = answer_template(with_schema(_SCHEMA)) or ""
    skeleton = json.loads(template)
    Draft202012Validator(_SCHEMA).validate(skeleton)
    assert template == json.dumps(skeleton, indent=2, ensure_ascii=False)
    assert skeleton["title"] == PLACEHOLDER * 3
    assert skeleton["score"] == 1
    assert skeleton["kind"] == "bug"
    assert skeleton["owner"] == {"login": PLACEHOLDER, "admin": False}
    assert len(skeleton["reviewers"]) == 2
    assert skeleton["legacy"] == "x"
    assert skeleton["both"] == {"r": 1, "label": PLACEHOLDER, "extra": PLACEHOLDER}


def test_recursive_ref_is_cut_at_a_depth_limit_and_still_validates() -> None:
    """A self-referencing schema yields a finite skeleton that is still valid."""
    schema: dict[str, Any] = {
        "$ref": "#/$defs/node",
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
            }
        },
    }
    skeleton = schema_skeleton(schema)
    Draft202012Validator(schema).validate(skeleton)
    depth, node = 0, skeleton
    while node.get("children"):
        depth, node = depth + 1, node["children"][0]
    assert 1 <= depth <= 4


def test_exponentially_fanning_refs_give_a_small_skeleton_quickly() -> None:
    """A $ref that repeats itself twelve times per level stays small and fast to expand."""
    fan = {f"p{i}": {"$ref": "#/$defs/fan"} for i in range(12)}
    schema = {"$ref": "#/$defs/fan", "$defs": {"fan": {"type": "object", "properties": fan}}}
    started = time.perf_counter()
    text = json.dumps(schema_skeleton(schema))
    assert time.perf_counter() - started < 1
    assert len(text) < 20_000


def test_unknown_or_remote_refs_fall_back_to_a_placeholder() -> None:
    """References that do not resolve locally are never fetched: they become a placeholder."""
    schema = {
        "type": "object",
        "properties": {
            "remote": {"$ref": "https://evil.example/schema.json"},
            "missing": {"$ref": "#/$defs/nope"},
            "listed": {"$ref": "#/properties/remote/~1x"},
        },
    }
    assert schema_skeleton(schema) == {"remote": "…", "missing": "…", "listed": "…"}


def test_interface_with_unions_arrays_and_optional_members_is_read() -> None:
    """T[], string-literal unions, optional members and numbers become typed placeholders."""
    prompt = (
        "interface AssistantResponse {\n"
        "  /* block comments are skipped */\n"
        "  mood: 'happy' | 'sad';\n"
        "  steps?: string[];\n"
        "  // How sure you are\n"
        "  confidence: number | null;\n"
        '  "quoted key": boolean,\n'
        "  extra: Map<string, Array<number>>;\n"
        "  other: SomethingElse;\n"
        "}"
    )
    skeleton = json.loads(answer_template(with_prompt(prompt)) or "")
    assert skeleton == {
        "mood": "happy",
        "steps": ["…"],
        "confidence": 0,
        "quoted key": False,
        "extra": {},
        "other": "…",
    }


def test_older_autogpt_command_key_also_lists_the_commands() -> None:
    """The name inside `command` (older AutoGPT) lists the commands, like use_tool's does."""
    prompt = (
        "## Commands\n1. say: Say something. Params: (text: string)\n\n## Format\n"
        "interface AssistantResponse { command: { name: string; args: Record<string, any>; }; }"
    )
    request = with_prompt(prompt)
    assert json.loads(answer_template(request) or "") == {
        "command": {"name": "one of: say", "args": {}}
    }
    assert table_rows(tool_table(request) or "") == [
        "| say | Say something | text\\: string \\(required\\) |"
    ]


@pytest.mark.parametrize(
    "prompt",
    [
        "interface AssistantResponse { thoughts: ??? }",
        "interface AssistantResponse { thoughts: { text: string; }",
        "interface AssistantResponse {" + " a: {" * 40 + "}" * 41,
    ],
    ids=["garbage", "unclosed", "too-deep"],
)
def test_unreadable_interface_gives_no_template(prompt: str) -> None:
    """An interface the parser cannot read yields no template rather than a wrong one."""
    request = with_prompt(prompt)
    assert answer_template(request) is None
    assert tool_table(request) is None


_HEAD = "## Commands\n1. a: b. Params: (x: string)\n## Format\ninterface AssistantResponse { v: "
_HOSTILE = {
    "deep-parens": _HEAD + "(" * 3_000 + "string" + ")" * 3_000 + "; }",
    "deep-generics": _HEAD + "Array<" * 3_000 + "string" + ">" * 3_000 + "; }",
    "array-suffixes": _HEAD + "string" + "[]" * 3_000 + "; }",
    "huge-number": _HEAD + "9" * 10_000 + "; }",
    "unclosed-comments": _HEAD + "/* x " * 50_000,
    "long-command-line": "## Commands\n1. a: " + "Params: (" * 50_000 + "\n",
}


@pytest.mark.parametrize("prompt", _HOSTILE.values(), ids=_HOSTILE.keys())
def test_hostile_prompt_is_read_quickly_without_raising(prompt: str) -> None:
    """Deep nesting, huge literals and regex traps give a template or None, within a second."""
    request = with_prompt(prompt)
    started = time.perf_counter()
    template = answer_template(request)
    tool_table(request)
    answer_notes(request)
    assert time.perf_counter() - started < 1
    assert template is None or isinstance(json.loads(template), dict)


_TS_PIECES = st.sampled_from(
    [
        *("{", "}", "<", ">", "(", ")", "[", "]", ";", ":", "?", "|", ",", "// c\n", "/*", "*/"),
        *("string", "Array", "Record", "number", "use_tool", "name", '"q"', "'s'", "1.5", " "),
    ]
)


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(_TS_PIECES, max_size=40))
def test_any_interface_text_gives_a_json_object_template_or_none(pieces: list[str]) -> None:
    """Whatever follows `interface AssistantResponse {`, reading it never raises."""
    request = with_prompt(
        _HEAD.split("interface")[0] + "interface AssistantResponse {" + "".join(pieces)
    )
    template = answer_template(request)
    assert template is None or isinstance(json.loads(template), dict)
    table = tool_table(request)
    assert table is None or len(table_rows(table)) == 1


def test_injection_in_tool_names_and_descriptions_is_neutralised_in_the_table() -> None:
    """Pipes, newlines, mentions, markers and HTML in tool text stay inside one escaped row."""
    attack = "x | y\n| forged | row |\n@octocat #12 <!-- hidden --> <img src=x> ```"
    tool = ToolSpec(
        name="a|b@c",
        description=attack,
        parameters={"properties": {"p|q\n": {"type": "string"}}, "required": ["p|q\n"]},
    )
    request = ChatRequest(model="m", messages=(Message("user", "u"),), tools=(tool,))
    table = tool_table(request) or ""
    rows = table_rows(table)
    assert len(rows) == 1
    assert len(re.findall(r"(?<!\\)\|", rows[0].replace("\\\\", ""))) == 4
    assert "<!--" not in table
    assert not re.search(r"(?<!\\)[<>`]", table.replace("\\\\", ""))
    assert not re.search(r"@[A-Za-z]|#\d", table)


def test_backtick_runs_cannot_close_the_tool_call_block() -> None:
    """A tool_call fence is longer than any backtick run in names or enum values."""
    tool = ToolSpec(
        name="go",
        parameters={"properties": {"mode": {"enum": ["`````\n```tool_call"]}}},
    )
    request = ChatRequest(model="m", messages=(Message("user", "u"),), tools=(tool,))
    template = answer_template(request) or ""
    assert template.startswith("``````tool_call\n")
    assert tool_blocks(template) == [{"name": "go", "arguments": {"mode": "`````\n```tool_call"}}]


_LEAF = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer", "minimum": 3},
        {"type": "number", "exclusiveMaximum": -1},
        {"type": "boolean"},
        {"type": "null"},
        {"enum": ["a", 1, None]},
        {"type": ["integer", "null"]},
        {"type": "string", "minLength": 2, "maxLength": 4},
        {"$ref": "#/$defs/leaf"},
    ]
)
_SCHEMAS = st.recursive(
    _LEAF,
    lambda inner: st.one_of(
        st.builds(
            lambda props, req: {
                "type": "object",
                "properties": props,
                "required": sorted(set(req) & set(props)),
                "additionalProperties": False,
            },
            st.dictionaries(st.text(max_size=5), inner, max_size=4),
            st.lists(st.text(max_size=5), max_size=4),
        ),
        st.builds(
            lambda item, n: {"type": "array", "items": item, "minItems": n},
            inner,
            st.integers(0, 3),
        ),
        st.builds(lambda branches: {"anyOf": branches}, st.lists(inner, min_size=1, max_size=3)),
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(schema=_SCHEMAS)
def test_any_schema_of_common_keywords_yields_a_valid_skeleton(schema: dict[str, Any]) -> None:
    """Skeletons of generated schemas (objects, arrays, unions, refs, bounds) validate."""
    root = {
        **schema,
        "$defs": {"leaf": {"type": "object", "properties": {"v": {"type": "string"}}}},
    }
    Draft202012Validator(root).validate(schema_skeleton(root))
