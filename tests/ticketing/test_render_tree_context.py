"""The trimmed context of a child issue deep in a long run (pure rendering)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ticketing.render.tree_context import (
    MAX_LINES,
    PathStep,
    Subtree,
    render_child_ticket,
    render_tree_context,
)
from ticketing.request import ChatRequest, Message

CREATED = datetime(2026, 11, 21, 20, 0, tzinfo=UTC)
DIGEST = "3f2a9c1e0b4d" + "0" * 52


def _answered(number: int, step: int, title: str = "Deploy?") -> Subtree:
    url = f"https://github.com/acme/desk/issues/{number}#issuecomment-9{number}"
    return Subtree(number, step, title, "answered", "alice", DIGEST, url)


def test_open_path_is_shown_in_full_with_its_answers() -> None:
    """Every step on the path from the root shows its question and signed answer whole."""
    path = [
        PathStep(1, 1, "First question, long " + "x" * 500, "First answer.", "alice"),
        PathStep(100, 150, "Block parent question", "Its answer.", "bob"),
    ]
    text = render_tree_context(path, [])
    assert "First question, long " + "x" * 500 in text
    assert "Block parent question" in text
    assert "answered by bob" in text
    assert "Its answer." in text


def test_closed_subtree_is_one_line_with_title_signer_and_linked_digest() -> None:
    """A closed child off the path is one line: issue, title, who answered, digest linked."""
    text = render_tree_context([], [_answered(57, 51, "Switch mirror?")])
    lines = [line for line in text.splitlines() if line.startswith("- #57")]
    assert len(lines) == 1
    assert "Switch mirror" in lines[0]
    assert "alice" in lines[0]
    assert (
        "[`sha256:3f2a9c1e0b4d`](<https://github.com/acme/desk/issues/57#issuecomment-957>)"
        in (lines[0])
    )


def test_overdue_subtree_is_marked_stale_not_inlined() -> None:
    """An expired child is one line marked stale, with no answer or text of it inlined."""
    text = render_tree_context([], [Subtree(60, 54, "Old question", "expired")])
    assert "- #60 step 54: Old question · **stale** (expired unanswered)" in text


def test_agent_text_in_a_collapsed_title_pings_nobody() -> None:
    """A title holding ``@someone`` or a link is rendered inert, one line."""
    text = render_tree_context([], [_answered(57, 51, "ask @security [x](http://evil)\nmore")])
    line = next(line for line in text.splitlines() if line.startswith("- #57"))
    assert "@security" not in line
    assert "](http://evil)" not in line


def test_however_long_the_run_only_the_newest_lines_are_listed() -> None:
    """Past ``MAX_LINES`` collapsed subtrees, the older ones are counted in one line."""
    subtrees = [_answered(n, n + 49) for n in range(2, 800)]
    text = render_tree_context([], subtrees)
    listed = [line for line in text.splitlines() if line.startswith("- #")]
    assert len(listed) == MAX_LINES
    assert listed[-1].startswith("- #799 ")
    assert f"- {len(subtrees) - MAX_LINES} earlier sub-issues (#2 to #" in text
    assert len(text) < 15_000


def test_child_ticket_shows_the_context_and_only_the_new_messages() -> None:
    """The body keeps the system prompt and the step's new messages; earlier ones are trimmed."""
    messages = (
        Message(role="system", content="You are a build agent."),
        Message(role="user", content="OLD QUESTION"),
        Message(role="assistant", content="OLD ANSWER"),
        Message(role="user", content="NEW QUESTION"),
    )
    request = ChatRequest(model="gpt-4o", messages=messages, key="ab" * 32)
    rendered = render_child_ticket(
        request,
        context=render_tree_context([PathStep(1, 1, "Root question", "Root answer", "alice")], []),
        new_from=3,
        request_id="req_1",
        created=CREATED,
        deadline=CREATED + timedelta(hours=1),
        repo="acme/desk",
    )
    assert "NEW QUESTION" in rendered.body
    assert "OLD QUESTION" not in rendered.body
    assert "You are a build agent." in rendered.body
    assert "Root question" in rendered.body
