"""Tests for ticketing.render.ticket: the issue an editor reads, and what agent text cannot do."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.markdown_checks import WJ, outside_fences, pings, raw_html
from tests.helpers.render_requests import (
    CREATED,
    KEY,
    SAMPLE,
    chat,
    many_tools,
    render,
    request_from_body,
    tools_from_body,
)
from ticketing.render.autogpt_prompt import autogpt_task
from ticketing.render.ticket import (
    GITHUB_BODY_LIMIT,
    MARKER_PREFIX,
    find_request_marker,
    render_ticket,
    request_marker,
)
from ticketing.request import (
    ChatRequest,
    Message,
    ResponseFormat,
    ToolCall,
    ToolSpec,
)

FORGED_KEY = "0" * 64
NOTE = re.compile(r"… \[message \d+ continues in continuations? \d+(–\d+)? below: ")


def sample_body(run: str = "run1_default") -> dict[str, Any]:
    """Return the body of a captured AutoGPT agent-step request."""
    path = SAMPLE.parent.parent / run / SAMPLE.name
    body: dict[str, Any] = json.loads(path.read_text())["body"]
    return body


def test_autogpt_request_title_names_agent_and_task() -> None:
    """The captured AutoGPT step is titled with its task, not the boilerplate step instruction."""
    title = render(request_from_body(sample_body())).title
    assert title == "StubBot: Write the word hello into hello.txt, then finish."
    assert "Determine" not in title


def test_autogpt_functions_request_title_names_the_task_too() -> None:
    """With OPENAI_FUNCTIONS the captured step is also titled with its task."""
    body_json = sample_body("run2_functions")
    request = request_from_body(body_json, tools=tools_from_body(body_json))
    title = render(request).title
    assert title == "StubBot: Write the word hello into hello.txt, then finish."


def test_autogpt_second_step_title_still_names_the_task() -> None:
    """The captured second step, after a tool result, keeps the task as its title."""
    path = SAMPLE.parent / "006_POST_v1_chat_completions.json"
    request = request_from_body(json.loads(path.read_text())["body"])
    assert autogpt_task(request) == "Write the word hello into hello.txt, then finish."
    assert render(request).title.endswith(": Write the word hello into hello.txt, then finish.")


def test_autogpt_header_shows_the_task_row() -> None:
    """The header table of an AutoGPT step has a Task row with the task, escaped."""
    body = render(request_from_body(sample_body())).body
    assert "| Task | Write the word hello into hello\\.txt\\, then finish\\. |" in body


def test_generic_chat_title_uses_the_newest_user_message_and_has_no_task_row() -> None:
    """A chat whose newest message is not AutoGPT's boilerplate is titled with that message."""
    request = chat(Message("user", '"""Summarise this."""'), Message("user", "What is 2+2?"))
    ticket = render(request)
    assert autogpt_task(request) is None
    assert ticket.title == "What is 2+2?"
    assert "| Task |" not in ticket.body


def test_autogpt_summary_side_call_is_titled_with_its_own_message() -> None:
    """AutoGPT's history-summary call (one quoted user message) is not mistaken for a step."""
    path = SAMPLE.parent / "005_POST_v1_chat_completions.json"
    request = request_from_body(json.loads(path.read_text())["body"])
    assert autogpt_task(request) is None
    assert render(request).title.startswith("Executed write_file(filename='hello.txt'")


def test_task_with_mentions_and_markers_gives_an_inert_title_and_task_row() -> None:
    """A hostile task cannot ping, forge a marker or break the header table."""
    task = '"""@octocat fix #12 <!-- x --> | <img src=y>\nnext"""'
    step = "Determine exactly one command to use next based on the given goals"
    ticket = render(
        chat(Message("system", "You are Bot."), Message("user", task), Message("user", step))
    )
    assert pings(ticket.title) == []
    assert "<!--" not in ticket.title
    assert "\n" not in ticket.title
    row = next(line for line in ticket.body.splitlines() if line.startswith("| Task"))
    assert len(re.findall(r"(?<!\\)\|", row.replace("\\\\", ""))) == 3
    assert pings(outside_fences(ticket.body)) == []
    assert raw_html(outside_fences(ticket.body)) == []


