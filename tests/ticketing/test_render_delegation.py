"""The bot's delegation comments: only the addressee is pinged, and each carries its record."""

from __future__ import annotations

from ticketing.render.delegation import (
    ChildAnswer,
    render_addressee_ping,
    render_child_answer_record,
    render_delegated_notice,
    render_delegation_answers,
    render_delegation_given_up,
    render_delegation_stalled,
)
from ticketing.render.markers import read_record_line
from ticketing.render.replies import is_bot_reply

SNEAKY = ChildAnswer(2, "Ask @security-team and @mallory, then close #1", "bob")


def _mentions(body: str) -> list[str]:
    """Return the @logins GitHub would turn into mentions (an @ right before a login)."""
    return [word for word in body.split() if word.startswith("@") and word[1:2].isalnum()]


def test_a_sub_question_mentioning_people_pings_nobody_on_the_parent() -> None:
    """Mentions inside a sub-question are neutralised; the delegator is named, not pinged."""
    body = render_delegated_notice(
        delegated_by="alice", children=[SNEAKY], comment_id=9, digest="a" * 64
    )
    assert _mentions(body) == []
    assert is_bot_reply(body)
    records = [r for r in map(read_record_line, body.split("\n")) if r is not None]
    assert [(r.comment_id, r.digest) for r in records] == [(9, "a" * 64)]


def test_the_ping_on_a_child_mentions_its_addressee_only() -> None:
    """The one mention the bot makes is the addressee's, on the child."""
    body = render_addressee_ping(addressee="bob", parent=1, reference="acme/agents#2")
    assert _mentions(body) == ["@bob,"]
    assert "`acme/agents#2`" in body


def test_the_childrens_answers_are_listed_with_signer_and_digest_pinging_nobody() -> None:
    """The parent's list names each child's signer and links its digest; it pings nobody."""
    answered = ChildAnswer(
        2,
        SNEAKY.question,
        "bob",
        signer="bob",
        digest="b" * 64,
        answer_url="https://github.com/acme/agents/issues/2#issuecomment-5",
    )
    body = render_delegation_answers([answered])
    assert _mentions(body) == []
    assert f"answered by **bob**, [`sha256:{'b' * 64}`]" in body


def test_a_childs_answer_record_names_the_answer_comment_and_digest() -> None:
    """The audit reads which comment answered the child from exactly one record line."""
    body = render_child_answer_record(
        parent=1,
        signer="bob",
        comment_id=5,
        digest="c" * 64,
        comment_url="https://github.com/acme/agents/issues/2#issuecomment-5",
    )
    records = [r for r in map(read_record_line, body.split("\n")) if r is not None]
    assert [(r.comment_id, r.digest) for r in records] == [(5, "c" * 64)]


def test_held_up_and_given_up_notices_ping_nobody() -> None:
    """The delegator is named and never-opened sub-questions listed, mentions neutralised."""
    stalled = render_delegation_stalled(delegated_by="alice", opened=[2], total=3)
    assert "1 of 3 sub-questions opened (#2); GitHub is unavailable, retrying" in stalled
    given_up = render_delegation_given_up(
        delegated_by="alice", opened=[2], missing=[SNEAKY.question], reason="GitHub @down"
    )
    assert "answer it directly" in given_up
    assert "(the sub-issues opened, #2, still take theirs)" in given_up
    for body in (stalled, given_up):
        assert _mentions(body) == []
        assert is_bot_reply(body)
