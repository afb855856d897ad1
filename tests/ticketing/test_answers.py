"""Tests for ticketing.release: what a verified answer releases to the agent, or why not."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.wire.requests import parse_chat_request
from ticketing.json_depth import MAX_JSON_DEPTH
from ticketing.release import Refusal, Release, prepare_release
from ticketing.request import ChatRequest, Message, ResponseFormat, ToolSpec

SAMPLES = Path(__file__).parent.parent / "samples" / "autogpt"
MODELS = frozenset({"gpt-4-turbo", "gpt-3.5-turbo"})
SEED = "4f1c0ffee"

WRITE_FILE = ToolSpec(
    name="write_file",
    description="Write a file.",
    parameters={
        "type": "object",
        "properties": {
            "filename": {"type": "string"},
            "contents": {"type": "string"},
            "options": {
                "type": "object",
                "properties": {"mode": {"type": "integer", "minimum": 0}},
            },
        },
        "required": ["filename", "contents"],
    },
)
FINISH = ToolSpec(
    name="finish",
    parameters={
        "type": "object",
        "properties": {"reason": {"type": "string"}},
        "required": ["reason"],
    },
)
TOOLS = (WRITE_FILE, FINISH)

STEP: dict[str, Any] = {
    "thoughts": {
        "observations": "The task asks for hello.txt.",
        "text": "Write it.",
        "reasoning": "One write is enough.",
        "self_criticism": "None.",
        "plan": ["write hello.txt", "finish"],
        "speak": "Writing hello.txt.",
    },
    "use_tool": {"name": "write_file", "arguments": {"filename": "hello.txt", "contents": "hi"}},
}


def chat(*, system: str = "", **fields: Any) -> ChatRequest:
    """Return a request with one user message, an optional system prompt, and fields."""
    messages = (Message("system", system),) if system else ()
    return ChatRequest(model="gpt-4o", messages=(*messages, Message("user", "go")), **fields)


def with_tools(**fields: Any) -> ChatRequest:
    """Return a request offering write_file and finish."""
    return chat(tools=TOOLS, **fields)


def captured(run: str) -> ChatRequest:
    """Parse a captured AutoGPT agent step the way the proxy does."""
    capture = json.loads((SAMPLES / run / "004_POST_v1_chat_completions.json").read_text())
    return parse_chat_request(capture["body"], client="autogpt", models=MODELS)


def block(body: Any, *, fence: str = "```", info: str = "tool_call") -> str:
    """Return a fenced block holding body (JSON-encoded unless already a string)."""
    text = body if isinstance(body, str) else json.dumps(body)
    return f"{fence}{info}\n{text}\n{fence}"


def call(name: str = "write_file", **arguments: Any) -> str:
    """Return a tool_call block calling name with arguments."""
    return block({"name": name, "arguments": arguments})


def release(text: str, request: ChatRequest) -> Release:
    """Prepare text and fail unless it is released."""
    result = prepare_release(text, request, call_id_seed=SEED)
    assert isinstance(result, Release), result
    return result


def refusal(text: str, request: ChatRequest) -> tuple[str, ...]:
    """Prepare text, fail unless it is refused, and return the problems."""
    result = prepare_release(text, request, call_id_seed=SEED)
    assert isinstance(result, Refusal), result
    assert result.problems
    return result.problems


def expected_id(seed: str, index: int) -> str:
    """Return the id the brief defines for the call at index."""
    return "call_" + hashlib.sha256(f"{seed}:{index}".encode()).hexdigest()[:24]


def outside_code_spans(text: str) -> str:
    """Return text with its markdown code spans removed, leaving what markdown renders."""
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text)


# --- plain text and parsing -----------------------------------------------------------------


def test_plain_text_answer_is_released_as_stripped_content_with_finish_reason_stop() -> None:
    """Text with no tool_call block is the content, stripped, and finishes with stop."""
    result = release("\n  The answer is 42.\n\n", chat())
    assert result == Release(content="The answer is 42.", tool_calls=(), finish_reason="stop")


def test_empty_answer_is_released_with_no_content() -> None:
    """An answer of only whitespace releases None as content, not an empty string."""
    assert release(" \n\t\n", chat()).content is None


def test_tool_call_block_becomes_a_call_and_the_text_around_it_the_content() -> None:
    """A tool_call block becomes a call; the prose before and after it is the content."""
    text = f"Writing it now.\n\n{call(filename='a.txt', contents='x')}\n\nThen I finish."
    result = release(text, with_tools())
    assert result.content == "Writing it now.\n\nThen I finish."
    assert [(c.name, json.loads(c.arguments)) for c in result.tool_calls] == [
        ("write_file", {"filename": "a.txt", "contents": "x"})
    ]
    assert result.finish_reason == "tool_calls"


def test_answer_that_is_only_a_tool_call_has_no_content() -> None:
    """When the answer is only a tool call, the content is None."""
    result = release(call("finish", reason="done"), with_tools())
    assert result.content is None
    assert result.tool_calls[0].name == "finish"


@pytest.mark.parametrize("fence", ["~~~", "````", "~~~~~"])
def test_tilde_and_longer_fences_open_tool_call_blocks(fence: str) -> None:
    """Fences of tildes or of more than three characters mark tool_call blocks too."""
    text = block({"name": "finish", "arguments": {"reason": "ok"}}, fence=fence)
    assert release(text, with_tools()).tool_calls[0].name == "finish"


def test_only_a_fence_of_the_same_character_and_at_least_the_length_closes_a_block() -> None:
    """Inside a ```` block, ``` and ~~~~ lines are body text, so the JSON stays whole."""
    body = '{"name": "write_file", "arguments": {"filename": "a.md",\n'
    text = f'````tool_call\n{body}```\n~~~~\n"contents": "x"}}}}\n````'
    problems = refusal(text, with_tools())
    # The body included the inner fences, so it is invalid JSON rather than closed early.
    assert any("not valid JSON" in p and "line 1" in p for p in problems)
    good = '````tool_call\n{"name": "finish", "arguments": {"reason": "```"}}\n`````'
    assert json.loads(release(good, with_tools()).tool_calls[0].arguments) == {"reason": "```"}


