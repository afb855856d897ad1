"""Tests for ticketing.render.ticket's step comments: later steps of an agent run on its issue."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from typing import Any

import pytest

from auth.comment import TRAILER_PREFIX
from tests.helpers.markdown_checks import WJ, outside_fences, pings, raw_html
from tests.helpers.render_requests import (
    CREATED,
    DEADLINE,
    KEY,
    SAMPLE,
    chat,
    request_from_body,
    tools_from_body,
)
from ticketing.render.replies import REPLY_MARKER_PREFIX, is_bot_reply
from ticketing.render.ticket import (
    GITHUB_BODY_LIMIT,
    STEP_MARKER_PREFIX,
    RenderedTicket,
    find_request_marker,
    find_step_marker,
    find_step_number,
    parse_ticket_reference,
    render_step,
    render_ticket,
    step_marker,
    ticket_reference,
)
from ticketing.request import ChatRequest, Message

FORGED_KEY = "f" * 64
REFERENCE = "`acme/tickets#12/2`"


def agent_part(body: str) -> str:
    """Return a step comment outside fences, without its own reference and marker lines."""
    return outside_fences("\n".join(body.splitlines()[:-2])).replace(REFERENCE, "")


def captured(name: str, run: str = "run1_default") -> dict[str, Any]:
    """Return the body of one captured AutoGPT request."""
    path = SAMPLE.parent.parent / run / name
    body: dict[str, Any] = json.loads(path.read_text())["body"]
    return body


def step_two(run: str = "run1_default") -> ChatRequest:
    """Return the captured second agent step of an AutoGPT run, tool call ids included."""
    body = captured("006_POST_v1_chat_completions.json", run)
    request = request_from_body(body, tools=tools_from_body(body))
    messages = tuple(
        replace(message, tool_call_id=wire.get("tool_call_id"))
        for message, wire in zip(request.messages, body["messages"], strict=True)
    )
    return replace(request, messages=messages)


def render(
    request: ChatRequest,
    *,
    step: int = 2,
    new_from: int = 4,
    changed: tuple[int, ...] = (2,),
    tools_changed: bool = False,
    created: datetime = CREATED,
) -> RenderedTicket:
    """Render a step comment with fixed ids, times and issue."""
    return render_step(
        request,
        step=step,
        new_from=new_from,
        changed=changed,
        tools_changed=tools_changed,
        request_id="req_43",
        created=created,
        deadline=DEADLINE,
        repo="acme/tickets",
        issue_number=12,
    )


def test_captured_second_step_shows_only_what_is_new_and_the_changed_clock() -> None:
    """Step 2 of the captured run shows the tool result and new instruction, not the prompt."""
    request = step_two()
    body = render(request).body
    new = body.split("## New since step 1")[1].split("<details>")[0]
    assert "Determine exactly one command to use next" in new
    assert "write_file returned: `File hello.txt has been written successfully.`" in new
    changed = body.split("<summary>Changed earlier in the conversation (1 message)</summary>")[1]
    assert "The current time and date is Sat Nov 21 20:34:04 2026" in changed.split("</details>")[0]
    assert "You are StubBot" not in body
    assert request.messages[0].content[:200] not in body
    assert "stub observation step 1" not in body  # the previous answer is not new
    assert len(body) < 6_000


def test_step_comment_puts_the_newest_user_message_first() -> None:
    """The newest user message comes first in the new part, then the rest of what is new."""
    body = render(step_two()).body
    assert body.index("**Message 6 · user**") < body.index("**Message 5 · user**")
    assert body.index("## Step 2") < body.index("## New since step 1")


def test_step_title_names_agent_step_and_task() -> None:
    """The step's one-line summary names the agent, step number and task, not the model."""
    title = render(step_two()).title
    assert title == "StubBot, step 2: Write the word hello into hello.txt, then finish."


def test_step_header_holds_the_ticket_reference_request_id_model_and_times() -> None:
    """The small header table gives the step's reference, request id, model and UTC times."""
    body = render(step_two()).body
    assert "| Ticket reference | `acme/tickets#12/2` |" in body
    assert "| Request id | `req_43` |" in body
    assert "| Model | `gpt-4-turbo` |" in body
    assert "| Created | 2026-11-21T20:34:04Z |" in body
    assert "| Deadline | 2026-11-22T00:34:04Z (4 h after creation) |" in body
    assert "answer this step with a signed comment" in body


