"""Refusals not covered elsewhere: GitHub refusing a ticket, wrong schemes, and wire checks."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.raw_requests import AUTH, assert_envelope, raw
from tests.helpers.stack import CLIENT_KEY, REPO, Stack, start_stack, stop_stack
from ticketing.github.webhooks import sign_payload

PROMPT = [{"role": "user", "content": "hi"}]
JSON_AUTH = {**AUTH, "Content-Type": "application/json"}
SECRET = "webhook-secret-0123456789abcdef"


def tool(name: str) -> dict[str, Any]:
    """Return one offered function tool called ``name``."""
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def function(name: str) -> dict[str, Any]:
    """Return one legacy ``functions`` entry called ``name``."""
    return {"name": name, "parameters": {"type": "object"}}


async def post_json(stack: Stack, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """POST ``body`` as JSON with the right client key; return the status and the JSON answer."""
    status, _, answer = await raw(
        stack, "POST", path, data=json.dumps(body).encode(), headers=JSON_AUTH
    )
    return status, answer


async def assert_refused(
    stack: Stack,
    body: dict[str, Any],
    *,
    param: str,
    code: str | None,
    message: str,
    path: str = "/v1/chat/completions",
) -> None:
    """Check that ``body`` is a 400 with exactly this param, code and message, and no issue."""
    status, answer = await post_json(stack, path, body)
    assert status == 400, answer
    assert_envelope(answer)
    assert answer["error"] == {
        "message": message,
        "type": "invalid_request_error",
        "param": param,
        "code": code,
    }
    assert await stack.issues() == []


# --- GitHub, keys and models -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "detail"),
    [
        (
            401,
            "github_misconfigured",
            "GitHub rejected the token (401 Bad credentials): check TICKETPROXY_GITHUB_TOKEN",
        ),
        (404, "github_misconfigured", "GitHub answered 404: check TICKETPROXY_GITHUB_REPO"),
        (422, "github_error", "GitHub answered 422: Validation Failed"),
    ],
    ids=["bad-token-401", "missing-repository-404", "422"],
)
async def test_github_refusing_to_open_the_ticket_is_a_500_naming_the_fix_not_back_pressure(
    stack: Stack, status: int, code: str, detail: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A refusal that waiting cannot fix is a 500 with the operator's fix, never a 429."""
    stack.sandbox.sandbox.inject_fault(
        method="POST",
        path=r"/repos/acme/agents/issues",
        status=status,
        body={
            "message": {401: "Bad credentials", 404: "Not Found"}.get(status, "Validation Failed"),
            "documentation_url": "https://docs.github.com/rest/issues/issues#create-an-issue",
        },
    )
    answer_status, headers, body = await raw(
        stack,
        "POST",
        "/v1/chat/completions",
        data=json.dumps({"model": "gpt-4o", "messages": PROMPT}).encode(),
        headers=JSON_AUTH,
    )
    assert answer_status == 500
    assert body["error"]["type"] == "server_error"
    assert body["error"]["code"] == code
    assert detail in body["error"]["message"]
    assert "will not help" in body["error"]["message"]
    assert "retry-after" not in headers
    assert headers["x-request-id"].startswith("req_")
    assert detail in caplog.text
    assert await stack.issues() == []


async def test_bad_github_token_stops_the_openai_client_instead_of_retrying_forever(
    stack: Stack,
) -> None:
    """The openai client gives up on a bad token after its own two retries, with the fix."""
    stack.sandbox.sandbox.inject_fault(
        method="POST",
        path=r"/repos/acme/agents/issues",
        status=401,
        times=10,
        body={"message": "Bad credentials"},
    )
    client = stack.openai(max_retries=2)
    with pytest.raises(openai.InternalServerError) as caught:
        await client.chat.completions.create(model="gpt-4o", messages=PROMPT)  # type: ignore[arg-type]
    assert "TICKETPROXY_GITHUB_TOKEN" in str(caught.value)
    posts = [
        r
        for r in stack.sandbox.sandbox.requests
        if r.method == "POST" and r.path.endswith("/issues")
    ]
    assert len(posts) <= 3