def test_block_with_another_label_stays_in_the_content() -> None:
    """A ```json block is content when nothing asks for JSON: it is not a tool call."""
    text = "Here:\n\n" + block({"name": "finish", "arguments": {}}, info="json")
    result = release(text, with_tools())
    assert result.tool_calls == ()
    assert result.content == text


def test_tool_call_block_inside_a_longer_fence_is_an_example_not_a_call() -> None:
    """A tool_call fence nested in a ```` markdown block is shown, not executed."""
    inner = call("finish", reason="x")
    text = f"Write it like this:\n\n````markdown\n{inner}\n````"
    result = release(text, with_tools())
    assert result.tool_calls == ()
    assert result.content == text


@pytest.mark.parametrize("label", ["tool-call", "tool_calls", "TOOL_CALL", "tool_call json"])
def test_misspelled_tool_call_label_is_refused_rather_than_sent_as_text(label: str) -> None:
    """A block labelled almost tool_call is refused, so a typo never becomes prose."""
    problems = refusal(block({"name": "finish", "arguments": {}}, info=label), with_tools())
    assert any("labelled exactly" in p and "line 1" in p for p in problems)


def test_unclosed_tool_call_block_is_refused() -> None:
    """A tool_call block with no closing fence is refused, not guessed at."""
    problems = refusal('Here:\n```tool_call\n{"name": "finish"}', with_tools())
    assert problems == (
        "the `tool_call` block opened on line 2 is never closed; end it with"
        " a fence like the one that opened it.",
    )


def test_openai_shaped_call_with_string_arguments_is_accepted() -> None:
    """OpenAI's {type, function: {name, arguments: "<json>"}} shape is read like the short one."""
    body = {
        "type": "function",
        "function": {"name": "finish", "arguments": json.dumps({"reason": "done"})},
    }
    result = release(block(body), with_tools())
    assert (result.tool_calls[0].name, result.tool_calls[0].arguments) == (
        "finish",
        '{"reason": "done"}',
    )