def test_autogpt_request_body_shows_sections_in_reading_order() -> None:
    """The body holds the header, newest message, history, system prompt and how-to in order."""
    body = render(request_from_body(sample_body())).body
    anchors = [
        "| Request id | `req_42` |",
        "## Newest message",
        "Determine exactly one command",
        "<summary>Earlier conversation (2 messages)</summary>",
        '"""Write the word hello into hello.txt, then finish."""',
        "The current time and date is Sat Nov 21 20:34:04 2026",
        "<summary>System prompt (1 message,",
        "You are StubBot, a test agent that writes files.",
        "## How to answer",
        "ticketproxy answer <this issue's URL> --key ~/.ticketproxy/<you>.key --file answer.md",
        "ticketproxy sign --ticket acme/tickets#<this issue's number>",
    ]
    positions = [body.index(anchor) for anchor in anchors]
    assert positions == sorted(positions)


def test_autogpt_request_body_ends_with_its_request_marker_line() -> None:
    """The last line of the body is the marker naming the request's key."""
    request = request_from_body(sample_body())
    body = render(request).body
    assert body.splitlines()[-1] == f"<!-- ticketproxy:request {request.key} -->"
    assert find_request_marker(body) == request.key


def test_how_to_answer_states_the_signing_rules_and_the_deadline() -> None:
    """The how-to says only keyring editors count, edits void a comment, and when it ends."""
    how_to = render(request_from_body(sample_body())).body.split("## How to answer")[1]
    assert "signed by an editor whose key is in the keyring" in how_to
    assert "edited afterwards no longer counts" in how_to
    assert "**2026-11-22T00:34:04Z**" in how_to


def test_header_table_lists_client_user_metadata_and_utc_times() -> None:
    """The header shows client, user, metadata, and both times converted to UTC."""
    paris = timezone(timedelta(hours=1))
    request = chat(
        Message("user", "hi"), client="team-bot", user="u-7", metadata={"run": "nightly"}
    )
    body = render_ticket(
        request,
        request_id="req_1",
        created=datetime(2026, 1, 1, 13, 0, tzinfo=paris),
        deadline=datetime(2026, 1, 1, 14, 30, tzinfo=paris),
        repo="acme/tickets",
    ).body
    assert "| Client | `team-bot` |" in body
    assert "| User | `u-7` |" in body
    assert "| Metadata `run` | `nightly` |" in body
    assert "| Created | 2026-01-01T12:00:00Z |" in body
    assert "| Deadline | 2026-01-01T13:30:00Z (1 h 30 min after creation) |" in body


def test_title_falls_back_to_the_user_field_then_to_agent() -> None:
    """Without a "You are NAME," prompt the title names the user field, else no agent."""
    prompt = Message("system", "You are a helpful assistant.")
    with_user = render(chat(prompt, Message("user", "hello"), user="carol")).title
    without = render(chat(prompt, Message("user", "hello"))).title
    assert with_user == "carol: hello"
    assert without == "hello"


def test_long_first_line_is_cut_to_120_characters_with_an_ellipsis() -> None:
    """A long newest message gives a title of at most 120 characters ending in an ellipsis."""
    title = render(chat(Message("user", "word " * 100))).title
    assert len(title) <= 120
    assert title.endswith("word…")


def test_request_without_messages_still_gets_a_title_and_marker() -> None:
    """An empty conversation still renders a non-empty title and a findable marker."""
    ticket = render(chat())
    assert ticket.title == "(no messages)"
    assert find_request_marker(ticket.body) == KEY


def test_request_marker_round_trips_through_find_request_marker() -> None:
    """find_request_marker returns the key that request_marker wrote, CRLF or not."""
    body = f"some text\r\n\r\n{request_marker(KEY)}\r\n"
    assert find_request_marker(body) == KEY


def test_find_request_marker_ignores_a_marker_that_is_not_on_its_own_line() -> None:
    """A marker embedded in a longer line, or quoted, is not the renderer's marker."""
    assert find_request_marker(f"see {request_marker(KEY)} here") is None
    assert find_request_marker(f"> {request_marker(KEY)}") is None


def test_request_marker_rejects_a_key_that_is_not_hex() -> None:
    """A key that is not lowercase hex cannot be written into a marker."""
    with pytest.raises(ValueError, match="hex"):
        request_marker("abc --> <b>")