async def test_right_key_under_a_basic_scheme_is_a_401(stack: Stack) -> None:
    """The correct client key sent as ``Authorization: Basic <key>`` is refused like a wrong key."""
    status, _, body = await raw(
        stack, "GET", "/v1/models", headers={"Authorization": f"Basic {CLIENT_KEY}"}
    )
    assert status == 401
    assert body["error"] == {
        "message": "Incorrect API key provided. Send `Authorization: Bearer <key>` with one of "
        "the keys in TICKETPROXY_API_KEYS.",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
    # The same key under Bearer is let in, so the scheme alone made the difference.
    status, _, _ = await raw(stack, "GET", "/v1/models")
    assert status == 200


async def test_get_of_a_model_id_nobody_listed_describes_it(stack: Stack) -> None:
    """``GET /v1/models/gpt-9000`` answers 200: people answer every id without a routes file."""
    status, _, body = await raw(stack, "GET", "/v1/models/gpt-9000")
    assert (status, body["id"]) == (200, "gpt-9000")
    status, _, listed = await raw(stack, "GET", "/v1/models")
    assert "gpt-9000" not in [model["id"] for model in listed["data"]]


# --- what the wire format refuses ------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [{"logprobs": True}, {"top_logprobs": 3}],
    ids=["logprobs", "top_logprobs"],
)
async def test_logprobs_are_refused(stack: Stack, extra: dict[str, Any]) -> None:
    """People write the answers, so there are no log probabilities to give."""
    await assert_refused(
        stack,
        {"model": "gpt-4o", "messages": PROMPT, **extra},
        param="logprobs",
        code="unsupported_parameter",
        message="logprobs are not available: the answers are written by people",
    )


async def test_tools_and_functions_together_are_refused(stack: Stack) -> None:
    """A body offering both ``tools`` and legacy ``functions`` is a 400 naming functions."""
    await assert_refused(
        stack,
        {
            "model": "gpt-4o",
            "messages": PROMPT,
            "tools": [tool("ls")],
            "functions": [function("ls")],
        },
        param="functions",
        # wire.py raises this one without a code.
        code=None,
        message="send either tools or functions, not both",
    )


async def test_more_than_128_tools_are_refused(stack: Stack) -> None:
    """OpenAI's limit of 128 functions holds: 129 tools is a 400 naming tools."""
    await assert_refused(
        stack,
        {"model": "gpt-4o", "messages": PROMPT, "tools": [tool(f"t{i}") for i in range(129)]},
        param="tools",
        code="invalid_value",
        message="tools may hold at most 128 functions",
    )


@pytest.mark.parametrize(
    ("offered", "param"),
    [
        ({"tools": [tool("ls"), tool("ls")]}, "tools"),
        ({"functions": [function("ls"), function("ls")]}, "functions"),
    ],
    ids=["tools", "functions"],
)
async def test_duplicate_function_names_are_refused(
    stack: Stack, offered: dict[str, Any], param: str
) -> None:
    """Two offered functions with one name would make a call ambiguous."""
    await assert_refused(
        stack,
        {"model": "gpt-4o", "messages": PROMPT, **offered},
        param=param,
        code="invalid_value",
        message="function names must be unique",
    )


@pytest.mark.parametrize(
    ("choice", "param", "message"),
    [
        ({"tool_choice": "required"}, "tool_choice", "tool_choice needs tools"),
        ({"tool_choice": "auto"}, "tool_choice", "tool_choice needs tools"),
        (
            {"tool_choice": {"type": "function", "function": {"name": "ls"}}},
            "tool_choice",
            "tool_choice names a function that is not in tools",
        ),
    ],
    ids=["required", "auto", "named"],
)
async def test_tool_choice_without_tools_is_refused(
    stack: Stack, choice: dict[str, Any], param: str, message: str
) -> None:
    """Asking for a tool call while offering no tool is a 400 naming the choice."""
    await assert_refused(
        stack,
        {"model": "gpt-4o", "messages": PROMPT, **choice},
        param=param,
        code="invalid_value",
        message=message,
    )


