"""Tests for the how-to on tickets, steps, review requests and drafts: no misleading examples.

A ticket explains a tool call only when its request offers tools, names the real issue
wherever the issue exists already, and points to the issue's first post for a table that a
step comment leaves out.
"""

from __future__ import annotations

import json

from tests.helpers.autogpt_samples import SAMPLES
from tests.helpers.render_requests import CREATED, DEADLINE, chat, render, request_from_body
from ticketing.render.drafts import draft_digest, render_draft_comment
from ticketing.render.replies import render_needs_review_notice
from ticketing.render.ticket import render_step
from ticketing.request import ChatRequest, Message, ToolSpec

ISSUE = "https://github.com/acme/tickets/issues/12"
SHELL = ToolSpec(
    name="run_tests",
    description="Run the test suite.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)


def _step(request: ChatRequest, *, tools_changed: bool = False) -> str:
    """Render step 2 of a run on issue #12, whose address is known."""
    return render_step(
        request,
        step=2,
        new_from=0,
        changed=(),
        tools_changed=tools_changed,
        request_id="req_43",
        created=CREATED,
        deadline=DEADLINE,
        repo="acme/tickets",
        issue_number=12,
        issue_url=ISSUE,
    ).body


def test_a_ticket_without_tools_shows_no_tool_call_example() -> None:
    """A plain chat request's how-to never shows a tool call, let alone an invented one."""
    body = render(chat(Message(role="user", content="Summarise the release notes."))).body
    how_to = body[body.index("## How to answer") :]
    assert "tool_call" not in how_to
    assert "execute_shell" not in body


def test_a_ticket_with_tools_points_to_its_own_template_not_an_invented_tool() -> None:
    """With tools offered, the how-to refers to the template, which calls a real tool."""
    body = render(chat(Message(role="user", content="Run the tests."), tools=(SHELL,))).body
    how_to = body[body.index("## How to answer") :]
    assert "`tool_call` block like the one in the answer template above" in how_to
    assert "execute_shell" not in body
    assert '"name": "run_tests"' in body[: body.index("## How to answer")]


def test_a_step_comment_names_the_real_issue_instead_of_a_placeholder() -> None:
    """By the time a step is posted its issue exists, so the command names its address."""
    body = _step(chat(Message(role="user", content="And now the linter.")))
    assert f"ticketproxy answer {ISSUE} --step 2" in body
    assert "<this issue's URL>" not in body


def test_a_step_whose_tools_are_unchanged_points_to_the_first_post_for_the_table() -> None:
    """The notes do not say "the table below" when the step comment has no table."""
    body = _step(chat(Message(role="user", content="Run them again."), tools=(SHELL,)))
    assert "the table in the issue's first post" in body
    assert "the table below" not in body


def test_a_step_whose_tools_changed_keeps_its_own_table_below() -> None:
    """A step that shows its own table still says the table is below."""
    body = _step(
        chat(Message(role="user", content="Run them again."), tools=(SHELL,)),
        tools_changed=True,
    )
    assert "the table below" in body
    assert "| run\\_tests | Run the test suite" in body[body.index("the table below") :]


def test_a_review_request_names_the_real_issue_in_its_commands() -> None:
    """The reviewers' approve and reject commands carry the issue's address."""
    notice = render_needs_review_notice(
        comment_url=f"{ISSUE}#issuecomment-99",
        author="alice",
        required=1,
        commands=["rm -rf build"],
        findings=[("shell", "runs a shell command")],
        reviewers=["bob"],
        comment_id=99,
        digest="d" * 64,
    )
    assert f"ticketproxy approve {ISSUE} --key" in notice
    assert f"ticketproxy reject {ISSUE} --key" in notice
    assert "<this issue's URL>" not in notice


def test_a_review_request_for_an_address_that_is_no_url_keeps_the_placeholder() -> None:
    """An address that is not a plain http(s) URL is never pasted into a command."""
    notice = render_needs_review_notice(
        comment_url="javascript:alert(1)",
        author="alice",
        required=1,
        commands=["rm -rf build"],
        findings=[],
        reviewers=[],
        comment_id=99,
        digest="d" * 64,
    )
    assert "javascript:" not in notice.split("approve with", 1)[1]
    assert "<this issue's URL>" in notice


def test_a_draft_names_the_real_issue_in_its_commands() -> None:
    """A draft's sign-it-unchanged and edit-it commands carry the issue's address."""
    text = "The tests pass."
    comment = render_draft_comment(
        text, model="gpt-4o", digest=draft_digest(text), issue_url=ISSUE + "#issuecomment-5"
    )
    assert f"ticketproxy answer {ISSUE} --draft" in comment
    assert f"ticketproxy answer {ISSUE} --file" in comment


def test_autogpt_step_summary_side_call_asks_for_one_line_of_plain_text() -> None:
    """AutoGPT's history-summary side call is templated for what it asks: one plain line."""
    captured = json.loads(
        (SAMPLES / "run1_default" / "005_POST_v1_chat_completions.json").read_text()
    )
    body = render(request_from_body(captured["body"])).body
    guide = body[body.index("## Answer template") : body.index("## How to answer")]
    assert "condensed into one line" in guide
    assert "no JSON, no command, no tool call" in guide
    assert "```json" not in guide
