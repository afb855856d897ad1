"""Tests for continuation comments: text over GitHub's body limit is split, never cut."""

from __future__ import annotations

import re

from auth.comment import TRAILER_PREFIX
from tests.helpers.markdown_checks import WJ, outside_fences, pings, raw_html
from tests.helpers.render_requests import KEY, chat, many_tools, render
from ticketing.render.continuations import MAX_CONTINUATIONS
from ticketing.render.replies import REPLY_MARKER_PREFIX, is_bot_reply
from ticketing.render.ticket import (
    GITHUB_BODY_LIMIT,
    MARKER_PREFIX,
    RenderedTicket,
    find_request_marker,
)
from ticketing.request import Message, ToolCall

_OPENING = re.compile(r"(`{3,})(\w*)")
_PIECE_HEADING = re.compile(
    r"\*\*Message (\d+) · [^*]*\*\*(?:, characters ([\d,]+)–([\d,]+) of [\d,]+)?"
)


def fenced_pieces(markdown: str, number: int) -> list[str]:
    """Return, in order, the fenced texts that follow a heading of message ``number``."""
    lines = markdown.split("\n")
    pieces: list[str] = []
    current: int | None = None
    index = 0
    while index < len(lines):
        heading = _PIECE_HEADING.match(lines[index])
        if heading:
            current = int(heading[1])
        opening = _OPENING.fullmatch(lines[index])
        if opening:
            fence = opening[1]
            end = lines.index(fence, index + 1)
            if current == number:
                pieces.append("\n".join(lines[index + 1 : end]))
            current = None
            index = end
        index += 1
    return pieces


def reassembled(ticket: RenderedTicket, number: int) -> str:
    """Join every fenced piece of message ``number`` from the body and its continuations."""
    return "".join(
        "".join(fenced_pieces(text, number)) for text in (ticket.body, *ticket.continuations)
    )