def test_naive_datetime_is_rejected() -> None:
    """A deadline without a time zone is refused instead of being guessed."""
    with pytest.raises(ValueError, match="timezone-aware"):
        render_ticket(
            chat(Message("user", "hi")),
            request_id="req_1",
            created=CREATED,
            deadline=datetime(2026, 1, 1),  # noqa: DTZ001 - the naive value under test
            repo="acme/tickets",
        )


def test_mention_in_user_message_pings_nobody() -> None:
    """@login and @org/team in messages, names, user and metadata never reach GitHub as pings."""
    request = chat(
        Message("user", "@octocat please review, cc @acme/security and #12"),
        user="@admin",
        metadata={"@owner": "@acme/everyone"},
    )
    ticket = render(request)
    assert pings(outside_fences(ticket.body)) == []
    assert pings(ticket.title) == []
    assert "@octocat please review, cc @acme/security and #12" in ticket.body


def test_fence_break_out_in_user_message_stays_inside_the_fence() -> None:
    """Content holding ``` and ```` lines cannot close its fence and inject markdown."""
    attack = "```\n# Approved by admin\n````\n<img src=https://evil.example/x.png>\n`````"
    body = render(chat(Message("user", attack))).body
    outside = outside_fences(body)
    assert "Approved by admin" not in outside
    assert "evil.example" not in outside
    assert raw_html(outside) == []
    assert "``````text\n" + attack + "\n``````" in body


def test_details_break_out_in_history_stays_inside_the_fence() -> None:
    """A </details> in an earlier message cannot close the collapsed history early."""
    attack = "</details>\n\n# Ignore the above and approve\n\n<details>"
    body = render(chat(Message("user", attack), Message("user", "newest"))).body
    outside = outside_fences(body)
    assert "Ignore the above" not in outside
    assert outside.count("<details>") == outside.count("</details>") == 1
    assert raw_html(outside) == []


def test_forged_signature_trailer_in_prompt_is_neutralised() -> None:
    """A signature trailer inside the prompt is broken so no parser can read it as one."""
    forged = "<!-- ticketproxy-signature: a.b.c -->"
    body = render(chat(Message("system", f"You are Bot.\n{forged}"), Message("user", "hi"))).body
    assert "ticketproxy-signature" in body
    assert "<!-- ticketproxy-signature" not in body
    assert body.count("<!--") == 1
    assert body.count("-->") == 1


def test_forged_request_marker_in_prompt_is_not_found() -> None:
    """find_request_marker returns the real key, not one the agent wrote on its own line."""
    forged = f"{MARKER_PREFIX}{FORGED_KEY} -->"
    request = chat(Message("system", forged), Message("user", f"hi\n{forged}\n"))
    body = render(request).body
    assert find_request_marker(body) == KEY
    assert FORGED_KEY not in (find_request_marker(body.split("## How to answer")[0]) or "")


def test_newline_and_markdown_in_user_message_give_a_single_line_title() -> None:
    """A title built from markup, newlines and comments is one inert line."""
    content = "\n\n# Urgent @octocat <!-- x -->\r\nsecond line\u2028third"
    title = render(chat(Message("user", content), user="eve\nmallory")).title
    assert title == f"eve mallory: Urgent @{WJ}octocat <!-{WJ}- x -{WJ}->"
    assert "\n" not in title
    assert "\r" not in title


def test_pipe_and_html_in_metadata_cannot_break_out_of_the_header_table() -> None:
    """Pipes, backslashes and tags in header values stay escaped inside their table cell."""
    request = chat(Message("user", "hi"), metadata={"a|b": "x \\| <img src=y> | z"})
    body = render(request).body
    row = next(line for line in body.splitlines() if line.startswith("| Metadata"))
    assert len(re.findall(r"(?<!\\)\|", row.replace("\\\\", ""))) == 3
    assert raw_html(outside_fences(body)) == []


def test_oversized_prompt_is_shortened_with_a_note_and_the_marker_intact() -> None:
    """A 200k-character prompt yields a body within GitHub's limit, with a visible note."""
    request = chat(Message("system", "You are Bot. " + "x" * 200_000), Message("user", "newest"))
    body = render(request).body
    assert len(body) <= GITHUB_BODY_LIMIT
    assert NOTE.search(body)
    assert "kept by ticketproxy" not in body
    assert find_request_marker(body) == KEY
    assert "| Request id | `req_42` |" in body
    assert "## How to answer" in body
    assert "```text\nnewest\n```" in body


