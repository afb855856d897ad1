"""Dispatches: a workflow's ``workflow_dispatch`` and a repository's ``repository_dispatch``.

https://docs.github.com/rest/actions/workflows#create-a-workflow-dispatch-event and
https://docs.github.com/rest/repos/repos#create-a-repository-dispatch-event. Both answer
204 with no body; the sandbox records each accepted dispatch (:mod:`embedded_github.workflows`).
GitHub's limits are kept: ``ref`` is required, at most 25 ``inputs`` and only those the
workflow declares; an ``event_type`` of 1 to 100 characters, at most 10 top-level
``client_payload`` properties. Either needs push access (a fine-grained token's
``actions: write`` or ``contents: write``); a caller with read access only is refused.
"""

from __future__ import annotations

import json
from typing import Any

from embedded_github.errors import ApiError, forbidden, invalid_field, missing_field, not_found
from embedded_github.routes_issues import body_object
from embedded_github.routing import ApiCall, Reply, Route, route
from embedded_github.state import can_write
from embedded_github.workflows import DispatchRecord

_WORKFLOW_DOCS = "https://docs.github.com/rest/actions/workflows#create-a-workflow-dispatch-event"
_REPO_DOCS = "https://docs.github.com/rest/repos/repos#create-a-repository-dispatch-event"
MAX_INPUTS = 25
MAX_CLIENT_PAYLOAD_KEYS = 10
MAX_EVENT_TYPE = 100
MAX_CLIENT_PAYLOAD_BYTES = 64 * 1024


def _invalid_request(call: ApiCall, message: str) -> ApiError:
    """Return the 422 GitHub answers a dispatch it cannot run with (its message says why)."""
    return ApiError(422, message, documentation_url=call.docs)


def create_workflow_dispatch(call: ApiCall) -> Reply:
    """Trigger a workflow by id or file name: 204, or GitHub's 404 and 422."""
    repo = call.repo()
    workflow = call.state.workflows.find(repo.full_name, call.params["workflow_id"])
    if workflow is None:
        raise not_found(call.docs)
    if not can_write(call.viewer):
        raise forbidden(call.docs)
    body = body_object(call)
    ref = body.get("ref")
    if ref is None:
        raise _invalid_request(call, 'Invalid request.\n\n"ref" wasn\'t supplied.')
    if not isinstance(ref, str):
        raise invalid_field("Request", "ref", call.docs)
    inputs = body.get("inputs", {})
    if not isinstance(inputs, dict):
        raise _invalid_request(
            call, "Invalid request.\n\nFor 'properties/inputs', is not an object."
        )
    if len(inputs) > MAX_INPUTS:
        raise _invalid_request(
            call, f"Invalid request.\n\nFor 'properties/inputs', more than {MAX_INPUTS} properties."
        )
    if not workflow.dispatchable:
        raise _invalid_request(call, "Workflow does not have 'workflow_dispatch' trigger")
    if ref.removeprefix("refs/heads/").removeprefix("refs/tags/") not in workflow.refs:
        raise _invalid_request(call, f"No ref found for: {ref}")
    unexpected = sorted(name for name in inputs if name not in workflow.inputs)
    if unexpected:
        raise _invalid_request(call, f"Unexpected inputs provided: {json.dumps(unexpected)}")
    assert call.viewer is not None
    call.state.workflows.dispatches.append(
        DispatchRecord(
            kind="workflow_dispatch",
            repo=repo.full_name,
            login=call.viewer.login,
            at=call.now,
            workflow=workflow,
            ref=ref,
            inputs=dict(inputs),
        )
    )
    return Reply(status=204)


def create_repository_dispatch(call: ApiCall) -> Reply:
    """Send a ``repository_dispatch`` event: 204, or GitHub's 404 and 422."""
    repo = call.repo()
    if not can_write(call.viewer):
        raise forbidden(call.docs)
    body = body_object(call)
    event_type = body.get("event_type")
    if event_type is None:
        raise missing_field("Repository", "event_type", call.docs)
    if not isinstance(event_type, str) or not 1 <= len(event_type) <= MAX_EVENT_TYPE:
        raise invalid_field("Repository", "event_type", call.docs)
    payload: Any = body.get("client_payload", {})
    if not isinstance(payload, dict) or len(payload) > MAX_CLIENT_PAYLOAD_KEYS:
        raise invalid_field("Repository", "client_payload", call.docs)
    if len(json.dumps(payload).encode()) >= MAX_CLIENT_PAYLOAD_BYTES:
        raise invalid_field("Repository", "client_payload", call.docs)
    assert call.viewer is not None
    call.state.workflows.dispatches.append(
        DispatchRecord(
            kind="repository_dispatch",
            repo=repo.full_name,
            login=call.viewer.login,
            at=call.now,
            event_type=event_type,
            client_payload=dict(payload),
        )
    )
    return Reply(status=204)


ROUTES: tuple[Route, ...] = (
    route(
        "POST",
        "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches",
        create_workflow_dispatch,
        _WORKFLOW_DOCS,
    ),
    route("POST", "/repos/{owner}/{repo}/dispatches", create_repository_dispatch, _REPO_DOCS),
)