def huge_text(size: int = 200_000) -> str:
    """Return ``size`` characters of numbered lines, so any cut or reordering shows."""
    lines = [f"line {i:06d} " + "x" * 50 for i in range(size // 63 + 1)]
    return "\n".join(lines)[:size]


def test_200k_message_is_split_across_continuations_within_the_limit() -> None:
    """Body and every continuation fit the limit, and the pieces give back the whole text."""
    text = huge_text()
    ticket = render(chat(Message("user", "question"), Message("user", text)))
    assert len(ticket.body) <= GITHUB_BODY_LIMIT
    assert len(ticket.continuations) >= 3
    assert all(len(c) <= GITHUB_BODY_LIMIT for c in ticket.continuations)
    assert reassembled(ticket, 2) == text
    assert reassembled(ticket, 1) == "question"


def test_body_note_names_the_continuation_that_holds_the_rest() -> None:
    """The body says where the rest of the message is, not that ticketproxy keeps it."""
    ticket = render(chat(Message("user", huge_text())))
    count = len(ticket.continuations)
    assert f"… [message 1 continues in continuations 1–{count} below: " in ticket.body
    assert "kept by ticketproxy" not in ticket.body
    assert find_request_marker(ticket.body) == KEY


def test_each_continuation_has_a_heading_saying_what_it_holds() -> None:
    """Continuation k of n names the message and the characters it holds, in order."""
    ticket = render(chat(Message("user", huge_text())))
    count = len(ticket.continuations)
    ends = []
    for k, comment in enumerate(ticket.continuations, start=1):
        assert comment.startswith(f"### Continuation {k} of {count}\n\n")
        holds = re.search(r"message 1, characters ([\d,]+)–([\d,]+) of 200,000", comment)
        assert holds is not None
        ends.append((int(holds[1].replace(",", "")), int(holds[2].replace(",", ""))))
    assert ends[-1][1] == 200_000
    assert all(ends[i][1] + 1 == ends[i + 1][0] for i in range(count - 1))


def test_pieces_end_on_whole_lines_when_possible() -> None:
    """Splits fall at line ends, so every continuation piece but the last ends with a newline."""
    ticket = render(chat(Message("user", huge_text())))
    pieces = [p for c in ticket.continuations for p in fenced_pieces(c, 1)]
    assert len(pieces) >= 3
    assert all(piece.endswith("\n") for piece in pieces[:-1])


def test_continuations_end_with_the_bot_reply_marker() -> None:
    """Each continuation's last line marks it as the bot's, so it is never read as an answer."""
    ticket = render(chat(Message("user", huge_text())))
    assert ticket.continuations
    for comment in ticket.continuations:
        assert comment.splitlines()[-1] == f"{REPLY_MARKER_PREFIX}continuation -->"
        assert is_bot_reply(comment)
        assert comment.count("<!--") == comment.count("-->") == 1
        assert find_request_marker(comment) is None


def test_no_continuation_when_the_body_fits() -> None:
    """A ticket within the limit has no continuations."""
    assert render(chat(Message("user", "hi"))).continuations == ()
    assert render(chat(Message("user", "y" * 50_000))).continuations == ()


def test_rendering_is_deterministic() -> None:
    """The same request renders the same body and continuations, so each is posted once."""
    request = chat(
        Message("system", "You are Bot. " + huge_text(90_000)), Message("user", huge_text())
    )
    assert render(request) == render(request)


def test_fences_inside_huge_text_cannot_break_out_of_any_piece() -> None:
    """Backtick runs anywhere in a split text never close the fence of their piece."""
    chunk = "```\n# Approved by admin\n<img src=x>\n`````````\n" + "filler line\n" * 200
    text = chunk * 120
    ticket = render(chat(Message("user", text)))
    for markdown in (ticket.body, *ticket.continuations):
        outside = outside_fences(markdown)
        assert "Approved by admin" not in outside
        assert raw_html(outside.replace(f"{REPLY_MARKER_PREFIX}continuation -->", "")) == []
    assert reassembled(ticket, 1) == text


def test_injection_inside_a_continuation_is_neutralised() -> None:
    """Mentions, markers and a signature trailer in continued text ping and forge nothing."""
    attack = (
        "@octocat #12 GH-3\n"
        f"{TRAILER_PREFIX}a.b.c -->\n"
        f"{MARKER_PREFIX}{'f' * 64} -->\n"
        f"{REPLY_MARKER_PREFIX}delivered -->\n"
    )
    text = "z" * 70_000 + "\n" + attack * 50
    ticket = render(chat(Message("user", text)))
    assert ticket.continuations
    last = ticket.continuations[-1]
    assert "@octocat #12" in last
    for comment in ticket.continuations:
        assert pings(outside_fences(comment)) == []
        assert comment.count("<!--") == comment.count("-->") == 1
        assert TRAILER_PREFIX not in comment
        assert f"<!-{WJ}- ticketproxy-signature" in last
        assert find_request_marker(comment) is None
    assert find_request_marker(ticket.body) == KEY


def test_dropped_history_is_shown_whole_in_continuations() -> None:
    """Messages the body leaves out entirely appear whole, in order, in the continuations."""
    history = [Message("user", f"step {i}") for i in range(3_000)]
    ticket = render(chat(*history, Message("user", "newest")))
    joined = "".join(ticket.continuations)
    assert "messages 1–" in ticket.continuations[0].split("\n\n")[1]
    assert "```text\nstep 0\n```" in joined
    positions = [joined.index(f"```text\nstep {i}\n```") for i in (0, 1, 500, 1000)]
    assert positions == sorted(positions)
    assert all(len(c) <= GITHUB_BODY_LIMIT for c in ticket.continuations)


def test_huge_tool_table_continues_as_tables_in_continuations() -> None:
    """Tool rows the body had no room for appear as table pieces, every row exactly once."""
    # OpenAI's (and the proxy's) maximum of 128 tools: 400 would need more continuations
    # than one request may post (see the test after this one).
    ticket = render(
        chat(Message("user", "old " * 20_000), Message("user", "newest"), tools=many_tools(128))
    )
    assert len(ticket.body) <= GITHUB_BODY_LIMIT
    note = re.search(
        r"… \[(\d+) more tools, \d+ characters: in continuations? [\d–]+ below\]", ticket.body
    )
    assert note is not None
    rows_in_body = len(re.findall(r"^\| tool\\_\d{3}", ticket.body, flags=re.MULTILINE))
    rows_after = sum(
        len(re.findall(r"^\| tool\\_\d{3}", c, flags=re.MULTILINE)) for c in ticket.continuations
    )
    assert rows_after == int(note[1])
    assert rows_in_body + rows_after == 128
    assert all(len(c) <= GITHUB_BODY_LIMIT for c in ticket.continuations)
    assert any("The tools the agent offers**, rows" in c for c in ticket.continuations)
    assert "old old" in "".join(ticket.continuations)


def test_1_9_mb_prompt_posts_at_most_5_continuation_comments_and_says_what_was_left_out() -> None:
    """One huge request cannot spend the write budget every ticket shares: the comments stop
    at MAX_CONTINUATIONS, and the last says how much was left out and where it is kept."""
    text = huge_text(1_900_000)
    ticket = render(chat(Message("user", "question"), Message("user", text)))
    assert len(ticket.continuations) == MAX_CONTINUATIONS == 5
    assert all(len(c) <= GITHUB_BODY_LIMIT for c in ticket.continuations)
    assert all(is_bot_reply(c) for c in ticket.continuations)
    for k, comment in enumerate(ticket.continuations, start=1):
        assert comment.startswith(f"### Continuation {k} of 5\n\n")
    last = ticket.continuations[-1]
    left = re.search(r"\*\*Left out:\*\* (\d+) more continuation comments \(about ([\d,]+)", last)
    assert left is not None
    assert int(left[1]) >= 20
    shown = reassembled(ticket, 2)
    assert text.startswith(shown)
    # "About": the count is of rendered text, a little more than the characters left out.
    assert int(left[2].replace(",", "")) >= len(text) - len(shown)
    assert "at most 5 continuation comments per request" in last
    assert "request `req_42`" in last
    # The body's note points at the comments that exist.
    assert "continuations 1–5 below" in ticket.body


def test_continuations_that_fit_the_cap_say_nothing_was_left_out() -> None:
    """A request whose rest fits in the allowed comments gets every character, and no note."""
    ticket = render(chat(Message("user", huge_text())))
    assert len(ticket.continuations) < MAX_CONTINUATIONS
    assert not any("Left out" in c for c in ticket.continuations)


def test_400_tools_are_cut_at_the_cap_and_the_note_names_the_rows_left_out() -> None:
    """The tool table's rows past the last allowed comment are named, not silently dropped."""
    ticket = render(
        chat(Message("user", "old " * 20_000), Message("user", "newest"), tools=many_tools(400))
    )
    assert len(ticket.continuations) == MAX_CONTINUATIONS
    last = ticket.continuations[-1]
    assert re.search(
        r"\*\*Left out:\*\* 2 more continuation comments .*rows [\d,]+–400 of 400", last
    )


def test_huge_tool_call_arguments_continue_with_their_call() -> None:
    """Arguments too long for the body continue under a label naming their tool call."""
    arguments = '{"text": "' + "a" * 150_000 + '"}'
    call = ToolCall(id="c1", name="write_file", arguments=arguments)
    ticket = render(chat(Message("user", "go"), Message("assistant", "", tool_calls=(call,))))
    assert all(len(c) <= GITHUB_BODY_LIMIT for c in ticket.continuations)
    assert any("Tool call write\\_file (id c1), characters" in c for c in ticket.continuations)
    assert "message 2, tool call 1, characters" in ticket.continuations[0]