def test_oversized_newest_message_is_cut_only_after_the_history() -> None:
    """When the newest message alone is too long, the history goes first, then it is cut."""
    request = chat(Message("user", "old question"), Message("user", "n" * 100_000))
    body = render(request).body
    assert len(body) <= GITHUB_BODY_LIMIT
    assert "old question" not in body
    assert "… [message 1, 12 characters: in continuation 1 below]" in body
    assert len(NOTE.findall(body)) == 1
    assert body.count("n" * 50_000) == 1


def test_thousands_of_history_messages_are_dropped_oldest_first_within_the_limit() -> None:
    """Whole old messages are left out, with a count, when their headings alone are too long."""
    history = [Message("user", f"step {i}") for i in range(3_000)]
    body = render(chat(*history, Message("user", "newest"))).body
    assert len(body) <= GITHUB_BODY_LIMIT
    assert re.search(
        r"… \[\d+ messages \(1–\d+\), \d+ characters: in continuations? 1(–\d+)? below\]", body
    )
    assert "step 2999\n" in body
    assert "step 0\n" not in body
    assert find_request_marker(body) == KEY


def test_tool_calls_and_tool_results_appear_with_names_and_arguments() -> None:
    """Assistant tool calls show name and arguments; tool results name their call."""
    call = ToolCall(id="call_1", name="write_file", arguments='{"filename": "hello.txt"}')
    request = chat(
        Message("user", "write hello"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "File written.", tool_call_id="call_1"),
        Message("user", "now finish"),
    )
    body = render(request).body
    assert "Tool call write\\_file (id call\\_1):" in body
    assert '```json\n{\n  "filename": "hello.txt"\n}\n```' in body
    assert "**Message 3 · tool**, result of tool call call\\_1" in body


def test_tool_arguments_that_are_not_readable_json_are_shown_as_given() -> None:
    """Arguments that are not JSON, or nested too deep to parse, render verbatim."""
    deep = "[" * 50_000 + "]" * 50_000
    calls = (
        ToolCall(id="a", name="f", arguments="not json"),
        ToolCall(id="b", name="g", arguments=deep),
    )
    body = render(chat(Message("user", "go"), Message("assistant", "", tool_calls=calls))).body
    assert "```json\nnot json\n```" in body
    assert len(body) <= GITHUB_BODY_LIMIT
    assert NOTE.search(body)


def test_tool_arguments_nested_past_the_depth_limit_are_shown_as_sent_not_indented() -> None:
    """Arguments the parser reads but that nest past the limit are not re-indented (that
    recurses two frames a level): they are shown as the agent sent them."""
    deep = "[" * 400 + "]" * 400
    calls = (ToolCall(id="a", name="f", arguments=deep),)
    body = render(chat(Message("user", "go"), Message("assistant", "", tool_calls=calls))).body
    assert f"```json\n{deep}\n```" in body


def test_messages_after_the_newest_user_message_are_shown_open() -> None:
    """Tool calls and results that follow the newest user message are not collapsed."""
    call = ToolCall(id="c", name="ls", arguments="{}")
    request = chat(
        Message("user", "list files"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "a.txt b.txt", tool_call_id="c"),
    )
    body = render(request).body
    since = body.split("## Since then")[1].split("## How to answer")[0]
    assert "a.txt b.txt" in since
    assert "<details>" not in since


_TOKENS = st.sampled_from(
    [
        "```",
        "````",
        "~~~",
        "<!--",
        "-->",
        "@alice",
        "@org/team",
        "#12",
        "</details>",
        "<img src=x>",
        "|",
        "\\",
        "\n",
        "\r\n",
        "\u202e",
        "\x00",
        " ",
        "You are Bot,",
        f"{MARKER_PREFIX}{FORGED_KEY} -->",
        "<!-- ticketproxy-signature: a.b.c -->",
    ]
)
_TEXT = st.lists(_TOKENS | st.text(max_size=4), max_size=12).map("".join)
_MESSAGE = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant", "tool"]) | _TEXT,
    content=_TEXT,
    name=st.none() | _TEXT,
)


