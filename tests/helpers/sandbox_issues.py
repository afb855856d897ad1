"""Issues of the embedded GitHub's acme/agents, read and made directly, for the GitHub
adapter's tests; and the client's sleep that takes no time."""

from __future__ import annotations

from embedded_github import RunningSandbox
from embedded_github.state import author_of
from embedded_github.store_rows import CommentRow, IssueRow


async def no_sleep(seconds: float) -> None:
    """Return at once: the GitHub client's own short retries take no time in tests."""


def issue(sandbox: RunningSandbox, number: int = 1) -> IssueRow:
    """Return issue ``number`` of acme/agents, creating issues up to it if needed."""
    state = sandbox.sandbox.state
    repo = state.find_repo("acme", "agents")
    alice = state.find_user("alice")
    assert repo is not None
    assert alice is not None
    while (found := state.store.get_issue(repo.id, number)) is None:
        state.store.create_issue(
            repo, title="ticket", body="body", author=author_of(alice), now=state.now()
        )
    return found


def comments_on(sandbox: RunningSandbox, number: int = 1) -> list[CommentRow]:
    """Return the comments the sandbox holds for an issue."""
    row = issue(sandbox, number)
    return sandbox.sandbox.state.store.list_comments(row.repo_id, issue_number=number)


def labels_on(sandbox: RunningSandbox, number: int = 1) -> set[str]:
    """Return the names of an issue's labels."""
    row = issue(sandbox, number)
    return {label.name for label in sandbox.sandbox.state.store.issue_labels(row.id)}
