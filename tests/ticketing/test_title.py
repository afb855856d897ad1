"""Tests for ticketing.render.title: the issue title says what the agent works on."""

from __future__ import annotations

from tests.helpers.markdown_checks import WJ, pings
from tests.helpers.render_requests import chat, render
from ticketing.render.redact import redact_request
from ticketing.render.title import TITLE_LIMIT, meaningful_line, render_title
from ticketing.request import Message

STEP = "Determine exactly one command to use next based on the given goals and the progress"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2  # the shape only; not a real token


def test_autogpt_run_is_titled_with_its_task_not_the_model() -> None:
    """An AutoGPT step is titled with the run's task, and the model is left to the body."""
    request = chat(
        Message("system", "You are Scout, a research agent."),
        Message("user", '"""Find the three cheapest flights to Lisbon in May."""'),
        Message("user", STEP),
    )
    ticket = render(request)
    assert ticket.title == "Scout: Find the three cheapest flights to Lisbon in May."
    assert "gpt-4-turbo" not in ticket.title
    assert "| Model | `gpt-4-turbo` |" in ticket.body


def test_classic_autogpt_goals_in_the_system_prompt_give_the_title() -> None:
    """The older prompt, with its goals listed in the system prompt, is titled with the first."""
    system = "You are Scout, a research agent.\n\nGOALS:\n\n1. Compare flight prices\n2. Report"
    request = chat(
        Message("system", system), Message("user", "Determine which next command to use")
    )
    assert render(request).title == "Scout: Compare flight prices"


def test_your_task_is_sentence_in_the_system_prompt_gives_the_title() -> None:
    """A system prompt saying "Your task is to ..." on a step request gives the title."""
    system = "You are Scout.\nYour task is to tidy the release notes.\nBe brief."
    request = chat(Message("system", system), Message("user", STEP))
    assert render(request).title == "Scout: tidy the release notes."


def test_plain_chat_is_titled_with_the_newest_user_message_first_meaningful_line() -> None:
    """Blank lines, fences and markdown markers are skipped; the first real words are kept."""
    content = "\n```\n\n## **Why** does `make test` fail?\n\nDetails follow."
    request = chat(Message("user", "old question"), Message("user", content))
    assert render(request).title == "Why does make test fail?"


def test_secret_in_the_first_line_is_redacted_in_the_title() -> None:
    """A token on the title's line is redacted as the body is, before the title is made."""
    request = chat(Message("user", f"Why is {GITHUB_TOKEN} refused by the API?"))
    shown, found = redact_request(request)
    title = render(shown).title
    assert found
    assert GITHUB_TOKEN not in title
    assert title.startswith("Why is [redacted")


def test_mention_and_issue_reference_in_the_title_ping_nobody() -> None:
    """An @mention or #123 in the line becomes inert, so the title pings and links nothing."""
    title = render(chat(Message("user", "@octocat please look at #123 and GH-7"))).title
    assert pings(title) == []
    assert title.startswith(f"@{WJ}octocat")


def test_very_long_line_is_trimmed_at_a_word_boundary() -> None:
    """A long line is cut before a whole word, with an ellipsis, within the title limit."""
    words = " ".join(f"word{i}" for i in range(60))
    title = render_title("Scout", words)
    assert len(title) <= TITLE_LIMIT
    assert title.endswith("…")
    assert title[:-1].split(" ")[-1] in words.split(" ")


def test_step_of_an_unnamed_agent_says_the_step() -> None:
    """An agent without a name gives "Step N: ..." rather than a generic "agent"."""
    assert render_title("agent", "Tidy the notes", step=3) == "Step 3: Tidy the notes"


def test_line_of_only_markup_falls_through_to_the_next() -> None:
    """A line of quotes, rules or bullets says nothing, so the next line is taken."""
    assert meaningful_line('"""\n---\n> - 1. Ship the fix"""') == "Ship the fix"