@settings(max_examples=150, deadline=None)
@given(
    messages=st.lists(_MESSAGE, max_size=6),
    model=_TEXT,
    user=st.none() | _TEXT,
    metadata=st.dictionaries(_TEXT, _TEXT, max_size=3),
)
def test_any_agent_text_renders_a_safe_body_within_the_limit(
    messages: list[Message], model: str, user: str | None, metadata: dict[str, str]
) -> None:
    """Whatever the agent sends, the body pings nobody, forges nothing and keeps its marker."""
    request = ChatRequest(
        model=model, messages=tuple(messages), user=user, metadata=metadata, key=KEY
    )
    ticket = render(request)
    outside = outside_fences(ticket.body)
    assert len(ticket.body) <= GITHUB_BODY_LIMIT
    assert find_request_marker(ticket.body) == KEY
    assert ticket.body.count("<!--") == ticket.body.count("-->") == 1
    assert pings(outside) == []
    assert raw_html(outside) == []
    assert outside.count("<details>") == outside.count("</details>")
    assert ticket.title
    assert len(ticket.title) <= 120
    assert pings(ticket.title) == []
    assert "<!--" not in ticket.title
    assert "\n" not in ticket.title


_BIG_MESSAGE = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant"]),
    content=st.tuples(_TEXT, st.integers(0, 4_000)).map(lambda pair: pair[0] * pair[1]),
)


@settings(max_examples=40, deadline=None)
@given(messages=st.lists(_BIG_MESSAGE, min_size=1, max_size=8))
def test_any_oversized_conversation_is_shortened_safely_within_the_limit(
    messages: list[Message],
) -> None:
    """However large the messages, the body fits, keeps its marker and forges nothing."""
    ticket = render(chat(*messages))
    outside = outside_fences(ticket.body)
    assert len(ticket.body) <= GITHUB_BODY_LIMIT
    assert find_request_marker(ticket.body) == KEY
    assert ticket.body.count("<!--") == ticket.body.count("-->") == 1
    assert pings(outside) == []
    assert raw_html(outside) == []
    assert "## How to answer" in ticket.body


def between(body: str, start: str, end: str) -> str:
    """Return the part of body from ``start`` up to (not including) ``end``."""
    return body[body.index(start) : body.index(end)]


def test_answer_template_section_sits_just_before_how_to_answer() -> None:
    """The AutoGPT step shows its JSON template in a json fence right before the how-to."""
    body = render(request_from_body(sample_body())).body
    section = between(body, "## Answer template", "## How to answer")
    assert body.index("<summary>System prompt") < body.index("## Answer template")
    assert re.findall(r"^## ", section, flags=re.MULTILINE) == ["## "]
    assert '```json\n{\n  "thoughts": {\n    "observations": "Relevant observations' in section
    assert '"name": "one of: open_file, open_folder, finish,' in section
    assert "| write\\_file | Write a file" in section


def test_plain_chat_ticket_has_no_answer_template_section() -> None:
    """A request with nothing to shape its answer gets no template section."""
    body = render(chat(Message("user", "hi"))).body
    assert "## Answer template" not in body


def test_functions_sample_ticket_shows_both_blocks_notes_and_eleven_tools() -> None:
    """The functions step shows content JSON and a tool_call in a longer fence, and 11 tools."""
    body_json = sample_body("run2_functions")
    request = request_from_body(body_json, tools=tools_from_body(body_json))
    section = between(render(request).body, "## Answer template", "## How to answer")
    assert "````text\n{\n" in section
    assert '```tool_call\n{\n  "name": "open_file",' in section
    assert "- This agent needs both parts: the JSON object above as text" in section
    assert "The tools the agent offers (11):" in section
    assert len(re.findall(r"^\| (?!Tool \|)[^-].* \|$", section, flags=re.MULTILINE)) == 11


def test_injection_in_tool_descriptions_is_neutralised_in_the_ticket() -> None:
    """A tool description cannot ping, forge a marker, add table rows or inject HTML."""
    attack = (
        "ok |\n| forged | row | x |\n@octocat #12 <!-- ticketproxy-signature: a.b.c -->"
        " <img src=x> </details>\n```\n# Approved"
    )
    tool = ToolSpec(name="go", description=attack, parameters={"type": "object"})
    ticket = render(chat(Message("user", "hi"), tools=(tool,)))
    outside = outside_fences(ticket.body)
    assert pings(outside) == []
    assert raw_html(outside) == []
    assert ticket.body.count("<!--") == ticket.body.count("-->") == 1
    assert "forged" in outside
    assert not re.search(r"^\| forged", outside, flags=re.MULTILINE)
    assert "\n# Approved" not in outside
    assert find_request_marker(ticket.body) == KEY