async def test_more_than_four_stop_sequences_are_refused(stack: Stack) -> None:
    """OpenAI allows up to four stop sequences; five is a 400 naming stop."""
    await assert_refused(
        stack,
        {"model": "gpt-4o", "messages": PROMPT, "stop": ["a", "b", "c", "d", "e"]},
        param="stop",
        code="invalid_value",
        message="stop must be a string or an array of up to 4 strings",
    )


@pytest.mark.parametrize("stream", ["true", 1, {"on": True}], ids=["string", "int", "object"])
async def test_non_boolean_stream_is_refused(stack: Stack, stream: Any) -> None:
    """``stream`` must be a JSON boolean: ``"true"`` or ``1`` is a 400, not a guess."""
    await assert_refused(
        stack,
        {"model": "gpt-4o", "messages": PROMPT, "stream": stream},
        param="stream",
        code="invalid_value",
        message="stream must be a boolean",
    )


@pytest.mark.parametrize(
    ("extra", "param", "code", "message"),
    [
        (
            {"suffix": "!"},
            "suffix",
            "unsupported_parameter",
            "suffix is not available: the answers are written by people",
        ),
        ({"echo": True}, "echo", "unsupported_parameter", "echo is not supported"),
        ({"best_of": 3}, "best_of", "unsupported_value", "best_of must be 1"),
        (
            {"logprobs": 2},
            "logprobs",
            "unsupported_parameter",
            "logprobs is not available: the answers are written by people",
        ),
    ],
    ids=["suffix", "echo", "best_of", "logprobs"],
)
async def test_legacy_suffix_echo_and_best_of_are_refused(
    stack: Stack, extra: dict[str, Any], param: str, code: str, message: str
) -> None:
    """``/v1/completions`` refuses what only a model could do, naming the parameter."""
    await assert_refused(
        stack,
        {"model": "gpt-4o", "prompt": "Say hi", **extra},
        param=param,
        code=code,
        message=message,
        path="/v1/completions",
    )


# --- webhooks ---------------------------------------------------------------------------------


@pytest.fixture
async def hooked(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a stack that takes webhooks signed with SECRET (the sandbox delivers none)."""
    running = await start_stack(
        github_sandbox, sandbox_config, tmp_path, webhook_secret=SECRET, deliver_webhooks=False
    )
    try:
        yield running
    finally:
        await stop_stack(running)


async def test_signed_issue_comment_with_a_garbled_payload_is_a_400_bad_payload(
    hooked: Stack,
) -> None:
    """A correctly signed ``issue_comment`` with a non-numeric comment id is a 400 bad_payload."""
    payload = {
        "action": "created",
        "issue": {"number": 1},
        "comment": {
            "id": "not-a-number",
            "body": "hello",
            "user": {"login": "alice", "id": 1001},
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z",
        },
        "repository": {"full_name": REPO},
    }
    body = json.dumps(payload).encode()
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": "garbled-1",
        "X-Hub-Signature-256": sign_payload(body, secret=SECRET),
    }
    async with (
        aiohttp.ClientSession() as http,
        http.post(hooked.webhook_url, data=body, headers=headers) as response,
    ):
        status = response.status
        answer = await response.json()
    assert status == 400
    assert answer["error"] == {
        "message": "the issue_comment payload is not as GitHub documents it (ValueError: "
        "invalid literal for int() with base 10: 'not-a-number')",
        "type": "invalid_request_error",
        "param": None,
        "code": "bad_payload",
    }
    # Refused before the desk saw it: no comment event was taken in.
    assert hooked.desk.last_webhook_at is None


async def test_function_call_without_functions_is_refused(stack: Stack) -> None:
    """A legacy ``function_call`` with no ``functions`` to call is a 400, not silently ignored."""
    await assert_refused(
        stack,
        {"model": "gpt-4o", "messages": PROMPT, "function_call": "auto"},
        param="function_call",
        code="invalid_value",
        message="function_call needs functions",
    )
