"""A sentence that names a secret keeps its words; a secret given in one is still redacted.

Pure: :func:`ticketing.render.redact.redact_text` and the title, no server.
"""

from __future__ import annotations

from tests.helpers.render_requests import chat, render
from ticketing.render.redact import redact_request, redact_text
from ticketing.request import Message

GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2  # the shape only; not a real token


def test_question_naming_a_token_is_not_redacted() -> None:
    """ "No token: hello?" is a question, not a token called "hello?": nothing is replaced."""
    assert redact_text("No token: hello?", where="message 1") == ("No token: hello?", [])


def test_question_naming_a_token_keeps_its_ticket_title() -> None:
    """The ticket's title shows the question as asked, and the ticket notes no redaction."""
    shown, found = redact_request(chat(Message("user", "No token: hello?")))
    assert found == ()
    assert render(shown).title == "No token: hello?"


def test_known_token_shape_in_a_question_is_still_redacted() -> None:
    """A real token after "No token:" is redacted by its shape, in the text and the title."""
    text = f"No token: {GITHUB_TOKEN}?"
    shown, found = redact_text(text, where="message 1")
    assert GITHUB_TOKEN not in shown
    assert [f.kind for f in found] == ["GitHub token"]
    request, _ = redact_request(chat(Message("user", text)))
    assert GITHUB_TOKEN not in render(request).title


def test_high_entropy_value_in_a_sentence_is_still_redacted() -> None:
    """Letters, digits and case mixed after "my token:" are a credential, not a word."""
    shown, found = redact_text("Here is my token: Zq8lT0wyR4xx, thanks", where="message 1")
    assert "Zq8lT0wyR4xx" not in shown
    assert [f.kind for f in found] == ["assigned secret"]


def test_key_on_a_line_after_prose_is_still_a_key() -> None:
    """Only words on the keyword's own line make it prose: a YAML key below a sentence is not."""
    shown, found = redact_text("Settings follow.\ntoken: hunter\n", where="message 1")
    assert "hunter" not in shown
    assert [f.kind for f in found] == ["assigned secret"]
