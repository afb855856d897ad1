"""Secrets in a prompt never reach the ticket; the ticket says what was removed and where."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.agent_runs import wait_for_step
from tests.helpers.stack import REPO, Stack
from ticketing.render.redact import describe_redactions, redact_request, redact_text
from ticketing.request import ChatRequest, Message, ResponseFormat, ToolCall, ToolSpec

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


# A Stripe key: a shape the redaction did not know before, found in every field below.
STRIPE = "sk_" + "live_4eC39HqLyjWDarjtT1zdp7dc"


def test_redaction_covers_tools_schemas_response_format_stop_names_and_model() -> None:
    """Tool descriptions and schemas, the response format, stop, names and model are agent text."""
    request = ChatRequest(
        model=f"gpt-4o {STRIPE}",
        messages=(
            Message(role="user", content="hi", name=STRIPE),
            Message(
                role="assistant",
                content="",
                tool_calls=(ToolCall(id=STRIPE, name=f"run {STRIPE}", arguments="{}"),),
            ),
            Message(role="tool", content="ok", tool_call_id=STRIPE),
        ),
        tools=(
            ToolSpec(
                name="charge",
                description=f"Charges with {STRIPE}.",
                parameters={
                    "type": "object",
                    "properties": {
                        "key": {"type": "string", "default": STRIPE, "enum": [STRIPE, "other"]},
                        STRIPE: {"type": "string"},
                    },
                },
            ),
        ),
        response_format=ResponseFormat(
            type="json_schema", name=STRIPE, schema={"description": f"use {STRIPE}"}
        ),
        stop=(STRIPE,),
        metadata={STRIPE: "value"},
    )
    shown, found = redact_request(request)
    assert STRIPE not in repr(shown)
    assert {f.where for f in found} == {
        "model",
        "message 1",
        "message 2",
        "message 3",
        "tool charge",
        "response format",
        "stop sequences",
        "metadata keys",
    }
    # The schema keeps its shape: only strings are replaced.
    properties = shown.tools[0].parameters["properties"]
    assert properties["key"]["enum"] == ["[redacted Stripe key]", "other"]
    assert "[redacted Stripe key]" in properties
    assert STRIPE in repr(request)  # the stored request keeps what the agent sent


def test_the_note_names_kinds_and_places_without_echoing_the_secret() -> None:
    """The ticket's note says which kinds of secret went from where, never the secret itself."""
    request = ChatRequest(
        model="gpt-4o",
        messages=(Message(role="user", content=f"DB_PASSWORD=hunter2 and {STRIPE}"),),
        metadata={f"key {STRIPE}": "x"},
        tools=(ToolSpec(name=STRIPE, description=STRIPE),),
    )
    _, found = redact_request(request)
    note = describe_redactions(found)
    assert note is not None
    assert "hunter2" not in note
    assert STRIPE not in note
    assert "1 assigned secret in message 1" in note
    assert "1 Stripe key in message 1" in note
    assert "tool [redacted Stripe key]" in note


async def test_secret_in_a_tool_description_never_reaches_the_issue(stack: Stack) -> None:
    """A tool's description and schema are agent text: the issue shows placeholders."""
    client = stack.openai()
    tools = [
        {
            "type": "function",
            "function": {
                "name": "charge",
                "description": f"Charge a card with the key {STRIPE}.",
                "parameters": {
                    "type": "object",
                    "properties": {"key": {"type": "string", "default": STRIPE}},
                },
            },
        }
    ]
    messages = [{"role": "user", "content": "Charge 5 EUR."}]
    pending = asyncio.create_task(
        client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)  # type: ignore[arg-type]
    )
    issue = await stack.wait_for_issue(1)
    assert STRIPE not in issue.body
    assert "Charge a card with the key \\[redacted Stripe key\\]" in issue.body
    assert "2 Stripe keys in tool charge" in issue.body  # the description and the default
    pending.cancel()


async def test_secret_at_the_end_of_a_long_prompt_never_reaches_a_continuation(
    stack: Stack,
) -> None:
    """A prompt over GitHub's limit goes on in comments; a secret at its end is redacted there."""
    lines = [f"line {index:06d}: the log the agent wants read" for index in range(7_500)]
    prompt = "\n".join(lines)
    prompt += f"\nexport STRIPE_KEY={STRIPE}\nPASSWORD=hunter2hunter2"
    client = stack.openai()
    pending = asyncio.create_task(
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": prompt}]
        )
    )
    issue = await stack.wait_for_issue(1)
    await stack.desk.followups.drain()
    parts = [c.body for c in await stack.comments(1)]
    assert parts
    everything = issue.body + "".join(parts)
    assert lines[-1] in everything
    assert STRIPE not in everything
    assert "hunter2hunter2" not in everything
    assert "PASSWORD=[redacted assigned secret]" in parts[-1]
    pending.cancel()


async def test_secret_in_a_later_step_never_reaches_its_step_comment(stack: Stack) -> None:
    """A run's next step is posted as a comment; a secret new in that step is redacted there."""
    client = stack.openai()
    question = [{"role": "user", "content": "What is 2+2?"}]
    first = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=question))  # type: ignore[arg-type]
    await stack.wait_for_issue(1)
    await stack.answer(1, "4")
    await asyncio.wait_for(first, 10)
    follow_up = [
        *question,
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": f"Now charge it with {STRIPE}"},
    ]
    second = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=follow_up))  # type: ignore[arg-type]
    await wait_for_step(stack, 2)
    steps = [c.body for c in await stack.comments(1) if "<!-- ticketproxy:step " in c.body]
    assert len(steps) == 1
    assert STRIPE not in steps[0]
    assert "[redacted Stripe key]" in steps[0]
    assert "redacted 1 secret" in steps[0]
    await stack.comment(1, stack.signed("Done.", number=1, ticket=f"{REPO}#1/2"))
    assert (await asyncio.wait_for(second, 10)).choices[0].message.content == "Done."
