"""GitHub's JSON for issues, comments, labels and reactions, and the builder of all payloads.

:class:`PayloadBuilder` is what handlers and webhooks render with: these objects on top of
the accounts and repositories of :mod:`embedded_github.account_payloads`.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

from embedded_github.account_payloads import AccountPayloads, JsonObject, node_id
from embedded_github.config import SandboxUser
from embedded_github.store_rows import CommentRow, IssueRow, LabelRow, ReactionRow, RepoRow
from embedded_github.timestamps import format_timestamp

REACTION_CONTENTS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


def author_association(user: SandboxUser | None, repo: RepoRow) -> str:
    """Return the author association GitHub would show for a user on a repository."""
    if user is None:
        return "NONE"
    if user.login.lower() == repo.owner.lower() or user.permission == "admin":
        return "OWNER"
    if user.permission == "write":
        return "COLLABORATOR"
    return "NONE"


class PayloadBuilder(AccountPayloads):
    """Render stored rows as GitHub REST JSON, with URLs under one origin."""

    # URLs ---------------------------------------------------------------------------------

    def issue_url(self, repo: RepoRow, number: int) -> str:
        """Return the API URL of an issue."""
        return f"{self.repo_url(repo)}/issues/{number}"

    def issue_html_url(self, repo: RepoRow, number: int) -> str:
        """Return the web page of an issue."""
        return f"{self.origin}/{repo.owner}/{repo.name}/issues/{number}"

    # Labels -------------------------------------------------------------------------------

    def label(self, repo: RepoRow, label: LabelRow) -> JsonObject:
        """Return a ``label`` object."""
        return {
            "id": label.id,
            "node_id": node_id("010", "Label", label.id),
            "url": f"{self.repo_url(repo)}/labels/{quote(label.name, safe='')}",
            "name": label.name,
            "color": label.color,
            "default": False,
            "description": label.description,
        }

    # Issues and comments ------------------------------------------------------------------

    def reaction_rollup(self, url: str, counts: Mapping[str, int]) -> JsonObject:
        """Return a ``reaction-rollup`` object."""
        rollup: JsonObject = {"url": url, "total_count": sum(counts.values())}
        for content in REACTION_CONTENTS:
            rollup[content] = counts.get(content, 0)
        return rollup

    def issue(self, issue: IssueRow) -> JsonObject:
        """Return an ``issue`` object."""
        repo = self._repos[issue.repo_id]
        url = self.issue_url(repo, issue.number)
        labels = self._store.issue_labels(issue.id)
        return {
            "url": url,
            "repository_url": self.repo_url(repo),
            "labels_url": f"{url}/labels{{/name}}",
            "comments_url": f"{url}/comments",
            "events_url": f"{url}/events",
            "html_url": self.issue_html_url(repo, issue.number),
            "id": issue.id,
            "node_id": node_id("05", "Issue", issue.id),
            "number": issue.number,
            "title": issue.title,
            "user": self.author(issue.author),
            "labels": [self.label(repo, label) for label in labels],
            "state": issue.state,
            "locked": issue.locked,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": self._store.comment_count(issue.repo_id, issue.number),
            "created_at": format_timestamp(issue.created_at),
            "updated_at": format_timestamp(issue.updated_at),
            "closed_at": None if issue.closed_at is None else format_timestamp(issue.closed_at),
            "author_association": author_association(self._find_user(issue.author.login), repo),
            "type": None,
            "active_lock_reason": issue.lock_reason if issue.locked else None,
            "sub_issues_summary": self.sub_issues_summary(issue),
            "parent_issue_url": self.parent_issue_url(issue),
            "issue_dependencies_summary": {
                "blocked_by": 0,
                "blocking": 0,
                "total_blocked_by": 0,
                "total_blocking": 0,
            },
            "body": issue.body,
            "closed_by": None if issue.closed_by is None else self.author(issue.closed_by),
            "reactions": self.reaction_rollup(
                f"{url}/reactions", self._store.reaction_counts("issue", issue.id)
            ),
            "timeline_url": f"{url}/timeline",
            "performed_via_github_app": None,
            "state_reason": issue.state_reason,
        }

    def sub_issues_summary(self, issue: IssueRow) -> JsonObject:
        """Return a ``sub-issues-summary``: children, closed children, the closed share."""
        total, completed = self._store.sub_issue_counts(issue.id)
        percent = completed * 100 // total if total else 0
        return {"total": total, "completed": completed, "percent_completed": percent}

    def parent_issue_url(self, issue: IssueRow) -> str | None:
        """Return the API URL of the issue's parent, or None for an issue that has none."""
        parent = self._store.parent_of(issue.id)
        if parent is None:
            return None
        return self.issue_url(self._repos[parent.repo_id], parent.number)

    def comment(self, comment: CommentRow) -> JsonObject:
        """Return an ``issue-comment`` object."""
        repo = self._repos[comment.repo_id]
        url = f"{self.repo_url(repo)}/issues/comments/{comment.id}"
        return {
            "url": url,
            "html_url": (
                f"{self.issue_html_url(repo, comment.issue_number)}#issuecomment-{comment.id}"
            ),
            "issue_url": self.issue_url(repo, comment.issue_number),
            "id": comment.id,
            "node_id": node_id("012", "IssueComment", comment.id),
            "user": self.author(comment.author),
            "created_at": format_timestamp(comment.created_at),
            "updated_at": format_timestamp(comment.updated_at),
            "body": comment.body,
            "author_association": author_association(self._find_user(comment.author.login), repo),
            "reactions": self.reaction_rollup(
                f"{url}/reactions", self._store.reaction_counts("comment", comment.id)
            ),
            "performed_via_github_app": None,
        }

    def reaction(self, reaction: ReactionRow) -> JsonObject:
        """Return a ``reaction`` object."""
        return {
            "id": reaction.id,
            "node_id": node_id("08", "Reaction", reaction.id),
            "user": self.author(reaction.author),
            "content": reaction.content,
            "created_at": format_timestamp(reaction.created_at),
        }