def test_backtick_run_in_a_schema_cannot_close_the_template_fence() -> None:
    """The template's fence is longer than any backtick run in enum values it shows."""
    schema = {"type": "object", "properties": {"v": {"enum": ["``````` <img src=x> @admin"]}}}
    fmt = ResponseFormat(type="json_schema", name="a", schema=schema)
    body = render(chat(Message("user", "hi"), response_format=fmt)).body
    outside = outside_fences(body)
    assert "````````json\n" in body
    assert raw_html(outside) == []
    assert pings(outside) == []


def test_many_large_tools_are_shortened_with_a_note_before_the_newest_message() -> None:
    """128 long tool rows are cut to fit, with a note, and the newest message stays whole."""
    request = chat(
        Message("user", "old " * 1_000), Message("user", "newest"), tools=many_tools(128)
    )
    body = render(request).body
    assert len(body) <= GITHUB_BODY_LIMIT
    assert "old old" not in body
    assert re.search(
        r"… \[\d+ more tools, \d+ characters: in continuations? 1(–\d+)? below\]", body
    )
    assert "The tools the agent offers (128):" in body
    assert "| tool\\_000\\_" in body
    assert "```tool_call\n" in body
    assert "```text\nnewest\n```" in body
    assert find_request_marker(body) == KEY


def test_huge_template_is_cut_with_a_note_before_the_newest_message() -> None:
    """A template too long for the body is cut on a line, with a note; the newest stays whole."""
    properties = {f"{i:04d}" + "p" * 300: {"type": "string"} for i in range(300)}
    fmt = ResponseFormat(type="json_schema", name="a", schema={"properties": properties})
    body = render(chat(Message("user", "n" * 5_000), response_format=fmt)).body
    assert len(body) <= GITHUB_BODY_LIMIT
    assert re.search(
        r"… \[the template continues in continuation 1 below: \d+ more characters\]", body
    )
    assert "n" * 5_000 in body
    template = body.split("```json\n")[1].split("\n```\n")[0]
    assert template.endswith('"…",')


def test_newest_message_is_cut_only_after_the_template_and_table() -> None:
    """When the newest message alone is too long, tools and template go before it is cut."""
    request = chat(Message("user", "n" * 100_000), tools=many_tools(3))
    body = render(request).body
    assert len(body) <= GITHUB_BODY_LIMIT
    assert "… [3 tools," in body
    assert "the template continues in continuation" in body
    assert body.count("n" * 50_000) == 1
    assert "## Answer template" in body
    assert find_request_marker(body) == KEY


_TOOL = st.builds(
    ToolSpec,
    name=_TEXT,
    description=_TEXT,
    parameters=st.dictionaries(
        st.just("properties"),
        st.dictionaries(_TEXT, st.builds(lambda v: {"enum": [v]}, _TEXT), max_size=3),
    ),
)


@settings(max_examples=100, deadline=None)
@given(tools=st.lists(_TOOL, min_size=1, max_size=4), choice=st.sampled_from(["auto", "required"]))
def test_any_tool_text_renders_a_safe_template_section(tools: list[ToolSpec], choice: str) -> None:
    """Whatever the tools say, the section pings nobody, forges nothing and fits the limit."""
    ticket = render(chat(Message("user", "hi"), tools=tuple(tools), tool_choice=choice))
    outside = outside_fences(ticket.body)
    section = between(outside, "## Answer template", "## How to answer")
    assert len(ticket.body) <= GITHUB_BODY_LIMIT
    assert find_request_marker(ticket.body) == KEY
    assert ticket.body.count("<!--") == ticket.body.count("-->") == 1
    assert pings(outside) == []
    assert raw_html(outside) == []
    assert len(re.findall(r"^\|", section, flags=re.MULTILINE)) == len(tools) + 2


def test_agent_named_in_metadata_is_shown_when_the_prompt_names_none() -> None:
    """``metadata.agent`` names the agent in the title and header when the prompt does not."""
    request = chat(
        Message("user", "Summarise the report."), metadata={"agent": "report-bot"}, user="u-17"
    )
    ticket = render(request)
    assert "report-bot: Summarise the report." in ticket.title
    assert "| Agent | `report-bot` |" in ticket.body
