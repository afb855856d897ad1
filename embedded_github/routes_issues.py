"""Issue operations: create, list, get, update, lock and unlock."""

from __future__ import annotations

from typing import Any

from embedded_github.errors import forbidden, invalid_field, missing_field, validation_failed
from embedded_github.routing import ApiCall, Reply, Route, paged, route
from embedded_github.state import author_of, can_write
from embedded_github.timestamps import parse_since

_DOCS = "https://docs.github.com/rest/issues/issues"
STATE_REASONS = ("completed", "not_planned", "reopened", "duplicate")
LOCK_REASONS = ("off-topic", "too heated", "resolved", "spam")


def body_object(call: ApiCall) -> dict[str, Any]:
    """Return the JSON body as an object, treating no body as ``{}``."""
    if call.body is None:
        return {}
    if not isinstance(call.body, dict):
        raise validation_failed(
            call.docs, {"resource": "Request", "code": "invalid", "field": "body"}
        )
    return call.body


def label_names(value: Any, docs: str, resource: str = "Label") -> list[str]:
    """Return label names from a list of strings or of ``{"name": ...}`` objects."""
    if not isinstance(value, list):
        raise invalid_field(resource, "labels", docs)
    names: list[str] = []
    for item in value:
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str) or not name.strip():
            raise invalid_field(resource, "labels", docs)
        names.append(name.strip())
    return names


def require_write(call: ApiCall) -> None:
    """Refuse a caller without push access with GitHub's 403."""
    if not can_write(call.viewer):
        raise forbidden(call.docs)


def create_issue(call: ApiCall) -> Reply:
    """Open an issue; unknown labels are created, as GitHub does for users with push access."""
    repo = call.repo()
    require_write(call)
    assert call.viewer is not None
    data = body_object(call)
    title = data.get("title")
    if title is None or title == "":
        raise missing_field("Issue", "title", call.docs)
    if isinstance(title, int) and not isinstance(title, bool):
        title = str(title)  # GitHub accepts a number as a title.
    if not isinstance(title, str):
        raise invalid_field("Issue", "title", call.docs)
    body = data.get("body")
    if body is not None and not isinstance(body, str):
        raise invalid_field("Issue", "body", call.docs)
    labels = label_names(data["labels"], call.docs, "Issue") if "labels" in data else []
    store = call.state.store
    issue = store.create_issue(
        repo, title=title, body=body, author=author_of(call.viewer), now=call.now
    )
    if labels:
        store.add_issue_labels(issue.id, store.ensure_labels(repo.id, labels))
    payload = call.payloads.issue(issue)
    return Reply(status=201, payload=payload, headers={"Location": payload["url"]})


def list_issues(call: ApiCall) -> Reply:
    """List a repository's issues with GitHub's filters, sort and pagination."""
    repo = call.repo()
    state = call.choice("state", ("open", "closed", "all"), "open", "Issue")
    sort = call.choice("sort", ("created", "updated", "comments"), "created", "Issue")
    direction = call.choice("direction", ("asc", "desc"), "desc", "Issue")
    since = None
    if "since" in call.query:
        since = parse_since(call.query["since"])
        if since is None:
            raise invalid_field("Issue", "since", call.docs, call.query["since"])
    labels = [name.strip() for name in call.query.get("labels", "").split(",") if name.strip()]
    issues = call.state.store.list_issues(
        repo.id,
        state=state,
        labels=labels,
        sort=sort,
        descending=direction == "desc",
        since=since,
    )
    return paged(call, issues, call.payloads.issue)


def get_issue(call: ApiCall) -> Reply:
    """Return one issue."""
    _, issue = call.issue()
    return Reply(payload=call.payloads.issue(issue))


def update_issue(call: ApiCall) -> Reply:
    """Change an issue's title, body, state, state reason or labels."""
    repo, issue = call.issue()
    require_write(call)
    assert call.viewer is not None
    data = body_object(call)
    title = data.get("title")
    if "title" in data and (not isinstance(title, str) or not title):
        raise missing_field("Issue", "title", call.docs)
    if "body" in data and data["body"] is not None and not isinstance(data["body"], str):
        raise invalid_field("Issue", "body", call.docs)
    state = data.get("state")
    if state is not None and state not in ("open", "closed"):
        raise invalid_field("Issue", "state", call.docs, state)
    reason = data.get("state_reason")
    if reason is not None and reason not in STATE_REASONS:
        raise invalid_field("Issue", "state_reason", call.docs, reason)
    labels = label_names(data["labels"], call.docs, "Issue") if "labels" in data else None
    store = call.state.store
    issue = store.update_issue(
        issue,
        now=call.now,
        title=title,
        body=data.get("body"),
        set_body="body" in data,
        state=state,
        state_reason=reason,
        closed_by=author_of(call.viewer),
    )
    if labels is not None:
        store.clear_issue_labels(issue.id)
        store.add_issue_labels(issue.id, store.ensure_labels(repo.id, labels))
    return Reply(payload=call.payloads.issue(issue))


def lock_issue(call: ApiCall) -> Reply:
    """Lock an issue's conversation so that only collaborators may comment."""
    _, issue = call.issue()
    require_write(call)
    data = body_object(call)
    reason = data.get("lock_reason")
    if reason is not None and reason not in LOCK_REASONS:
        raise invalid_field("Issue", "lock_reason", call.docs, reason)
    call.state.store.set_lock(issue, locked=True, reason=reason, now=call.now)
    return Reply(status=204)


def unlock_issue(call: ApiCall) -> Reply:
    """Unlock an issue's conversation."""
    _, issue = call.issue()
    require_write(call)
    call.state.store.set_lock(issue, locked=False, reason=None, now=call.now)
    return Reply(status=204)


ROUTES: tuple[Route, ...] = (
    route(
        "POST",
        "/repos/{owner}/{repo}/issues",
        create_issue,
        f"{_DOCS}#create-an-issue",
        creates_content=True,
    ),
    route("GET", "/repos/{owner}/{repo}/issues", list_issues, f"{_DOCS}#list-repository-issues"),
    route("GET", "/repos/{owner}/{repo}/issues/{issue_number}", get_issue, f"{_DOCS}#get-an-issue"),
    route(
        "PATCH",
        "/repos/{owner}/{repo}/issues/{issue_number}",
        update_issue,
        f"{_DOCS}#update-an-issue",
    ),
    route(
        "PUT",
        "/repos/{owner}/{repo}/issues/{issue_number}/lock",
        lock_issue,
        f"{_DOCS}#lock-an-issue",
    ),
    route(
        "DELETE",
        "/repos/{owner}/{repo}/issues/{issue_number}/lock",
        unlock_issue,
        f"{_DOCS}#unlock-an-issue",
    ),
)
