"""PyGithub, the client ticketproxy uses, accepts everything the sandbox answers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from github import GithubException

from embedded_github import RunningSandbox, SandboxConfig
from embedded_github.state import author_of
from tests.helpers.embedded_github_clients import github_client, user
from tests.helpers.embedded_github_fixtures import ManualClock
from tests.helpers.github_openapi.validate import assert_matches_schema

REPO = "acme/agents"


async def test_issue_created_with_labels_comes_back_with_its_labels_and_urls(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """Creating an issue with new labels auto-creates them and returns a schema-valid issue."""
    bot = user(sandbox_config, "ticketproxy-bot")

    def scenario() -> tuple[dict[str, object], list[str], str]:
        with github_client(github_sandbox, bot) as gh:
            repo = gh.get_repo(REPO)
            issue = repo.create_issue(title="Agent needs help", body="ctx", labels=["ticket"])
            fetched = repo.get_issue(issue.number)
            return fetched.raw_data, [label.name for label in fetched.labels], repo.html_url

    raw, labels, repo_html = await asyncio.to_thread(scenario)
    assert_matches_schema(raw, "issue")
    assert labels == ["ticket"]
    assert raw["number"] == 1
    assert raw["state_reason"] is None
    assert raw["html_url"] == f"{github_sandbox.web_url}/acme/agents/issues/1"
    assert str(raw["url"]).startswith(f"{github_sandbox.api_url}/repos/acme/agents/issues/")
    assert repo_html == f"{github_sandbox.web_url}/acme/agents"


async def test_comment_edit_changes_body_and_updated_at_but_not_created_at(
    start_github_sandbox, sandbox_config: SandboxConfig, sandbox_clock: ManualClock
) -> None:
    """Editing a comment through PyGithub changes its body and moves only ``updated_at``."""
    running: RunningSandbox = await start_github_sandbox(clock=sandbox_clock)
    alice = user(sandbox_config, "alice")

    def scenario() -> tuple[dict[str, object], dict[str, object]]:
        with github_client(running, alice, lazy=True) as gh:
            issue = gh.get_repo(REPO).create_issue(title="t")
            comment = issue.create_comment("first answer")
            before = dict(comment.raw_data)
            sandbox_clock.advance(90)
            comment.edit("edited answer")
            return before, gh.get_repo(REPO).get_issue(1).get_comment(comment.id).raw_data

    before, after = await asyncio.to_thread(scenario)
    assert_matches_schema(after, "issue-comment")
    assert after["body"] == "edited answer"
    assert after["created_at"] == before["created_at"] == "2026-01-01T00:00:00Z"
    assert after["updated_at"] == "2026-01-01T00:01:30Z"
    assert after["author_association"] == "COLLABORATOR"
    assert after["user"]["login"] == "alice"  # type: ignore[index]
    assert after["html_url"] == (
        f"{running.web_url}/acme/agents/issues/1#issuecomment-{after['id']}"
    )


async def test_repo_wide_comment_list_walks_link_pages_past_one_hundred(
    start_github_sandbox, sandbox_config: SandboxConfig, sandbox_clock: ManualClock
) -> None:
    """PyGithub follows ``Link: rel=next`` across pages of 100 and gets every comment in order."""
    running: RunningSandbox = await start_github_sandbox(
        clock=sandbox_clock, creations_per_minute=1000, creations_per_hour=1000
    )
    bot = user(sandbox_config, "ticketproxy-bot")
    issue = running.sandbox.state.store.create_issue(
        running.sandbox.state.find_repo("acme", "agents"),  # type: ignore[arg-type]
        title="many",
        body=None,
        author=author_of(bot),
        now=0,
    )
    for index in range(230):
        sandbox_clock.advance(1)
        running.sandbox.state.store.create_comment(
            issue, body=f"comment {index}", author=author_of(bot), now=running.sandbox.state.now()
        )

    def scenario() -> tuple[list[str], int]:
        with github_client(running, bot, per_page=100) as gh:
            comments = gh.get_repo(REPO).get_issues_comments(
                sort="updated", direction="asc", since=datetime(2025, 1, 1, tzinfo=UTC)
            )
            bodies = [comment.body for comment in comments]
            return bodies, comments.totalCount

    bodies, total = await asyncio.to_thread(scenario)
    assert bodies == [f"comment {index}" for index in range(230)]
    assert total == 230
    pages = [r for r in running.sandbox.requests if r.path.endswith("/issues/comments")]
    assert [r.query.get("page") for r in pages[:3]] == [None, "2", "3"]


async def test_since_and_descending_sort_select_recent_updates_first(
    start_github_sandbox, sandbox_config: SandboxConfig, sandbox_clock: ManualClock
) -> None:
    """``since`` filters on ``updated_at`` (edits included) and ``direction=desc`` reverses."""
    running: RunningSandbox = await start_github_sandbox(clock=sandbox_clock)
    alice = user(sandbox_config, "alice")

    def scenario() -> tuple[list[str], list[str]]:
        with github_client(running, alice, lazy=True) as gh:
            repo = gh.get_repo(REPO)
            issue = repo.create_issue(title="t")
            old = issue.create_comment("old")
            sandbox_clock.advance(3600)
            cutoff = sandbox_clock.now
            issue.create_comment("new")
            sandbox_clock.advance(10)
            old.edit("old, edited")
            recent = repo.get_issues_comments(sort="updated", direction="desc", since=cutoff)
            per_issue = issue.get_comments(since=cutoff + timedelta(seconds=5))
            return [c.body for c in recent], [c.body for c in per_issue]

    recent, per_issue = await asyncio.to_thread(scenario)
    assert recent == ["old, edited", "new"]
    assert per_issue == ["old, edited"]


async def test_reactions_lock_labels_and_close_round_trip(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """Reactions, lock, label add/remove and closing all work through PyGithub."""
    bot = user(sandbox_config, "ticketproxy-bot")

    def scenario() -> dict[str, object]:
        with github_client(github_sandbox, bot) as gh:
            repo = gh.get_repo(REPO)
            issue = repo.create_issue(title="t", labels=["pending"])
            comment = issue.create_comment("answer")
            reaction = comment.create_reaction("rocket")
            again = comment.create_reaction("rocket")
            issue.create_reaction("eyes")
            issue.lock("resolved")
            issue.add_to_labels("answered")
            issue.remove_from_labels("pending")
            issue.edit(state="closed", state_reason="completed")
            fresh = repo.get_issue(issue.number)
            comment_now = repo.get_issues_comments()[0]
            return {
                "reaction": reaction.raw_data,
                "same_reaction": reaction.id == again.id,
                "comment_rockets": comment_now.raw_data["reactions"]["rocket"],
                "issue": fresh.raw_data,
                "labels": [label.name for label in fresh.labels],
                "reactions": [r.content for r in issue.get_reactions()],
                "permission": repo.get_collaborator_permission("mallory"),
            }

    seen = await asyncio.to_thread(scenario)
    assert_matches_schema(seen["reaction"], "reaction")
    assert seen["same_reaction"] is True
    assert seen["comment_rockets"] == 1
    issue = seen["issue"]
    assert isinstance(issue, dict)
    assert_matches_schema(issue, "issue")
    assert issue["locked"] is True
    assert issue["active_lock_reason"] == "resolved"
    assert issue["state"] == "closed"
    assert issue["state_reason"] == "completed"
    assert issue["closed_by"]["login"] == "ticketproxy-bot"
    assert issue["reactions"]["eyes"] == 1
    assert seen["labels"] == ["answered"]
    assert seen["reactions"] == ["eyes"]
    assert seen["permission"] == "read"


async def test_read_only_user_cannot_comment_on_a_locked_issue(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """Locking keeps the public out: a read-only user's comment is refused with GitHub's 403."""
    bot = user(sandbox_config, "ticketproxy-bot")
    mallory = user(sandbox_config, "mallory")

    def scenario() -> None:
        with github_client(github_sandbox, bot) as gh:
            issue = gh.get_repo(REPO).create_issue(title="t")
            issue.create_comment("open to all")
            issue.lock("resolved")
        with github_client(github_sandbox, mallory, lazy=True) as gh:
            gh.get_repo(REPO).get_issue(1).create_comment("let me in")

    with pytest.raises(GithubException) as raised:
        await asyncio.to_thread(scenario)
    assert raised.value.status == 403
    assert raised.value.data["message"] == "Unable to create comment because issue is locked."


async def test_read_only_user_may_comment_on_an_unlocked_issue_but_not_open_one(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """A read-only user can comment on an open conversation, and cannot create issues."""
    bot = user(sandbox_config, "ticketproxy-bot")
    mallory = user(sandbox_config, "mallory")

    def scenario() -> tuple[str, int]:
        with github_client(github_sandbox, bot) as gh:
            gh.get_repo(REPO).create_issue(title="t")
        with github_client(github_sandbox, mallory, lazy=True) as gh:
            repo = gh.get_repo(REPO)
            comment = repo.get_issue(1).create_comment("a remark")
            try:
                repo.create_issue(title="mine")
            except GithubException as error:
                return comment.raw_data["author_association"], error.status
            return comment.raw_data["author_association"], 0

    association, status = await asyncio.to_thread(scenario)
    assert association == "NONE"
    assert status == 403


async def test_authenticated_user_and_rate_limit_read_through_pygithub(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """``get_user()`` names the token's owner and ``get_rate_limit()`` shows the core budget."""
    alice = user(sandbox_config, "alice")

    def scenario() -> tuple[str, int, int]:
        with github_client(github_sandbox, alice) as gh:
            login = gh.get_user().login  # lazy until read: this is the GET /user
            limits = gh.get_rate_limit()
            return login, limits.resources.core.limit, limits.resources.core.remaining

    login, limit, remaining = await asyncio.to_thread(scenario)
    assert login == "alice"
    assert limit == 5000
    assert remaining == 4999  # GET /user spent one; asking for the limit spends none


