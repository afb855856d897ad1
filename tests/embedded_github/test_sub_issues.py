"""The sandbox's sub-issue operations, driven by PyGithub over HTTP and checked against the spec."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from github import GithubException

from embedded_github import RunningSandbox, SandboxConfig
from embedded_github.state import author_of
from embedded_github.store_rows import IssueRow
from tests.helpers.embedded_github_clients import github_client, user
from tests.helpers.github_openapi.validate import assert_matches_response, assert_matches_schema

REPO = "acme/agents"
SUB_ISSUES = "/repos/{owner}/{repo}/issues/{issue_number}/sub_issues"


def _issues(running: RunningSandbox, count: int) -> list[IssueRow]:
    """Open ``count`` issues straight in the store (faster than the API's creation limits)."""
    state = running.sandbox.state
    repo = state.find_repo("acme", "agents")
    assert repo is not None
    bot = state.find_user("ticketproxy-bot")
    assert bot is not None
    return [
        state.store.create_issue(repo, title=f"issue {n}", body=None, author=author_of(bot), now=0)
        for n in range(count)
    ]


def _refusal(running: RunningSandbox, config: SandboxConfig, parent: int, sub_issue: Any) -> Any:
    """Try to add a sub-issue with PyGithub's requester; return GitHub's error status and body."""
    with github_client(running, user(config, "alice"), lazy=True) as gh:
        issue = gh.get_repo(REPO).get_issue(parent)
        with pytest.raises(GithubException) as raised:
            # PyGithub's add_sub_issue asserts an int; its requester sends what GitHub would get.
            issue._requester.requestJsonAndCheck(
                "POST", f"{issue.url}/sub_issues", input={"sub_issue_id": sub_issue}
            )
    return raised.value.status, raised.value.data


async def test_sub_issues_are_added_listed_reordered_and_removed_by_id(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """PyGithub links children by id, lists them in order, moves one, finds the parent, unlinks."""
    alice = user(sandbox_config, "alice")

    def scenario() -> dict[str, Any]:
        with github_client(github_sandbox, alice) as gh:
            repo = gh.get_repo(REPO)
            parent = repo.create_issue(title="root")
            kids = [repo.create_issue(title=f"step {n}") for n in range(3)]
            added = [parent.add_sub_issue(kid) for kid in kids]
            listed = [sub.number for sub in parent.get_sub_issues()]
            kids[2].edit(state="closed")
            summary = repo.get_issue(parent.number).raw_data["sub_issues_summary"]
            child_raw = repo.get_issue(kids[0].number).raw_data
            parent.prioritize_sub_issue(kids[2], kids[0])
            reordered = [sub.number for sub in parent.get_sub_issues()]
            removed = parent.remove_sub_issue(kids[1])
            after = [sub.number for sub in parent.get_sub_issues()]
            return {
                "added": added[-1].raw_data,
                "kids": [kid.number for kid in kids],
                "listed": listed,
                "summary": summary,
                "child": child_raw,
                "reordered": reordered,
                "removed": removed.raw_data,
                "after": after,
                "parent_url": parent.url,
            }

    seen = await asyncio.to_thread(scenario)
    one, two, three = seen["kids"]
    assert_matches_response(seen["added"], "POST", SUB_ISSUES, 201)
    assert seen["listed"] == [one, two, three]
    assert seen["summary"] == {"total": 3, "completed": 1, "percent_completed": 33}
    assert_matches_schema(seen["child"], "issue")
    assert seen["child"]["parent_issue_url"] == seen["parent_url"]
    assert seen["reordered"] == [one, three, two]
    assert seen["removed"]["sub_issues_summary"]["total"] == 2
    assert seen["after"] == [one, three]


async def test_parent_endpoint_answers_the_parent_and_404_for_a_root(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """``GET …/parent`` returns the parent issue, and GitHub's 404 for an issue without one."""
    parent, child = _issues(github_sandbox, 2)
    github_sandbox.sandbox.state.store.add_sub_issue(parent.id, child.id)
    alice = user(sandbox_config, "alice")

    def scenario() -> tuple[Any, Any]:
        with github_client(github_sandbox, alice, lazy=True) as gh:
            requester = gh.get_repo(REPO).get_issue(child.number)._requester
            base = f"{github_sandbox.api_url}/repos/{REPO}/issues"
            _, found = requester.requestJsonAndCheck("GET", f"{base}/{child.number}/parent")
            with pytest.raises(GithubException) as raised:
                requester.requestJsonAndCheck("GET", f"{base}/{parent.number}/parent")
            return found, raised.value.status

    found, status = await asyncio.to_thread(scenario)
    assert found["number"] == parent.number
    assert found["parent_issue_url"] is None
    assert status == 404


async def test_issue_number_given_as_sub_issue_id_is_refused(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """An issue's number where its id is required is GitHub's 422, and nothing is linked."""
    parent, child = _issues(github_sandbox, 2)
    status, body = await asyncio.to_thread(
        _refusal, github_sandbox, sandbox_config, parent.number, child.number
    )
    assert status == 422
    assert_matches_schema(body, "validation-error")
    assert body["errors"][0]["field"] == "sub_issue_id"
    assert github_sandbox.sandbox.state.store.sub_issues(parent.id) == []


async def test_sub_issue_id_sent_as_string_is_refused(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """An id sent as a JSON string is GitHub's schema 422 naming the property."""
    parent, child = _issues(github_sandbox, 2)
    status, body = await asyncio.to_thread(
        _refusal, github_sandbox, sandbox_config, parent.number, str(child.id)
    )
    assert status == 422
    assert_matches_schema(body, "validation-error")
    assert "properties/sub_issue_id" in body["message"]
    assert github_sandbox.sandbox.state.store.parent_of(child.id) is None


async def test_a_second_parent_for_a_linked_child_is_refused(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """A child has one parent: linking it under another is a 422 unless ``replace_parent``."""
    first, second, child = _issues(github_sandbox, 3)
    github_sandbox.sandbox.state.store.add_sub_issue(first.id, child.id)
    status, body = await asyncio.to_thread(
        _refusal, github_sandbox, sandbox_config, second.number, child.id
    )
    assert status == 422
    assert "one parent" in body["errors"][0]["message"]
    parent = github_sandbox.sandbox.state.store.parent_of(child.id)
    assert parent is not None
    assert parent.id == first.id


async def test_the_same_child_linked_twice_is_refused(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """Linking a child its parent already holds is a 422, and it stays one child."""
    parent, child = _issues(github_sandbox, 2)
    github_sandbox.sandbox.state.store.add_sub_issue(parent.id, child.id)
    status, body = await asyncio.to_thread(
        _refusal, github_sandbox, sandbox_config, parent.number, child.id
    )
    assert status == 422
    assert "duplicate" in body["errors"][0]["message"]
    assert len(github_sandbox.sandbox.state.store.sub_issues(parent.id)) == 1


async def test_a_hundred_and_first_child_is_refused(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """A parent holds at most 100 sub-issues; the 101st is a 422."""
    parent, *children = _issues(github_sandbox, 102)
    store = github_sandbox.sandbox.state.store
    for child in children[:100]:
        store.add_sub_issue(parent.id, child.id)
    status, body = await asyncio.to_thread(
        _refusal, github_sandbox, sandbox_config, parent.number, children[100].id
    )
    assert status == 422
    assert "100" in body["errors"][0]["message"]
    assert store.sub_issue_counts(parent.id) == (100, 0)


async def test_a_ninth_level_of_nesting_is_refused(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """Eight levels of sub-issues below a root are allowed, a ninth is a 422."""
    chain = _issues(github_sandbox, 10)
    store = github_sandbox.sandbox.state.store
    for parent, child in itertools.pairwise(chain[:9]):
        store.add_sub_issue(parent.id, child.id)
    status, body = await asyncio.to_thread(
        _refusal, github_sandbox, sandbox_config, chain[8].number, chain[9].id
    )
    assert status == 422
    assert "8 levels" in body["errors"][0]["message"]
    assert store.parent_of(chain[9].id) is None


async def test_an_issue_made_a_sub_issue_of_its_own_child_is_refused(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """A cycle (a parent under its own child) is a 422."""
    parent, child = _issues(github_sandbox, 2)
    github_sandbox.sandbox.state.store.add_sub_issue(parent.id, child.id)
    status, _ = await asyncio.to_thread(
        _refusal, github_sandbox, sandbox_config, child.number, parent.id
    )
    assert status == 422
    assert github_sandbox.sandbox.state.store.parent_of(parent.id) is None


async def test_a_reader_cannot_link_sub_issues(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """Linking needs push access: a read-only user gets GitHub's 403."""
    parent, child = _issues(github_sandbox, 2)

    def scenario() -> int:
        with github_client(github_sandbox, user(sandbox_config, "mallory"), lazy=True) as gh:
            with pytest.raises(GithubException) as raised:
                gh.get_repo(REPO).get_issue(parent.number).add_sub_issue(child.id)
            return raised.value.status

    assert await asyncio.to_thread(scenario) == 403
    assert github_sandbox.sandbox.state.store.parent_of(child.id) is None


async def test_removing_an_issue_that_is_not_a_child_is_404(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """``DELETE …/sub_issue`` for an issue that is not this parent's child is GitHub's 404."""
    parent, stranger = _issues(github_sandbox, 2)

    def scenario() -> int:
        with github_client(github_sandbox, user(sandbox_config, "alice"), lazy=True) as gh:
            with pytest.raises(GithubException) as raised:
                gh.get_repo(REPO).get_issue(parent.number).remove_sub_issue(stranger.id)
            return raised.value.status

    assert await asyncio.to_thread(scenario) == 404


async def test_sub_issue_list_pages_with_link_headers(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """``GET …/sub_issues`` is paginated: PyGithub walks the pages and gets all children."""
    parent, *children = _issues(github_sandbox, 36)
    store = github_sandbox.sandbox.state.store
    for child in children:
        store.add_sub_issue(parent.id, child.id)

    def scenario() -> list[int]:
        with github_client(
            github_sandbox, user(sandbox_config, "alice"), lazy=True, per_page=10
        ) as gh:
            return [
                sub.number for sub in gh.get_repo(REPO).get_issue(parent.number).get_sub_issues()
            ]

    assert await asyncio.to_thread(scenario) == [child.number for child in children]
