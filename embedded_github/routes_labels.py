"""Label operations: a repository's labels, and the labels on an issue."""

from __future__ import annotations

import re
from typing import Any

from embedded_github.errors import ApiError, invalid_field, missing_field, validation_failed
from embedded_github.routes_issues import body_object, label_names, require_write
from embedded_github.routing import ApiCall, Reply, Route, paged, route

_DOCS = "https://docs.github.com/rest/issues/labels"
_COLOR = re.compile(r"[0-9a-fA-F]{6}")


def list_repo_labels(call: ApiCall) -> Reply:
    """List a repository's labels."""
    repo = call.repo()
    labels = call.state.store.list_labels(repo.id)
    return paged(call, labels, lambda label: call.payloads.label(repo, label))


def get_label(call: ApiCall) -> Reply:
    """Return one label by name."""
    repo = call.repo()
    label = call.state.store.get_label(repo.id, call.params["name"])
    if label is None:
        raise ApiError(404, "Not Found", documentation_url=call.docs)
    return Reply(payload=call.payloads.label(repo, label))


def create_label(call: ApiCall) -> Reply:
    """Add a label to a repository."""
    repo = call.repo()
    require_write(call)
    data = body_object(call)
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise missing_field("Label", "name", call.docs)
    color = data.get("color", "ededed")
    if isinstance(color, str):
        color = color.removeprefix("#")
    if not isinstance(color, str) or not _COLOR.fullmatch(color):
        raise invalid_field("Label", "color", call.docs)
    description = data.get("description")
    if description is not None and (not isinstance(description, str) or len(description) > 100):
        raise invalid_field("Label", "description", call.docs)
    store = call.state.store
    if store.get_label(repo.id, name.strip()) is not None:
        raise validation_failed(
            call.docs, {"resource": "Label", "code": "already_exists", "field": "name"}
        )
    label = store.create_label(
        repo.id, name=name.strip(), color=color.lower(), description=description
    )
    payload = call.payloads.label(repo, label)
    return Reply(status=201, payload=payload, headers={"Location": payload["url"]})


def _names_from_body(call: ApiCall, *, allow_empty: bool) -> list[str]:
    body: Any = call.body
    # GitHub takes {"labels": [...]} or, still, a bare list.
    value = body_object(call).get("labels") if not isinstance(body, list) else body
    if value is None:
        if allow_empty:
            return []
        raise missing_field("Label", "labels", call.docs)
    names = label_names(value, call.docs)
    if not names and not allow_empty:
        raise missing_field("Label", "labels", call.docs)
    return names


def _issue_labels_reply(call: ApiCall, status: int = 200) -> Reply:
    repo, issue = call.issue()
    labels = call.state.store.issue_labels(issue.id)
    return Reply(status=status, payload=[call.payloads.label(repo, label) for label in labels])


def list_issue_labels(call: ApiCall) -> Reply:
    """List the labels on an issue."""
    repo, issue = call.issue()
    labels = call.state.store.issue_labels(issue.id)
    return paged(call, labels, lambda label: call.payloads.label(repo, label))


def add_issue_labels(call: ApiCall) -> Reply:
    """Add labels to an issue, creating unknown ones."""
    repo, issue = call.issue()
    require_write(call)
    names = _names_from_body(call, allow_empty=False)
    store = call.state.store
    store.add_issue_labels(issue.id, store.ensure_labels(repo.id, names))
    store.touch_issue(issue.id, now=call.now)
    return _issue_labels_reply(call)


def set_issue_labels(call: ApiCall) -> Reply:
    """Replace the labels on an issue."""
    repo, issue = call.issue()
    require_write(call)
    names = _names_from_body(call, allow_empty=True)
    store = call.state.store
    store.clear_issue_labels(issue.id)
    store.add_issue_labels(issue.id, store.ensure_labels(repo.id, names))
    store.touch_issue(issue.id, now=call.now)
    return _issue_labels_reply(call)


def remove_issue_label(call: ApiCall) -> Reply:
    """Take one label off an issue; 404 ``Label does not exist`` if it is not there."""
    repo, issue = call.issue()
    require_write(call)
    store = call.state.store
    label = store.get_label(repo.id, call.params["name"])
    if label is None or not store.remove_issue_label(issue.id, label.id):
        raise ApiError(404, "Label does not exist", documentation_url=call.docs)
    store.touch_issue(issue.id, now=call.now)
    return _issue_labels_reply(call)


def remove_all_issue_labels(call: ApiCall) -> Reply:
    """Take every label off an issue."""
    _, issue = call.issue()
    require_write(call)
    call.state.store.clear_issue_labels(issue.id)
    call.state.store.touch_issue(issue.id, now=call.now)
    return Reply(status=204)


_ISSUE = "/repos/{owner}/{repo}/issues/{issue_number}/labels"

ROUTES: tuple[Route, ...] = (
    route(
        "GET",
        "/repos/{owner}/{repo}/labels",
        list_repo_labels,
        f"{_DOCS}#list-labels-for-a-repository",
    ),
    route("POST", "/repos/{owner}/{repo}/labels", create_label, f"{_DOCS}#create-a-label"),
    route("GET", "/repos/{owner}/{repo}/labels/{name}", get_label, f"{_DOCS}#get-a-label"),
    route("GET", _ISSUE, list_issue_labels, f"{_DOCS}#list-labels-for-an-issue"),
    route("POST", _ISSUE, add_issue_labels, f"{_DOCS}#add-labels-to-an-issue"),
    route("PUT", _ISSUE, set_issue_labels, f"{_DOCS}#set-labels-for-an-issue"),
    route("DELETE", _ISSUE, remove_all_issue_labels, f"{_DOCS}#remove-all-labels-from-an-issue"),
    route(
        "DELETE", _ISSUE + "/{name}", remove_issue_label, f"{_DOCS}#remove-a-label-from-an-issue"
    ),
)
