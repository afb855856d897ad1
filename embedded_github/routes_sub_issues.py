"""Sub-issue operations: add, remove, reprioritise and list sub-issues; get an issue's parent.

A sub-issue is named by its **id**, never its number: a number that is no issue's id, or an
id sent as a string, is GitHub's 422. A parent holds at most 100 sub-issues, a tree at most
eight levels of sub-issues below its root, and an issue has one parent.
"""

from __future__ import annotations

from typing import Any

from embedded_github.errors import ApiError, not_found, validation_failed
from embedded_github.routes_issues import body_object, require_write
from embedded_github.routing import ApiCall, Reply, Route, paged, route
from embedded_github.store_rows import IssueRow, RepoRow

_DOCS = "https://docs.github.com/rest/issues/sub-issues"
MAX_SUB_ISSUES = 100
MAX_LEVELS = 8


def _refused(call: ApiCall, message: str) -> ApiError:
    return validation_failed(
        call.docs,
        {"resource": "Issue", "code": "custom", "field": "sub_issue_id", "message": message},
    )


def _id_field(call: ApiCall, data: dict[str, Any], name: str, *, required: bool) -> int | None:
    """Return an integer id from the body, or raise GitHub's schema 422 for anything else."""
    if name not in data:
        if required:
            raise ApiError(
                422, f'Invalid request.\n\n"{name}" wasn\'t supplied.', documentation_url=call.docs
            )
        return None
    value = data[name]
    if value is None and not required:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        shown = value if isinstance(value, str) else repr(value)
        raise ApiError(
            422,
            f"Invalid request.\n\nFor 'properties/{name}', \"{shown}\" is not an integer.",
            documentation_url=call.docs,
        )
    return value


def _child(call: ApiCall, repo: RepoRow, child_id: int) -> IssueRow:
    """Return the issue with an id, under the same owner as the parent, or raise a 422."""
    child = call.state.store.get_issue_by_id(child_id)
    if child is None:
        raise validation_failed(
            call.docs,
            {"resource": "Issue", "code": "invalid", "field": "sub_issue_id", "value": child_id},
        )
    owner = call.state.repos_by_id[child.repo_id].owner
    if owner.lower() != repo.owner.lower():
        raise _refused(call, "The sub-issue must belong to the same owner as the parent issue")
    return child


def add_sub_issue(call: ApiCall) -> Reply:
    """Make an issue (named by its id) the last sub-issue of the issue in the path."""
    repo, parent = call.issue()
    require_write(call)
    data = body_object(call)
    child_id = _id_field(call, data, "sub_issue_id", required=True)
    assert child_id is not None
    replace = data.get("replace_parent", False)
    if not isinstance(replace, bool):
        raise ApiError(
            422,
            f"Invalid request.\n\nFor 'properties/replace_parent', \"{replace}\" is not a boolean.",
            documentation_url=call.docs,
        )
    child = _child(call, repo, child_id)
    store = call.state.store
    if child.id == parent.id or child.id in store.ancestor_ids(parent.id):
        raise _refused(call, "An issue cannot be a sub-issue of itself or of its own sub-issue")
    current = store.parent_of(child.id)
    if current is not None and current.id == parent.id:
        raise _refused(call, "Issue may not contain duplicate sub-issues")
    if current is not None and not replace:
        raise _refused(call, "Sub-issue may only have one parent")
    total, _ = store.sub_issue_counts(parent.id)
    if total >= MAX_SUB_ISSUES:
        raise _refused(call, f"Parent cannot have more than {MAX_SUB_ISSUES} sub-issues")
    if len(store.ancestor_ids(parent.id)) + store.subtree_height(child.id) > MAX_LEVELS:
        raise _refused(call, f"Sub-issues cannot be nested more than {MAX_LEVELS} levels deep")
    store.add_sub_issue(parent.id, child.id)
    store.touch_issue(parent.id, now=call.now)
    payload = call.payloads.issue(store.get_issue_by_id(parent.id) or parent)
    return Reply(status=201, payload=payload, headers={"Location": payload["url"]})


def remove_sub_issue(call: ApiCall) -> Reply:
    """Detach a sub-issue (named by its id) from the issue in the path."""
    _, parent = call.issue()
    require_write(call)
    child_id = _id_field(call, body_object(call), "sub_issue_id", required=True)
    store = call.state.store
    current = None if child_id is None else store.parent_of(child_id)
    if child_id is None or current is None or current.id != parent.id:
        raise not_found(call.docs)
    store.remove_sub_issue(child_id)
    store.touch_issue(parent.id, now=call.now)
    return Reply(payload=call.payloads.issue(store.get_issue_by_id(parent.id) or parent))


def reprioritize_sub_issue(call: ApiCall) -> Reply:
    """Move a sub-issue just after or just before a sibling."""
    _, parent = call.issue()
    require_write(call)
    data = body_object(call)
    child_id = _id_field(call, data, "sub_issue_id", required=True)
    after_id = _id_field(call, data, "after_id", required=False)
    before_id = _id_field(call, data, "before_id", required=False)
    store = call.state.store
    order = [issue.id for issue in store.sub_issues(parent.id)]
    if after_id is not None and before_id is not None:
        raise ApiError(
            422, "Specify either after_id or before_id, not both", documentation_url=call.docs
        )
    # Neither (PyGithub sends ``"after_id": null``) moves the sub-issue to the front.
    sibling = after_id if after_id is not None else before_id
    if (
        child_id not in order
        or sibling == child_id
        or (sibling is not None and sibling not in order)
    ):
        raise ApiError(
            422,
            "Positional sub-issue and sub-issue to move must both be sub-issues of this issue",
            documentation_url=call.docs,
        )
    order.remove(child_id)
    index = 0 if sibling is None else order.index(sibling) + (1 if after_id is not None else 0)
    order.insert(index, child_id)
    store.reorder_sub_issues(parent.id, order)
    return Reply(payload=call.payloads.issue(parent))


def list_sub_issues(call: ApiCall) -> Reply:
    """List an issue's sub-issues in priority order, one page at a time."""
    _, parent = call.issue()
    return paged(call, call.state.store.sub_issues(parent.id), call.payloads.issue)


def get_parent(call: ApiCall) -> Reply:
    """Return the issue the issue in the path is a sub-issue of, or 404."""
    _, issue = call.issue()
    parent = call.state.store.parent_of(issue.id)
    if parent is None:
        raise not_found(call.docs)
    return Reply(payload=call.payloads.issue(parent))


_ISSUE = "/repos/{owner}/{repo}/issues/{issue_number}"

ROUTES: tuple[Route, ...] = (
    route("POST", f"{_ISSUE}/sub_issues", add_sub_issue, f"{_DOCS}#add-sub-issue"),
    route("GET", f"{_ISSUE}/sub_issues", list_sub_issues, f"{_DOCS}#list-sub-issues"),
    route("DELETE", f"{_ISSUE}/sub_issue", remove_sub_issue, f"{_DOCS}#remove-sub-issue"),
    route(
        "PATCH",
        f"{_ISSUE}/sub_issues/priority",
        reprioritize_sub_issue,
        f"{_DOCS}#reprioritize-sub-issue",
    ),
    route("GET", f"{_ISSUE}/parent", get_parent, f"{_DOCS}#get-parent-issue"),
)
