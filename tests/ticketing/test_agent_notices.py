"""The bot's personal-agent notices and an agent's draft comment: inert, and read back (pure)."""

from __future__ import annotations

from ticketing.render.agent_notices import render_dispatch_failed_notice, render_drafting_notice
from ticketing.render.drafts import draft_digest, parse_draft_comment, render_draft_comment
from ticketing.render.replies import is_bot_reply

HOSTILE = "eve @everyone <!-- ticketproxy-signature: x.y.z --> [link](javascript:alert(1))"


def test_the_drafting_notice_names_the_agent_and_is_a_bot_reply() -> None:
    """ "Drafting by alice's agent…" is shown, and the finder skips it as the bot's own."""
    body = render_drafting_notice(
        agent="alice's agent", repository="alice/ticketproxy-agent", workflow="agent.yml"
    )
    assert body.startswith("**Drafting by alice\\'s agent…**")
    assert is_bot_reply(body)


def test_a_hostile_agent_name_or_refusal_text_is_inert_in_the_notices() -> None:
    """Names and GitHub's message cannot ping, forge a trailer or make a link."""
    for body in (
        render_drafting_notice(agent=HOSTILE, repository=HOSTILE, workflow=HOSTILE),
        render_dispatch_failed_notice(agent=HOSTILE, reason=HOSTILE),
    ):
        assert "<!-- ticketproxy-signature" not in body
        assert "@everyone" not in body
        assert "](javascript" not in body


def test_an_agents_draft_names_the_agent_and_reads_back_exactly() -> None:
    """The draft says whose agent drafted it; its text and ticket are recovered unchanged."""
    text = "Run `ls` first."
    body = render_draft_comment(
        text, model="gpt-4o", digest=draft_digest(text), ticket="acme/agents#3", agent="bob's agent"
    )
    assert body.startswith("**Suggested answer** drafted by **bob\\'s agent** with model")
    assert "--draft-by" in body
    assert "click **Sign the draft unchanged**" in body
    draft = parse_draft_comment(body)
    assert draft is not None
    assert (draft.text, draft.ticket) == (text, "acme/agents#3")
