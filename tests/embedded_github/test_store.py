"""The SQLite store on its own: ids, filters, and state that survives a restart."""

from __future__ import annotations

from pathlib import Path

from embedded_github.store import SandboxStore
from embedded_github.store_rows import Author

BOT = Author("ticketproxy-bot", 1)


def test_ids_are_large_and_distinct_per_kind() -> None:
    """Issue, comment and label ids live in separate large ranges; comments exceed 32 bits."""
    store = SandboxStore()
    repo = store.ensure_repo("acme/agents", now=0)
    issue = store.create_issue(repo, title="t", body=None, author=BOT, now=0)
    comment = store.create_comment(issue, body="b", author=BOT, now=0)
    (label,) = store.ensure_labels(repo.id, ["x"])
    assert len({repo.id, issue.id, comment.id, label.id}) == 4
    assert comment.id > 2**31
    assert issue.number == 1
    store.close()


def test_label_filter_requires_every_label_and_state_filter_applies() -> None:
    """Listing by labels keeps issues carrying all of them (case-insensitive), in state."""
    store = SandboxStore()
    repo = store.ensure_repo("acme/agents", now=0)
    both = store.create_issue(repo, title="both", body=None, author=BOT, now=1)
    one = store.create_issue(repo, title="one", body=None, author=BOT, now=2)
    store.add_issue_labels(both.id, store.ensure_labels(repo.id, ["ticket", "pending"]))
    store.add_issue_labels(one.id, store.ensure_labels(repo.id, ["ticket"]))
    store.update_issue(one, now=3, state="closed", closed_by=BOT)
    titles = [i.title for i in store.list_issues(repo.id, state="all", labels=["TICKET"])]
    assert titles == ["one", "both"]
    assert [i.title for i in store.list_issues(repo.id, labels=["ticket", "pending"])] == ["both"]
    assert [i.title for i in store.list_issues(repo.id, state="closed")] == ["one"]
    store.close()


def test_file_database_keeps_issues_and_comments_across_a_restart(tmp_path: Path) -> None:
    """A sandbox backed by a file finds its issues and comments again after reopening."""
    path = tmp_path / "sandbox.sqlite3"
    first = SandboxStore(path)
    repo = first.ensure_repo("acme/agents", now=0)
    issue = first.create_issue(repo, title="t", body="b", author=BOT, now=0)
    first.create_comment(issue, body="kept", author=BOT, now=5)
    first.close()
    second = SandboxStore(path)
    again = second.ensure_repo("acme/agents", now=10)
    assert again.id == repo.id
    assert [c.body for c in second.list_comments(again.id)] == ["kept"]
    assert second.create_issue(again, title="u", body=None, author=BOT, now=11).number == 2
    second.close()


def test_a_deleted_comments_id_is_never_handed_out_again() -> None:
    """GitHub never reuses ids: after deleting the newest comment the next one gets a new id."""
    store = SandboxStore()
    repo = store.ensure_repo("acme/agents", now=0)
    issue = store.create_issue(repo, title="t", body=None, author=BOT, now=0)
    first = store.create_comment(issue, body="a", author=BOT, now=0)
    store.delete_comment(first)
    second = store.create_comment(issue, body="b", author=BOT, now=1)
    assert second.id > first.id
    store.close()