def test_arguments_are_reserialised_with_json_dumps_keeping_non_ascii() -> None:
    """Arguments are re-serialised with json.dumps(ensure_ascii=False), whatever the spacing."""
    text = '```tool_call\n{"name": "write_file",\n "arguments": {"filename":"é.txt" ,\n'
    text += '  "contents":"日本"}}\n```'
    arguments = release(text, with_tools()).tool_calls[0].arguments
    assert arguments == json.dumps({"filename": "é.txt", "contents": "日本"}, ensure_ascii=False)


def test_missing_arguments_mean_an_empty_object() -> None:
    """A call with no arguments key is sent with arguments {}."""
    empty = ToolSpec(name="ping")
    assert release(block({"name": "ping"}), chat(tools=(empty,))).tool_calls[0].arguments == "{}"


def test_malformed_block_json_is_refused_quoting_the_error_position() -> None:
    """Broken JSON in a block is refused with the decoder's message, line and column."""
    text = 'Text first.\n```tool_call\n{"name": "finish",\n "arguments": {"reason" "x"}}\n```'
    problems = refusal(text, with_tools())
    assert problems == (
        "the `tool_call` block on line 2 is not valid JSON:"
        " `Expecting ':' delimiter at line 2, column 25`.",
    )


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ('{"name": "finish", "arguments": {"reason": "a", "reason": "b"}}', "duplicate key"),
        ('{"name": "finish", "arguments": {"reason": NaN}}', "NaN is not valid JSON"),
        ('{"name": "finish", "arguments": {"reason": 1e999}}', "too large"),
    ],
)
def test_json_that_python_accepts_but_clients_may_not_is_refused(body: str, fragment: str) -> None:
    """Duplicate keys, NaN and numbers beyond a double are refused, not silently changed."""
    problems = refusal(block(body), with_tools())
    assert any(fragment in p for p in problems)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"name": "finish", "arguments": ["done"]}, "must be a JSON object, not an array"),
        ({"name": "finish", "arguments": "{not json"}, "a string that is not valid JSON"),
        ({"name": "finish", "arguments": "[1]"}, "must be a JSON object, not an array"),
        ({"name": "finish", "arguments": {}, "note": "x"}, "does not take"),
        ({"arguments": {}}, "with a string `name`"),
        ([{"name": "finish"}], "with a string `name`"),
        ({"type": "code", "function": {"name": "finish"}}, "has `type`"),
    ],
)
def test_block_that_is_not_a_well_formed_call_is_refused(body: Any, fragment: str) -> None:
    """Arguments that are not an object, unknown keys or a missing name are each refused."""
    problems = refusal(block(body), with_tools())
    assert any(fragment in p for p in problems), problems


# --- ids --------------------------------------------------------------------------------------


def test_call_ids_are_derived_from_the_seed_and_index_so_retries_see_the_same_ids() -> None:
    """Ids are call_ plus 24 hex of sha256(seed:index): equal for a seed, different across."""
    text = call("finish", reason="a") + "\n\n" + call("finish", reason="b")
    first = prepare_release(text, with_tools(), call_id_seed="key-1")
    again = prepare_release(text, with_tools(), call_id_seed="key-1")
    other = prepare_release(text, with_tools(), call_id_seed="key-2")
    assert isinstance(first, Release)
    assert isinstance(other, Release)
    assert first == again
    assert [c.id for c in first.tool_calls] == [expected_id("key-1", 0), expected_id("key-1", 1)]
    assert {c.id for c in first.tool_calls}.isdisjoint(c.id for c in other.tool_calls)


# --- the offered tools ----------------------------------------------------------------------


def test_tool_call_when_the_request_offered_no_tools_is_refused() -> None:
    """A call answering a request without tools is refused with a plain instruction."""
    problems = refusal(call("finish", reason="x"), chat(tool_choice="none"))
    assert problems == ("this request offered no tools; answer with text.",)
    (problem,) = refusal(call("finish", reason="x"), captured("run1_default"))
    assert problem.endswith("answer with text: the JSON object it asks for.")


def test_unknown_tool_name_is_refused_listing_the_offered_names() -> None:
    """Calling a tool the request did not offer is refused, and the offered names are listed."""
    (problem,) = refusal(call("delete_everything"), with_tools())
    assert "`delete_everything` (line 1) is not offered" in problem
    assert "`write_file`, `finish`" in problem


