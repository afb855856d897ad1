"""Issue comment operations: per issue and repository-wide, create, get, edit, delete."""

from __future__ import annotations

from embedded_github.config import SandboxUser
from embedded_github.errors import (
    LOCKING_DOCS,
    ApiError,
    forbidden,
    invalid_field,
    missing_field,
    validation_failed,
)
from embedded_github.routes_issues import body_object
from embedded_github.routing import ApiCall, Reply, Route, paged, route
from embedded_github.state import CommentChange, SandboxState, author_of, can_write
from embedded_github.store_rows import CommentRow, IssueRow
from embedded_github.timestamps import parse_since

_DOCS = "https://docs.github.com/rest/issues/comments"


def post_comment(
    state: SandboxState, issue: IssueRow, *, user: SandboxUser, body: str, now: int
) -> CommentRow:
    """Add a comment, refusing it on a locked issue unless the user has push access."""
    if issue.locked and not can_write(user):
        # GitHub's own words; only collaborators may speak in a locked conversation.
        raise ApiError(
            403,
            "Unable to create comment because issue is locked.",
            documentation_url=LOCKING_DOCS,
        )
    comment = state.store.create_comment(issue, body=body, author=author_of(user), now=now)
    state.comment_changed(CommentChange("created", comment, user))
    return comment


def _comment_body(call: ApiCall) -> str:
    data = body_object(call)
    if "body" not in data or data["body"] is None:
        raise missing_field("IssueComment", "body", call.docs)
    body = data["body"]
    if not isinstance(body, str):
        raise invalid_field("IssueComment", "body", call.docs)
    if not body.strip():
        raise validation_failed(
            call.docs,
            {
                "resource": "IssueComment",
                "code": "unprocessable",
                "field": "data",
                "message": "Body cannot be blank",
            },
        )
    return body


def _since(call: ApiCall) -> int | None:
    if "since" not in call.query:
        return None
    since = parse_since(call.query["since"])
    if since is None:
        raise invalid_field("IssueComment", "since", call.docs, call.query["since"])
    return since


def create_comment(call: ApiCall) -> Reply:
    """Comment on an issue."""
    _, issue = call.issue()
    assert call.viewer is not None
    body = _comment_body(call)
    comment = post_comment(call.state, issue, user=call.viewer, body=body, now=call.now)
    payload = call.payloads.comment(comment)
    return Reply(status=201, payload=payload, headers={"Location": payload["url"]})


def list_issue_comments(call: ApiCall) -> Reply:
    """List one issue's comments, oldest first, optionally updated since a time."""
    repo, issue = call.issue()
    comments = call.state.store.list_comments(
        repo.id, issue_number=issue.number, since=_since(call)
    )
    return paged(call, comments, call.payloads.comment)


def list_repo_comments(call: ApiCall) -> Reply:
    """List the comments of every issue in a repository, as GitHub sorts and filters them."""
    repo = call.repo()
    sort: str | None = None
    descending = False
    # Without `sort`, GitHub orders by ascending id and ignores `direction`.
    if "sort" in call.query:
        sort = call.choice("sort", ("created", "updated"), "created", "IssueComment")
        direction = call.choice("direction", ("asc", "desc"), "desc", "IssueComment")
        descending = direction == "desc"
    comments = call.state.store.list_comments(
        repo.id, since=_since(call), sort=sort, descending=descending
    )
    return paged(call, comments, call.payloads.comment)


def get_comment(call: ApiCall) -> Reply:
    """Return one comment."""
    _, comment = call.comment()
    return Reply(payload=call.payloads.comment(comment))


def _require_author_or_writer(call: ApiCall, comment: CommentRow) -> None:
    viewer = call.viewer
    assert viewer is not None
    if viewer.login.lower() != comment.author.login.lower() and not can_write(viewer):
        raise forbidden(call.docs)


def update_comment(call: ApiCall) -> Reply:
    """Replace a comment's body (its author, or someone with push access)."""
    _, comment = call.comment()
    _require_author_or_writer(call, comment)
    body = _comment_body(call)
    updated = call.state.store.update_comment(comment, body=body, now=call.now)
    assert call.viewer is not None
    call.state.comment_changed(
        CommentChange("edited", updated, call.viewer, previous_body=comment.body)
    )
    return Reply(payload=call.payloads.comment(updated))


def delete_comment(call: ApiCall) -> Reply:
    """Delete a comment (its author, or someone with push access)."""
    _, comment = call.comment()
    _require_author_or_writer(call, comment)
    call.state.store.delete_comment(comment)
    assert call.viewer is not None
    call.state.comment_changed(CommentChange("deleted", comment, call.viewer))
    return Reply(status=204)


_ONE = "/repos/{owner}/{repo}/issues/comments/{comment_id}"

ROUTES: tuple[Route, ...] = (
    route(
        "GET",
        "/repos/{owner}/{repo}/issues/comments",
        list_repo_comments,
        f"{_DOCS}#list-issue-comments-for-a-repository",
    ),
    route("GET", _ONE, get_comment, f"{_DOCS}#get-an-issue-comment"),
    route("PATCH", _ONE, update_comment, f"{_DOCS}#update-an-issue-comment"),
    route("DELETE", _ONE, delete_comment, f"{_DOCS}#delete-an-issue-comment"),
    route(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        list_issue_comments,
        f"{_DOCS}#list-issue-comments",
    ),
    route(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        create_comment,
        f"{_DOCS}#create-an-issue-comment",
        creates_content=True,
    ),
)