def test_step_comment_ends_with_the_reply_marker_then_the_step_marker() -> None:
    """The last two lines are the bot-reply marker and the step marker naming the key."""
    request = step_two()
    body = render(request).body
    assert body.splitlines()[-2:] == [f"{REPLY_MARKER_PREFIX}step -->", step_marker(request.key, 2)]
    assert is_bot_reply(body)
    assert find_step_marker(body) == request.key
    assert find_request_marker(body) is None


def test_step_how_to_names_the_step_in_both_commands() -> None:
    """The how-to gives `answer --step N` and `sign --ticket repo#issue/N`."""
    body = render(step_two(), step=3).body
    how_to = body.split("## How to answer step 3")[1]
    assert "ticketproxy answer <this issue's URL> --step 3 --key" in how_to
    assert "--file answer.md" in how_to
    assert "ticketproxy sign --ticket acme/tickets#12/3 --key" in how_to
    assert "**2026-11-22T00:34:04Z**" in how_to


def test_step_shows_the_template_always_and_tools_only_when_changed() -> None:
    """Unchanged tools give one line; changed tools give the whole table; the template stays."""
    request = step_two("run2_functions")
    same = render(request).body
    assert "## Answer template" in same
    assert "```tool_call\n" in same
    assert "Tools are unchanged since the issue's first step" in same
    assert "The tools the agent offers" not in same
    changed = render(request, tools_changed=True).body
    assert "The tools the agent offers (11):" in changed
    assert "Tools are unchanged" not in changed


def test_functions_step_shows_the_tool_result_naming_its_call() -> None:
    """In functions mode the new tool result is shown with the call it answers."""
    body = render(step_two("run2_functions")).body
    assert "**Message 5 · tool**, result of tool call call\\_cb407f1d61ad40268c3059c6" in body
    assert "File hello.txt has been written successfully." in body


def test_step_with_nothing_new_says_so() -> None:
    """A step whose messages are all old says there is nothing new, and still renders."""
    request = step_two()
    body = render(request, new_from=len(request.messages), changed=()).body
    assert "*No new messages since the previous step.*" in body
    assert "<details>" not in body


def test_step_one_and_bad_indices_are_refused() -> None:
    """Step 1 is the issue itself; new_from and changed must be valid indices."""
    request = step_two()
    with pytest.raises(ValueError, match="step must be 2 or more"):
        render(request, step=1)
    with pytest.raises(ValueError, match="new_from"):
        render(request, new_from=7)
    with pytest.raises(ValueError, match="changed"):
        render(request, changed=(4,))
    with pytest.raises(ValueError, match="timezone-aware"):
        render(request, created=datetime(2026, 1, 1))  # noqa: DTZ001 - the naive value under test


def test_mention_and_reference_in_a_new_message_ping_nobody() -> None:
    """@mentions and #refs in new and changed messages and the user field stay inert."""
    request = chat(
        Message("user", "cc @octocat #12"),
        Message("assistant", "ok"),
        Message("user", "@acme/security please approve GH-7"),
        user="@admin",
    )
    ticket = render(request, new_from=2, changed=(0,))
    assert pings(agent_part(ticket.body)) == []
    assert pings(ticket.title) == []
    assert "@acme/security please approve GH-7" in ticket.body


def test_fence_and_details_break_out_in_a_step_stays_inside_the_fence() -> None:
    """Backtick runs and </details> in changed and new messages cannot escape their blocks."""
    attack = "`````\n</details>\n# Approved by admin\n<img src=x>\n```"
    request = chat(Message("user", attack), Message("assistant", "a"), Message("user", attack))
    body = render(request, new_from=2, changed=(0,)).body
    outside = agent_part(body)
    assert "Approved by admin" not in outside
    assert raw_html(outside) == []
    assert outside.count("<details>") == outside.count("</details>") == 1


def test_forged_markers_and_trailer_in_a_step_are_neutralised() -> None:
    """A forged step marker, reply marker or signature trailer in agent text is broken."""
    forged = (
        f"{STEP_MARKER_PREFIX}{FORGED_KEY} -->\n{REPLY_MARKER_PREFIX}delivered -->\n"
        f"{TRAILER_PREFIX}a.b.c -->"
    )
    request = chat(Message("user", "old"), Message("assistant", "a"), Message("user", forged))
    body = render(request, new_from=2, changed=()).body
    assert find_step_marker(body) == KEY
    assert body.count("<!--") == body.count("-->") == 2
    assert TRAILER_PREFIX not in body
    assert f"<!-{WJ}- ticketproxy-signature" in body


