"""Reactions on issues and on issue comments."""

from __future__ import annotations

from embedded_github.errors import ApiError, forbidden, invalid_field, missing_field
from embedded_github.payloads import REACTION_CONTENTS
from embedded_github.routes_issues import body_object
from embedded_github.routing import ApiCall, Reply, Route, paged, route
from embedded_github.state import author_of, can_write

_DOCS = "https://docs.github.com/rest/reactions/reactions"


def _subject(call: ApiCall) -> tuple[str, int, bool]:
    """Return the kind and id reacted to, and whether its issue is locked."""
    if "comment_id" in call.params:
        repo, comment = call.comment()
        issue = call.state.store.get_issue(repo.id, comment.issue_number)
        return "comment", comment.id, bool(issue and issue.locked)
    _, issue = call.issue()
    return "issue", issue.id, issue.locked


def list_reactions(call: ApiCall) -> Reply:
    """List reactions, optionally of one content."""
    kind, subject_id, _ = _subject(call)
    content = call.query.get("content")
    if content is not None and content not in REACTION_CONTENTS:
        raise invalid_field("Reaction", "content", call.docs, content)
    reactions = call.state.store.list_reactions(kind, subject_id, content=content)
    return paged(call, reactions, call.payloads.reaction)


def create_reaction(call: ApiCall) -> Reply:
    """React; 201 for a new reaction, 200 when the same user already reacted the same way."""
    kind, subject_id, locked = _subject(call)
    assert call.viewer is not None
    content = body_object(call).get("content")
    if content is None:
        raise missing_field("Reaction", "content", call.docs)
    if content not in REACTION_CONTENTS:
        raise invalid_field("Reaction", "content", call.docs, content)
    if locked and not can_write(call.viewer):
        raise forbidden(call.docs)
    reaction, created = call.state.store.add_reaction(
        kind, subject_id, author=author_of(call.viewer), content=content, now=call.now
    )
    return Reply(status=201 if created else 200, payload=call.payloads.reaction(reaction))


def delete_reaction(call: ApiCall) -> Reply:
    """Delete a reaction (its author, or someone with push access)."""
    kind, subject_id, _ = _subject(call)
    assert call.viewer is not None
    store = call.state.store
    reaction_id = int(call.params["reaction_id"])
    reactions = [r for r in store.list_reactions(kind, subject_id) if r.id == reaction_id]
    if not reactions:
        raise ApiError(404, "Not Found", documentation_url=call.docs)
    if reactions[0].author.login.lower() != call.viewer.login.lower() and not can_write(
        call.viewer
    ):
        raise forbidden(call.docs)
    store.delete_reaction(kind, subject_id, reaction_id)
    return Reply(status=204)


_COMMENT = "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"
_ISSUE = "/repos/{owner}/{repo}/issues/{issue_number}/reactions"

ROUTES: tuple[Route, ...] = (
    route("GET", _COMMENT, list_reactions, f"{_DOCS}#list-reactions-for-an-issue-comment"),
    route("POST", _COMMENT, create_reaction, f"{_DOCS}#create-reaction-for-an-issue-comment"),
    route(
        "DELETE",
        _COMMENT + "/{reaction_id}",
        delete_reaction,
        f"{_DOCS}#delete-an-issue-comment-reaction",
    ),
    route("GET", _ISSUE, list_reactions, f"{_DOCS}#list-reactions-for-an-issue"),
    route("POST", _ISSUE, create_reaction, f"{_DOCS}#create-reaction-for-an-issue"),
    route(
        "DELETE", _ISSUE + "/{reaction_id}", delete_reaction, f"{_DOCS}#delete-an-issue-reaction"
    ),
)
