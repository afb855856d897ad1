"""Secrets in a prompt never reach the ticket; the ticket says what was removed and where."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.stack import Stack
from ticketing.render.redact import describe_redactions, redact_request, redact_text
from ticketing.request import ChatRequest, Message, ToolCall

SECRETS = {
    "OpenAI API key": "sk-proj-" + "A1b2C3d4" * 5,
    "Anthropic API key": "sk-ant-api03-" + "x9Y8z7W6" * 4,
    "GitHub token": "ghp_" + "a1B2c3D4e5" * 4,
    "AWS access key id": "AKIAIOSFODNN7EXAMPLE",
    "Slack token": "xoxb-123456789012-abcdefghij",
    "JSON Web Token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "private key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----",
    "password in a URL": "postgres://admin:hunter2hunter2@db.internal:5432/app",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_known_secret_shape_is_redacted(kind: str) -> None:
    """Every default pattern replaces its secret with a placeholder naming the kind."""
    secret = SECRETS[kind]
    text, found = redact_text(f"config: {secret} done", where="message 1")
    assert kind in {f.kind for f in found}
    assert f"[redacted {kind}]" in text
    leftover = secret.split("://")[-1].split("@")[0] if kind == "password in a URL" else secret
    assert leftover not in text


def test_ordinary_text_is_left_alone() -> None:
    """Words, hashes and short ids are not secrets."""
    text = "The commit 3f2a9c1 fixed sk-8 and the task-force met at 10:00."
    assert redact_text(text, where="message 1") == (text, [])


def test_redaction_covers_tool_call_arguments_metadata_and_user() -> None:
    """Secrets in history tool calls, metadata and the user field are redacted too."""
    token = SECRETS["GitHub token"]
    request = ChatRequest(
        model="gpt-4o",
        messages=(
            Message(role="user", content="hi"),
            Message(
                role="assistant",
                content="",
                tool_calls=(ToolCall(id="1", name="curl", arguments=f'{{"auth": "{token}"}}'),),
            ),
        ),
        user=token,
        metadata={"deploy": token},
    )
    shown, found = redact_request(request)
    assert token not in repr(shown)
    assert {f.where for f in found} == {"message 2", "metadata deploy", "user"}
    note = describe_redactions(found)
    assert note is not None
    assert "3 secrets" in note
    assert describe_redactions(()) is None


async def test_secret_in_a_prompt_never_reaches_the_issue(stack: Stack) -> None:
    """The issue shows a placeholder and a note; the agent still gets its answer."""
    client = stack.openai()
    key = SECRETS["OpenAI API key"]
    messages = [{"role": "user", "content": f"My key is {key}; list my models."}]
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=messages))  # type: ignore[arg-type]
    issue = await stack.wait_for_issue(1)
    assert key not in issue.body
    assert key not in issue.title
    assert "[redacted OpenAI API key]" in issue.body
    assert "redacted 1 secret" in issue.body
    await stack.answer(1, "Rotate that key.")
    assert (await asyncio.wait_for(pending, 10)).choices[0].message.content == "Rotate that key."