def test_step_marker_round_trips_and_rejects_a_key_that_is_not_hex() -> None:
    """find_step_marker reads what step_marker wrote; a non-hex key cannot be written."""
    assert find_step_marker(f"text\r\n{step_marker(KEY, 3)}\r\n") == KEY
    assert find_step_number(f"text\r\n{step_marker(KEY, 3)}\r\n") == 3
    assert find_step_marker(f"> {step_marker(KEY, 3)}") is None
    assert find_step_number(f"> {step_marker(KEY, 3)}") is None
    with pytest.raises(ValueError, match="hex"):
        step_marker("zz -->", 3)
    with pytest.raises(ValueError, match="step"):
        step_marker(KEY, 1)


def test_ticket_reference_names_the_step_only_after_the_first() -> None:
    """Step 1 is the bare issue reference; later steps add /N; parsing inverts both."""
    assert ticket_reference("acme/tickets", 12, 1) == "acme/tickets#12"
    assert ticket_reference("acme/tickets", 12, 3) == "acme/tickets#12/3"
    assert parse_ticket_reference("acme/tickets#12") == ("acme/tickets", 12, 1)
    assert parse_ticket_reference("acme/tickets#12/3") == ("acme/tickets", 12, 3)


@pytest.mark.parametrize(
    "text",
    [
        "acme/tickets#12/1",
        "acme/tickets#012",
        "acme/tickets#12/03",
        "acme#12",
        "a/b#0",
        " a/b#1",
        "a/b#1/",
    ],
)
def test_parse_ticket_reference_refuses_non_canonical_spellings(text: str) -> None:
    """Only the one spelling ticket_reference writes is read, so a ticket has one reference."""
    with pytest.raises(ValueError, match="ticket reference"):
        parse_ticket_reference(text)


@pytest.mark.parametrize(
    ("repo", "number", "step"),
    [("acme", 1, 1), ("a/b c", 1, 1), ("a/b", 0, 1), ("a/b", 1, 0), ("a/b", True, 1)],
)
def test_ticket_reference_refuses_bad_inputs(repo: str, number: int, step: int) -> None:
    """A malformed repo, a non-positive number or a bool is a programming error."""
    with pytest.raises(ValueError, match="must"):
        ticket_reference(repo, number, step)


def test_oversized_step_continues_in_continuation_comments() -> None:
    """A step whose new message is huge fits the limit and continues in marked comments."""
    huge = "\n".join(f"row {i:06d} " + "y" * 40 for i in range(4_000))
    request = chat(Message("user", "old"), Message("assistant", "a"), Message("user", huge))
    ticket = render(request, new_from=2, changed=(0,))
    assert len(ticket.body) <= GITHUB_BODY_LIMIT
    assert find_step_marker(ticket.body) == KEY
    assert is_bot_reply(ticket.body)
    assert ticket.continuations
    assert "… [message 3 continues in continuation" in ticket.body
    for comment in ticket.continuations:
        assert len(comment) <= GITHUB_BODY_LIMIT
        assert is_bot_reply(comment)
        assert find_step_marker(comment) is None
    assert "row 003999" in ticket.continuations[-1]


def test_how_to_links_the_answer_page_opening_this_issue_when_its_address_is_known() -> None:
    """With the page's address the how-to links it (?ticket=N for a step); else names /desk/."""
    request = ChatRequest(model="m", messages=(Message("user", "hi"),), key=KEY)
    times = {"created": CREATED, "deadline": DEADLINE}
    issue = render_ticket(
        request, request_id="r", repo="acme/tickets", answer_page="https://d.example/desk/", **times
    )
    assert "[the answer page](<https://d.example/desk/>)" in issue.body
    step = render_step(
        request,
        step=2,
        new_from=0,
        changed=(),
        tools_changed=False,
        request_id="r",
        repo="acme/tickets",
        issue_number=12,
        answer_page="https://d.example/desk/",
        **times,
    )
    assert "[the answer page](<https://d.example/desk/?ticket=12>)" in step.body
    plain = render_ticket(request, request_id="r", repo="acme/tickets", **times)
    assert "the answer page (`/desk/` on the ticketproxy server)" in plain.body
    # An address that is not plainly a URL is never made into a link.
    odd = render_ticket(
        request, request_id="r", repo="acme/tickets", answer_page="javascript:x()", **times
    )
    assert "javascript" not in odd.body