def test_arguments_violating_the_tool_schema_are_refused_naming_the_json_path() -> None:
    """Each schema error names the tool, the JSON path and the validator's message."""
    text = call(filename="a", contents="x", options={"mode": -1})
    (problem,) = refusal(text, with_tools())
    assert problem == (
        "arguments of `write_file` at `$.options.mode`: `-1 is less than the minimum of 0`."
    )


def test_arguments_matching_the_tool_schema_are_released() -> None:
    """Arguments that satisfy the schema, optional parts included, are released as given."""
    result = release(call(filename="a", contents="x", options={"mode": 1}), with_tools())
    assert json.loads(result.tool_calls[0].arguments)["options"] == {"mode": 1}


def test_every_problem_is_reported_not_just_the_first() -> None:
    """Several faults across blocks and checks are all listed in one refusal."""
    text = "\n\n".join([call(filename=3), call("nope"), block("{oops"), call("finish", reason="x")])
    problems = refusal(text, with_tools(parallel_tool_calls=False))
    assert len(problems) == 5
    assert any("at `$.filename`: `3 is not of type 'string'`" in p for p in problems)
    assert any("at `$`: `'contents' is a required property`" in p for p in problems)
    assert any("`nope`" in p for p in problems)
    assert any("line 9 is not valid JSON" in p for p in problems)
    assert any("at most one tool call" in p and "has 4" in p for p in problems)


def test_invalid_tool_schema_is_reported_instead_of_crashing() -> None:
    """A tool whose parameters are not a valid JSON Schema yields a problem naming it."""
    broken = ToolSpec(name="odd", parameters={"type": "objekt"})
    (problem,) = refusal(block({"name": "odd", "arguments": {}}), chat(tools=(broken,)))
    assert problem.startswith("the parameter schema of the tool `odd` is not a valid JSON Schema")
    assert "`$.type`" in problem


def test_schema_reference_to_a_url_is_reported_and_never_fetched() -> None:
    """A $ref to a remote schema is refused as unresolvable: the module does no I/O."""
    remote = ToolSpec(name="far", parameters={"$ref": "https://example.invalid/schema.json"})
    (problem,) = refusal(block({"name": "far", "arguments": {}}), chat(tools=(remote,)))
    assert "cannot be applied" in problem
    assert "Unresolvable" in problem


# --- tool_choice and how many calls ---------------------------------------------------------


def test_tool_choice_none_refuses_a_call_and_accepts_text() -> None:
    """With tool_choice none, a call is refused and plain text is released."""
    request = with_tools(tool_choice="none")
    (problem,) = refusal(call("finish", reason="x"), request)
    assert "`tool_choice` to `none`" in problem
    assert release("Just text.", request).content == "Just text."


def test_tool_choice_required_refuses_text_and_accepts_a_call() -> None:
    """With tool_choice required, text alone is refused and any offered call is released."""
    request = with_tools(tool_choice="required")
    (problem,) = refusal("I would rather not.", request)
    assert "requires a tool call" in problem
    assert release(call("finish", reason="x"), request).finish_reason == "tool_calls"


def test_tool_choice_naming_a_function_requires_calls_to_that_function_only() -> None:
    """With a named function, text is refused, another tool is refused, the named one passes."""
    request = with_tools(tool_choice="function:finish")
    assert "requires a call to the tool `finish`" in refusal("text", request)[0]
    mixed = call("finish", reason="x") + "\n" + call(filename="a", contents="b")
    assert any("allows only the tool `finish`" in p for p in refusal(mixed, request))
    assert release(call("finish", reason="x"), request).tool_calls[0].name == "finish"


def test_tool_choice_auto_accepts_text_or_a_call() -> None:
    """With tool_choice auto, both an answer in text and an answer with a call are released."""
    request = with_tools(tool_choice="auto")
    assert release("text", request).tool_calls == ()
    assert len(release(call("finish", reason="x"), request).tool_calls) == 1


def test_parallel_calls_are_released_in_order_with_distinct_ids() -> None:
    """Two calls are released in the order written when parallel calls are allowed."""
    text = call(filename="a", contents="1") + "\n" + call("finish", reason="done")
    result = release(text, with_tools())
    assert [c.name for c in result.tool_calls] == ["write_file", "finish"]
    assert len({c.id for c in result.tool_calls}) == 2