async def test_requester_conditional_poll_gets_304_and_then_follows_link_next(
    start_github_sandbox, sandbox_config: SandboxConfig
) -> None:
    """The poller's pattern works: ``requestJson`` with ``If-None-Match`` returns a bare 304."""
    running: RunningSandbox = await start_github_sandbox()
    bot = user(sandbox_config, "ticketproxy-bot")
    params = {"sort": "updated", "direction": "asc", "per_page": 1}
    path = "/repos/acme/agents/issues/comments"

    def scenario() -> tuple[int, str, int, str, str]:
        with github_client(running, bot) as gh:
            issue = gh.get_repo(REPO).create_issue(title="t")
            issue.create_comment("one")
            issue.create_comment("two")
            status, headers, body = gh.requester.requestJson("GET", path, parameters=params)
            etag = headers["etag"]
            next_url = headers["link"].split(">")[0].lstrip("<")
            again, _, again_body = gh.requester.requestJson(
                "GET", path, parameters=params, headers={"If-None-Match": etag}
            )
            _, _, second_page = gh.requester.requestJson("GET", next_url)
            return status, body, again, again_body, second_page

    status, body, again, again_body, second_page = await asyncio.to_thread(scenario)
    assert status == 200
    assert '"body":"one"' in body
    assert again == 304
    assert again_body == ""
    assert '"body":"two"' in second_page
