"""Workflow and repository dispatches on the sandbox, as GitHub answers and limits them."""

from __future__ import annotations

from typing import Any

import aiohttp

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.embedded_github_clients import auth, user
from tests.helpers.github_openapi.validate import spec

FORK = "alice/ticketproxy-agent"
WORKFLOW = ".github/workflows/agent.yml"
DISPATCHES = f"/repos/{FORK}/actions/workflows/agent.yml/dispatches"


async def _post(
    running: RunningSandbox, path: str, token_of: Any, body: Any
) -> tuple[int, dict[str, Any] | None]:
    async with (
        aiohttp.ClientSession() as http,
        http.post(running.api_url + path, json=body, headers=auth(token_of)) as response,
    ):
        raw = await response.read()
        return response.status, (None if not raw else await response.json())


def _host_agent(running: RunningSandbox) -> int:
    return running.sandbox.add_workflow(FORK, WORKFLOW, inputs=("ticket_url",)).id


async def test_a_workflow_dispatch_by_file_name_is_answered_204_and_recorded(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """A dispatch naming the workflow's file gets GitHub's empty 204, and the sandbox records it."""
    _host_agent(github_sandbox)
    body = {"ref": "main", "inputs": {"ticket_url": "https://github.com/acme/agents/issues/1"}}
    status, payload = await _post(github_sandbox, DISPATCHES, user(sandbox_config, "alice"), body)
    assert (status, payload) == (204, None)
    [record] = github_sandbox.sandbox.dispatches
    assert record.kind == "workflow_dispatch"
    assert record.repo == FORK
    assert record.ref == "main"
    assert record.login == "alice"
    assert record.workflow is not None
    assert record.workflow.path == WORKFLOW
    assert record.inputs == body["inputs"]


async def test_a_workflow_dispatch_by_numeric_id_reaches_the_same_workflow(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """GitHub takes the workflow's id in place of its file name."""
    workflow_id = _host_agent(github_sandbox)
    path = f"/repos/{FORK}/actions/workflows/{workflow_id}/dispatches"
    status, _ = await _post(github_sandbox, path, user(sandbox_config, "alice"), {"ref": "main"})
    assert status == 204
    assert github_sandbox.sandbox.dispatches[0].workflow is not None


async def test_dispatching_an_unknown_workflow_is_githubs_404(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """A workflow file the repository does not have is a 404 Not Found, and nothing is recorded."""
    _host_agent(github_sandbox)
    path = f"/repos/{FORK}/actions/workflows/missing.yml/dispatches"
    status, payload = await _post(
        github_sandbox, path, user(sandbox_config, "alice"), {"ref": "main"}
    )
    assert status == 404
    assert payload is not None
    assert payload["message"] == "Not Found"
    assert github_sandbox.sandbox.dispatches == []


async def test_a_dispatch_without_ref_is_refused_422(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """``ref`` is required by GitHub's description of the operation."""
    _host_agent(github_sandbox)
    assert "ref" in _request_schema()["required"]
    status, payload = await _post(github_sandbox, DISPATCHES, user(sandbox_config, "alice"), {})
    assert status == 422
    assert payload is not None
    assert "ref" in payload["message"]
    assert github_sandbox.sandbox.dispatches == []


async def test_a_dispatch_with_more_inputs_than_githubs_limit_is_refused_422(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """More than the 25 ``inputs`` GitHub's description allows is refused."""
    _host_agent(github_sandbox)
    limit = _request_schema()["properties"]["inputs"]["maxProperties"]
    assert limit == 25
    body = {"ref": "main", "inputs": {f"i{n}": "x" for n in range(limit + 1)}}
    status, _ = await _post(github_sandbox, DISPATCHES, user(sandbox_config, "alice"), body)
    assert status == 422
    assert github_sandbox.sandbox.dispatches == []


async def test_a_dispatch_with_an_input_the_workflow_does_not_declare_is_refused_422(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """GitHub answers ``Unexpected inputs provided`` for an input the trigger does not declare."""
    _host_agent(github_sandbox)
    body = {"ref": "main", "inputs": {"command": "rm -rf /"}}
    status, payload = await _post(github_sandbox, DISPATCHES, user(sandbox_config, "alice"), body)
    assert status == 422
    assert payload is not None
    assert payload["message"].startswith("Unexpected inputs provided")


async def test_a_dispatch_to_a_ref_that_does_not_exist_is_refused_422(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """A branch the repository does not have: ``No ref found for``."""
    _host_agent(github_sandbox)
    body = {"ref": "no-such-branch"}
    status, payload = await _post(github_sandbox, DISPATCHES, user(sandbox_config, "alice"), body)
    assert status == 422
    assert payload is not None
    assert payload["message"] == "No ref found for: no-such-branch"


async def test_a_caller_with_read_access_may_not_dispatch(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """Dispatching needs push access (``actions: write``); read access gets a 403."""
    _host_agent(github_sandbox)
    body = {"ref": "main"}
    status, _ = await _post(github_sandbox, DISPATCHES, user(sandbox_config, "mallory"), body)
    assert status == 403
    assert github_sandbox.sandbox.dispatches == []


async def test_an_anonymous_dispatch_needs_authentication(github_sandbox: RunningSandbox) -> None:
    """Without a token the dispatch is GitHub's 401 Requires authentication."""
    _host_agent(github_sandbox)
    async with (
        aiohttp.ClientSession() as http,
        http.post(github_sandbox.api_url + DISPATCHES, json={"ref": "main"}) as response,
    ):
        assert response.status == 401


async def test_a_repository_dispatch_is_answered_204_and_recorded(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """``repository_dispatch`` with an event type and a small payload is recorded as sent."""
    github_sandbox.sandbox.add_repo(FORK)
    body = {"event_type": "ticketproxy-draft", "client_payload": {"ticket_url": "u"}}
    path = f"/repos/{FORK}/dispatches"
    status, _ = await _post(github_sandbox, path, user(sandbox_config, "alice"), body)
    assert status == 204
    [record] = github_sandbox.sandbox.dispatches
    assert (record.kind, record.event_type, record.client_payload) == (
        "repository_dispatch",
        "ticketproxy-draft",
        {"ticket_url": "u"},
    )


async def test_a_repository_dispatch_without_event_type_is_refused_422(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """``event_type`` is required; GitHub answers a validation error."""
    github_sandbox.sandbox.add_repo(FORK)
    path = f"/repos/{FORK}/dispatches"
    status, payload = await _post(github_sandbox, path, user(sandbox_config, "alice"), {})
    assert status == 422
    assert payload is not None
    assert payload["errors"][0]["field"] == "event_type"


def _request_schema() -> dict[str, Any]:
    path = "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches"
    content = spec()["paths"][path]["post"]["requestBody"]["content"]
    schema: dict[str, Any] = content["application/json"]["schema"]
    return schema