def test_parallel_calls_are_refused_when_the_request_disallows_them() -> None:
    """With parallel_tool_calls false, a second call is refused."""
    text = call(filename="a", contents="1") + "\n" + call("finish", reason="done")
    (problem,) = refusal(text, with_tools(parallel_tool_calls=False))
    assert "at most one tool call per answer (`parallel_tool_calls` is false)" in problem


def test_legacy_functions_take_one_call_and_finish_with_function_call() -> None:
    """A request using legacy functions gets finish_reason function_call, and one call at most."""
    request = with_tools(legacy_functions=True)
    assert release(call("finish", reason="x"), request).finish_reason == "function_call"
    two = call("finish", reason="x") + "\n" + call("finish", reason="y")
    assert "legacy `functions` field" in refusal(two, request)[0]


# --- response_format ------------------------------------------------------------------------


JSON_OBJECT = ResponseFormat(type="json_object")
PERSON = ResponseFormat(
    type="json_schema",
    name="person",
    schema={
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
    },
)


def test_json_object_format_accepts_an_object() -> None:
    """With response_format json_object, a JSON object is released as written."""
    assert release('{"ok": true}', chat(response_format=JSON_OBJECT)).content == '{"ok": true}'


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("Sure! Here it is.", "not valid JSON: `Expecting value at line 1, column 1`"),
        ("[1, 2]", "not an array"),
        ("   ", "the answer is empty"),
    ],
)
def test_json_object_format_refuses_anything_but_an_object(text: str, fragment: str) -> None:
    """Prose, an array or nothing at all is refused when a JSON object is required."""
    (problem,) = refusal(text, chat(response_format=JSON_OBJECT))
    assert fragment in problem


@pytest.mark.parametrize("info", ["json", "JSON", ""])
def test_single_fenced_json_block_is_unwrapped(info: str) -> None:
    """Content that is exactly one ```json or bare fenced block releases the JSON inside it."""
    text = block('{\n  "ok": true\n}', info=info)
    assert release(text, chat(response_format=JSON_OBJECT)).content == '{\n  "ok": true\n}'


def test_fenced_json_with_prose_around_it_is_not_unwrapped() -> None:
    """Text around a fenced block leaves it as text, which is not a JSON object."""
    problems = refusal(
        "Here:\n" + block('{"ok": true}', info="json"), chat(response_format=JSON_OBJECT)
    )
    assert "not valid JSON" in problems[0]


def test_json_schema_format_accepts_a_matching_object() -> None:
    """An object matching the response format's schema is released."""
    text = '{"name": "Ada", "age": 36}'
    assert release(text, chat(response_format=PERSON)).content == text


def test_json_schema_format_refuses_a_mismatch_naming_the_json_path() -> None:
    """Each schema error on the answer names its JSON path."""
    problems = refusal('{"name": "Ada", "age": "old"}', chat(response_format=PERSON))
    assert problems == ("the answer at `$.age`: `'old' is not of type 'integer'`.",)


def test_json_format_does_not_apply_to_an_answer_that_is_a_tool_call() -> None:
    """When the answer holds tool calls, its prose need not be JSON."""
    request = with_tools(response_format=JSON_OBJECT)
    result = release("Calling a tool.\n\n" + call("finish", reason="x"), request)
    assert result.content == "Calling a tool."


# --- AutoGPT --------------------------------------------------------------------------------


def test_autogpt_default_step_with_a_valid_json_answer_is_released_as_that_json() -> None:
    """A run1 step answered with thoughts and use_tool JSON is released unchanged."""
    text = json.dumps(STEP, indent=2)
    result = release(text, captured("run1_default"))
    assert result == Release(content=text, tool_calls=(), finish_reason="stop")


def test_autogpt_default_step_missing_use_tool_is_refused() -> None:
    """Leaving out use_tool, which the AssistantResponse interface declares, is refused."""
    (problem,) = refusal(json.dumps({"thoughts": STEP["thoughts"]}), captured("run1_default"))
    assert problem == (
        "the answer lacks the key `use_tool`, which the agent's `AssistantResponse`"
        " interface declares."
    )


def test_autogpt_default_step_with_an_unknown_command_is_refused_listing_commands() -> None:
    """A use_tool name outside the prompt's ## Commands list is refused, listing them."""
    step = {**STEP, "use_tool": {"name": "rm_rf", "arguments": {}}}
    (problem,) = refusal(json.dumps(step), captured("run1_default"))
    assert "`use_tool.name` is `rm_rf`, which is not one of the agent's commands" in problem
    assert "`open_file`" in problem
    assert "`read_webpage`" in problem


def test_autogpt_default_step_in_a_json_fence_is_unwrapped() -> None:
    """A step answered inside a ```json fence releases just the JSON."""
    inner = json.dumps(STEP, indent=2)
    result = release(block(inner, info="json"), captured("run1_default"))
    assert result.content == inner


def test_autogpt_command_missing_a_required_param_is_refused() -> None:
    """write_file lists (filename, contents): leaving out contents is refused."""
    step = {**STEP, "use_tool": {"name": "write_file", "arguments": {"filename": "a"}}}
    (problem,) = refusal(json.dumps(step), captured("run1_default"))
    assert problem == (
        "`use_tool.arguments` lacks `contents`, which the command `write_file` requires."
    )


def test_autogpt_optional_params_marked_with_a_question_mark_may_be_left_out() -> None:
    """execute_python_file lists args? as optional, so filename alone is enough."""
    step = {**STEP, "use_tool": {"name": "execute_python_file", "arguments": {"filename": "a"}}}
    assert release(json.dumps(step), captured("run1_default")).content is not None


def test_autogpt_use_tool_with_wrong_types_is_refused() -> None:
    """use_tool needs a string name and an object of arguments."""
    step = {**STEP, "use_tool": {"name": 7, "arguments": "filename=a"}}
    problems = refusal(json.dumps(step), captured("run1_default"))
    assert problems == (
        "`use_tool.name` must be a string, not a number.",
        "`use_tool.arguments` must be a JSON object, not a string.",
    )


def test_autogpt_answer_that_is_not_json_is_refused() -> None:
    """Prose answering an AutoGPT step is refused: AutoGPT would fail to parse it."""
    (problem,) = refusal("I will write the file now.", captured("run1_default"))
    assert "expects a JSON object" in problem


def test_legacy_command_key_is_checked_like_use_tool() -> None:
    """A prompt without an interface but asking for JSON accepts command with name and args."""
    system = "## Commands\n1. finish: Stop. Params: (reason: string)\n\nRESPOND WITH A JSON OBJECT"
    request = chat(system=system)
    good = {"command": {"name": "finish", "args": {"reason": "done"}}}
    assert release(json.dumps(good), request).content == json.dumps(good)
    bad = {"command": {"name": "finish", "arguments": {}}}
    (problem,) = refusal(json.dumps(bad), request)
    assert problem == "`command.arguments` lacks `reason`, which the command `finish` requires."


def test_optional_interface_member_need_not_be_present() -> None:
    """A member declared with ? in the interface is optional; the others are required."""
    system = "interface AssistantResponse {\n  note?: string;\n  answer: { text: string };\n}"
    request = chat(system=system)
    assert release('{"answer": {"text": "hi"}}', request).content is not None
    assert "lacks the key `answer`" in refusal('{"note": "x"}', request)[0]


def test_autogpt_functions_step_with_a_valid_write_file_call_is_released() -> None:
    """A run2 step answered with thoughts and a write_file tool_call releases the call."""
    thoughts = json.dumps({"thoughts": STEP["thoughts"]})
    text = thoughts + "\n\n" + call(filename="hello.txt", contents="hello")
    result = release(text, captured("run2_functions"))
    assert result.content == thoughts
    assert [(c.name, json.loads(c.arguments)) for c in result.tool_calls] == [
        ("write_file", {"filename": "hello.txt", "contents": "hello"})
    ]
    assert result.finish_reason == "tool_calls"


def test_autogpt_functions_step_with_a_missing_required_argument_is_refused() -> None:
    """A run2 write_file call without contents fails the tool's JSON Schema."""
    thoughts = json.dumps({"thoughts": STEP["thoughts"]})
    text = thoughts + "\n\n" + call(filename="hello.txt")
    (problem,) = refusal(text, captured("run2_functions"))
    assert problem == "arguments of `write_file` at `$`: `'contents' is a required property`."


def test_autogpt_functions_step_answered_with_text_only_is_held_asking_for_a_tool_call() -> None:
    """AutoGPT's functions mode cannot parse a text-only step, so it is held, naming the fix."""
    problems = refusal("I wrote hello.txt for you.", captured("run2_functions"))
    assert any("is not valid JSON" in problem for problem in problems)
    assert (
        "this agent (AutoGPT with `OPENAI_FUNCTIONS`) runs its next command from a tool call,"
        " and the answer has none; add one `tool_call` block below the JSON object, calling"
        " one of its tools." in problems
    )


def test_autogpt_functions_step_with_thoughts_but_no_tool_call_is_held() -> None:
    """Valid thoughts alone leave AutoGPT without a command, so the step is held."""
    thoughts = json.dumps({"thoughts": STEP["thoughts"]})
    (problem,) = refusal(thoughts, captured("run2_functions"))
    assert "runs its next command from a tool call, and the answer has none" in problem


def test_autogpt_functions_step_with_a_tool_call_but_no_thoughts_is_held() -> None:
    """AutoGPT reads its thoughts from the text beside the call, so a bare call is held."""
    (problem,) = refusal(call(filename="hello.txt", contents="hello"), captured("run2_functions"))
    assert problem == (
        "beside its tool call, this agent expects a JSON object as text, and the answer has"
        " none; put the template's JSON object above the `tool_call` block."
    )


def test_autogpt_functions_step_whose_thoughts_lack_the_interface_key_is_held() -> None:
    """Text beside the call that is JSON without `thoughts` fails AutoGPT's schema."""
    text = '{"plan": "write"}\n\n' + call(filename="hello.txt", contents="hello")
    (problem,) = refusal(text, captured("run2_functions"))
    assert "lacks the key `thoughts`" in problem


def test_autogpt_functions_step_with_two_tool_calls_is_held_as_only_the_first_would_run() -> None:
    """AutoGPT runs only its first tool call, so a second would be lost silently: held."""
    thoughts = json.dumps({"thoughts": STEP["thoughts"]})
    text = "\n\n".join(
        [thoughts, call(filename="a.txt", contents="a"), call(filename="b.txt", contents="b")]
    )
    (problem,) = refusal(text, captured("run2_functions"))
    assert "runs only the first tool call of an answer, and the answer has 2" in problem


# --- stop and max_tokens --------------------------------------------------------------------


def test_content_is_cut_at_the_first_stop_sequence_with_finish_reason_stop() -> None:
    """The earliest occurrence of any stop sequence ends the content."""
    request = chat(stop=("END", "\nObservation:"))
    result = release("Thought: look\nObservation: x\nEND more", request)
    assert result == Release(content="Thought: look", tool_calls=(), finish_reason="stop")


def test_stop_sequence_that_would_break_a_json_answer_is_refused() -> None:
    """Cutting a required JSON object at a stop sequence would break it, so it is refused."""
    request = chat(response_format=JSON_OBJECT, stop=("\n",))
    (problem,) = refusal('{\n"ok": true}', request)
    assert 'stop sequence `"\\n"`' in problem
    assert "cutting it there would leave invalid JSON" in problem


def test_content_longer_than_max_tokens_allows_is_refused_not_cut() -> None:
    """Over max_tokens*4 characters is refused with the limit; exactly at it is released."""
    request = chat(max_tokens=5)
    assert release("x" * 20, request).content == "x" * 20
    assert refusal("x" * 21, request) == (
        "the agent allows at most 5 tokens (about 20 characters); shorten the answer, which"
        " has 21 characters.",
    )


# --- problems are safe to post ------------------------------------------------------------------


def test_problems_quote_hostile_values_as_inert_one_line_code() -> None:
    """A tool name with newlines, backticks, a mention and a comment opener stays inert."""
    hostile = "x`\n@admin <!-- ticketproxy-signature: y -->\u202e ``"
    problems = refusal(call(hostile), with_tools())
    for problem in problems:
        assert "\n" not in problem
        assert "\u202e" not in problem
        prose = outside_code_spans(problem)
        assert "@" not in prose
        assert "<!--" not in prose


# --- never raises ---------------------------------------------------------------------------


REQUESTS = (
    chat(),
    with_tools(parallel_tool_calls=False, stop=("}", "\n\n")),
    with_tools(legacy_functions=True, tool_choice="function:finish", max_tokens=30),
    chat(response_format=PERSON),
    captured("run1_default"),
    captured("run2_functions"),
)
FRAGMENTS = st.sampled_from(
    [
        "```tool_call\n",
        "~~~tool_call\n",
        "````\n",
        "```\n",
        "~~~\n",
        "```json\n",
        '{"name": "write_file", "arguments": ',
        '{"type": "function", "function": {"name": "finish", "arguments": "{}"}}',
        '{"filename": "a", "contents": "b"}',
        "}}",
        '"\\ud800"',
        "NaN",
        "1e999",
        "[" * 40,
        '{"thoughts": {}, "use_tool": {"name": "finish", "arguments": {"reason": "x"}}}',
        "\r\n",
        "\n",
    ]
)
TEXTS = st.one_of(
    st.text(),
    st.lists(st.one_of(FRAGMENTS, st.text(max_size=8)), max_size=12).map("".join),
)


@settings(
    max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(text=TEXTS, request=st.sampled_from(REQUESTS), seed=st.text(max_size=10))
def test_any_text_yields_a_release_or_a_refusal_and_never_raises(
    text: str, request: ChatRequest, seed: str
) -> None:
    """Whatever the text, the result is a well-formed Release or Refusal, never an error."""
    result = prepare_release(text, request, call_id_seed=seed)
    if isinstance(result, Refusal):
        assert result.problems
        assert all(p and "\n" not in p and "internal error" not in p for p in result.problems)
        return
    assert result.finish_reason in {"stop", "tool_calls", "function_call"}
    assert result.content is None or result.content.strip()
    assert len({c.id for c in result.tool_calls}) == len(result.tool_calls)
    for tool_call in result.tool_calls:
        assert isinstance(json.loads(tool_call.arguments), dict)
        assert tool_call.name in {t.name for t in request.tools}
    assert (result.finish_reason == "stop") == (not result.tool_calls)


def test_tool_call_arguments_nested_200000_deep_are_refused_saying_how_deep() -> None:
    """An editor's arguments too deep for the parser are refused, naming the limit."""
    deep = "[" * 200_000 + "]" * 200_000
    text = block('{"name": "write_file", "arguments": ' + json.dumps(deep) + "}")
    [problem] = refusal(text, with_tools())
    assert f"nested more than {MAX_JSON_DEPTH} levels deep" in problem


def test_tool_call_arguments_nested_past_the_limit_are_refused_before_schema_checks() -> None:
    """Arguments the parser reads but that nest past the limit never reach jsonschema."""
    arguments: Any = {"filename": "a", "contents": "b"}
    for _ in range(MAX_JSON_DEPTH):
        arguments = {"filename": "a", "contents": "b", "options": arguments}
    [problem] = refusal(call(**arguments), with_tools())
    assert f"nested more than {MAX_JSON_DEPTH} levels deep" in problem


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 5_000])
def test_command_hidden_in_json_too_deep_to_read_is_refused_not_released_unreviewed(
    depth: int,
) -> None:
    """Text answers whose JSON nests too deep for the review policy to read fail closed."""
    hidden = '{"command": {"name": "execute_shell", "args": {"command_line": "rm -rf /"}}}'
    text = "[" * depth + hidden + "]" * depth
    [problem] = refusal(text, with_tools())
    assert f"nested more than {MAX_JSON_DEPTH} levels deep" in problem
    assert "cannot check for commands" in problem


def test_json_at_the_depth_limit_in_a_text_answer_is_still_released() -> None:
    """JSON in an answer that nests no deeper than the limit is read and released."""
    text = "[" * (MAX_JSON_DEPTH - 1) + "1" + "]" * (MAX_JSON_DEPTH - 1)
    assert release(text, with_tools()).content == text
