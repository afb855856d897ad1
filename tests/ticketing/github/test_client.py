"""Tests for ticketing.github.client: failures mapped to our errors, retries without duplicates."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import requests
from github import BadCredentialsException, GithubException, RateLimitExceededException

from embedded_github import RunningSandbox, SandboxConfig
from embedded_github.state import author_of
from embedded_github.store_rows import CommentRow
from ticketing.errors import GitHubError, GitHubUnavailable
from ticketing.github.client import GitHubClient
from ticketing.github.failures import classify_github_failure
from ticketing.github.interface import Comment, IssueRef
from ticketing.github.turns import HANDED_OVER
from ticketing.render.ticket import request_marker

REPO = "acme/agents"
NOW = 1_800_000_000.0
ISSUES_PATH = r"/repos/acme/agents/issues"
COMMENTS_PATH = r"/repos/acme/agents/issues/comments"
MARKER = request_marker("ab" * 32)


class SleepRecorder:
    """An injected ``sleep`` that records how long it was asked to wait and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def recorder() -> SleepRecorder:
    """Return a fresh sleep recorder."""
    return SleepRecorder()


@pytest.fixture
async def client(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, recorder: SleepRecorder
) -> AsyncIterator[GitHubClient]:
    """Yield a client for acme/agents acting as the bot, closed after the test."""
    bot_token = next(u.token for u in sandbox_config.users if u.login == "ticketproxy-bot")
    running = GitHubClient(
        api_url=github_sandbox.api_url, token=bot_token, repo=REPO, sleep=recorder
    )
    yield running
    await running.close()


def comments_on(sandbox: RunningSandbox, number: int) -> list[CommentRow]:
    """Return the comments the sandbox holds for issue ``number`` of acme/agents."""
    repo = sandbox.sandbox.state.find_repo("acme", "agents")
    assert repo is not None
    return sandbox.sandbox.state.store.list_comments(repo.id, issue_number=number)


def requests_to(sandbox: RunningSandbox, method: str, path: str) -> list[int]:
    """Return the statuses of the sandbox's answers to ``method path``, in order."""
    return [r.status for r in sandbox.sandbox.requests if r.method == method and r.path == path]


def add_comments(sandbox: RunningSandbox, count: int, *, number: int = 1) -> None:
    """Create issue ``number`` if needed and add ``count`` comments by alice, directly."""
    state = sandbox.sandbox.state
    repo = state.find_repo("acme", "agents")
    assert repo is not None
    alice = state.find_user("alice")
    assert alice is not None
    issue = state.store.get_issue(repo.id, number)
    if issue is None:
        issue = state.store.create_issue(
            repo, title="ticket", body="body", author=author_of(alice), now=state.now()
        )
    for index in range(count):
        state.store.create_comment(
            issue, body=f"comment {index}", author=author_of(alice), now=state.now()
        )


# --- classify_github_failure ---------------------------------------------------------------


def test_rate_limit_exception_with_retry_after_waits_that_long() -> None:
    """PyGithub's RateLimitExceededException with retry-after becomes GitHubUnavailable(that)."""
    exc = RateLimitExceededException(
        403, {"message": "You have exceeded a secondary rate limit"}, {"retry-after": "42"}
    )
    error = classify_github_failure(exc, now=NOW)
    assert isinstance(error, GitHubUnavailable)
    assert error.retry_after == 42.0
    assert error.status == 403


def test_429_without_headers_waits_a_minute() -> None:
    """A bare 429, which PyGithub leaves a plain GithubException, means wait 60 s."""
    error = classify_github_failure(GithubException(429, {"message": "Too Many"}, {}), now=NOW)
    assert isinstance(error, GitHubUnavailable)
    assert error.retry_after == 60.0
    assert error.status == 429


def test_403_with_no_remaining_budget_waits_until_the_reset() -> None:
    """x-ratelimit-remaining 0 with x-ratelimit-reset waits until that epoch second."""
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 300)}
    exc = GithubException(403, {"message": "API rate limit exceeded for user ID 1."}, headers)
    error = classify_github_failure(exc, now=NOW)
    assert isinstance(error, GitHubUnavailable)
    assert error.retry_after == 300.0


def test_403_with_a_reset_in_the_past_still_waits_a_second() -> None:
    """A reset already passed (clock skew) never yields a zero or negative wait."""
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) - 50)}
    error = classify_github_failure(GithubException(403, {"message": "x"}, headers), now=NOW)
    assert isinstance(error, GitHubUnavailable)
    assert error.retry_after == 1.0


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_server_errors_are_unavailable_and_worth_retrying_soon(status: int) -> None:
    """A 5xx is GitHubUnavailable with a short default back-off."""
    error = classify_github_failure(GithubException(status, {"message": "Bad"}, {}), now=NOW)
    assert isinstance(error, GitHubUnavailable)
    assert 0 < error.retry_after <= 10
    assert error.status == status


def test_401_names_the_token_variable() -> None:
    """Bad credentials are a GitHubError (not retried) telling the operator what to check."""
    exc = BadCredentialsException(401, {"message": "Bad credentials"}, {})
    error = classify_github_failure(exc, now=NOW)
    assert type(error) is GitHubError
    assert error.status == 401
    assert "TICKETPROXY_GITHUB_TOKEN" in str(error)


def test_404_names_the_repository_variable() -> None:
    """A 404 tells the operator to check the repository name and the token's access."""
    error = classify_github_failure(GithubException(404, {"message": "Not Found"}, {}), now=NOW)
    assert type(error) is GitHubError
    assert error.status == 404
    assert "TICKETPROXY_GITHUB_REPO" in str(error)


def test_other_403_is_a_permission_error_not_back_pressure() -> None:
    """A 403 that is no rate limit (missing scope) is a GitHubError naming the permission."""
    exc = GithubException(403, {"message": "Resource not accessible by integration"}, {})
    error = classify_github_failure(exc, now=NOW)
    assert type(error) is GitHubError
    assert error.status == 403
    assert "Issues" in str(error)
    assert "Resource not accessible" in str(error)


def test_connection_error_from_requests_is_unavailable() -> None:
    """requests' ConnectionError (an OSError) means GitHub is unreachable: back off and retry."""
    error = classify_github_failure(requests.exceptions.ConnectionError("reset"), now=NOW)
    assert isinstance(error, GitHubUnavailable)
    assert error.status is None
    assert "unreachable" in str(error)


def test_unexpected_exception_is_a_plain_github_error() -> None:
    """Anything else is wrapped, not retried, with its type in the message."""
    error = classify_github_failure(ValueError("odd"), now=NOW)
    assert type(error) is GitHubError
    assert "ValueError" in str(error)


# --- against the sandbox: writes -----------------------------------------------------------


async def create(client: GitHubClient) -> IssueRef:
    """Open one ticket issue carrying MARKER."""
    return await client.create_issue(
        title="Ticket",
        body=f"Please answer.\n\n{MARKER}",
        labels=["ticketproxy", "awaiting-answer"],
        marker=MARKER,
    )


async def test_create_issue_whose_response_was_lost_is_found_not_repeated(
    client: GitHubClient, github_sandbox: RunningSandbox, recorder: SleepRecorder
) -> None:
    """A 502 after GitHub created the issue: the retry finds the marker, one issue exists."""
    github_sandbox.sandbox.inject_fault(
        method="POST", path=ISSUES_PATH, status=502, after_handling=True
    )
    ref = await create(client)
    assert ref.number == 1
    assert requests_to(github_sandbox, "POST", "/repos/acme/agents/issues") == [502]
    assert recorder.waits == [2.0]
    repo = github_sandbox.sandbox.state.find_repo("acme", "agents")
    assert repo is not None
    assert len(github_sandbox.sandbox.state.store.list_issues(repo.id, state="all")) == 1


async def test_create_issue_retries_two_503s_then_succeeds(
    client: GitHubClient, github_sandbox: RunningSandbox, recorder: SleepRecorder
) -> None:
    """Two 503s, each waited out through the injected sleep, then the issue is created once."""
    github_sandbox.sandbox.inject_fault(method="POST", path=ISSUES_PATH, status=503, times=2)
    ref = await create(client)
    assert ref.number == 1
    assert requests_to(github_sandbox, "POST", "/repos/acme/agents/issues") == [503, 503, 201]
    assert recorder.waits == [2.0, 2.0]


async def test_create_issue_after_a_503_waits_the_retry_after_github_names(
    client: GitHubClient, github_sandbox: RunningSandbox, recorder: SleepRecorder
) -> None:
    """A 503 with retry-after 5 is retried after 5 s, not after the default back-off."""
    github_sandbox.sandbox.inject_fault(
        method="POST", path=ISSUES_PATH, status=503, times=2, headers={"retry-after": "5"}
    )
    await create(client)
    assert recorder.waits == [5.0, 5.0]


async def test_429_with_a_long_retry_after_is_passed_up_not_retried(
    client: GitHubClient, github_sandbox: RunningSandbox, recorder: SleepRecorder
) -> None:
    """retry-after 120 exceeds max_retry_wait: one attempt, then GitHubUnavailable(120)."""
    github_sandbox.sandbox.inject_fault(
        method="POST", path=ISSUES_PATH, status=429, headers={"retry-after": "120"}
    )
    with pytest.raises(GitHubUnavailable) as caught:
        await create(client)
    assert caught.value.retry_after == 120.0
    assert caught.value.status == 429
    assert recorder.waits == []
    assert requests_to(github_sandbox, "POST", "/repos/acme/agents/issues") == [429]


async def test_429_with_a_short_retry_after_is_retried_after_that_wait(
    client: GitHubClient, github_sandbox: RunningSandbox, recorder: SleepRecorder
) -> None:
    """retry-after 3 is within max_retry_wait: the write waits 3 s and goes through."""
    github_sandbox.sandbox.inject_fault(
        method="POST", path=ISSUES_PATH, status=429, headers={"retry-after": "3"}
    )
    ref = await create(client)
    assert ref.number == 1
    assert recorder.waits == [3.0]


async def test_post_comment_whose_response_was_lost_is_not_posted_twice(
    client: GitHubClient, github_sandbox: RunningSandbox
) -> None:
    """A 502 after the comment landed: the retry finds the same body and posts nothing."""
    ref = await create(client)
    path = rf"/repos/acme/agents/issues/{ref.number}/comments"
    github_sandbox.sandbox.inject_fault(method="POST", path=path, status=502, after_handling=True)
    first = await client.post_comment(ref.number, "This ticket expired.")
    assert [c.id for c in comments_on(github_sandbox, ref.number)] == [first]
    assert requests_to(
        github_sandbox, "POST", f"/repos/acme/agents/issues/{ref.number}/comments"
    ) == [502]


# --- against the sandbox: the comment poll -------------------------------------------------


async def test_list_comments_follows_pages_with_one_request_each(
    client: GitHubClient, github_sandbox: RunningSandbox
) -> None:
    """250 comments come back in three requests (100 a page), all of them, oldest first."""
    add_comments(github_sandbox, 250)
    page = await client.list_comments(since=None, etag=None)
    assert len(page.comments) == 250
    assert len({c.id for c in page.comments}) == 250
    assert [c.body for c in page.comments[:2]] == ["comment 0", "comment 1"]
    assert page.requests == 3
    assert requests_to(github_sandbox, "GET", "/repos/acme/agents/issues/comments") == [200] * 3
    assert page.not_modified is False
    assert page.rate_remaining is not None
    assert client.requests_made == 3


async def test_multi_page_poll_returns_no_etag(
    client: GitHubClient, github_sandbox: RunningSandbox
) -> None:
    """An ETag covers one page only, so a multi-page answer must not hand one back."""
    add_comments(github_sandbox, 150)
    page = await client.list_comments(since=None, etag=None)
    assert page.requests == 2
    assert page.etag is None


async def test_list_comments_maps_each_comment_to_its_issue_and_author(
    client: GitHubClient, github_sandbox: RunningSandbox
) -> None:
    """Each comment carries its issue number (from issue_url), author login and id, and URL."""
    add_comments(github_sandbox, 1, number=1)
    add_comments(github_sandbox, 1, number=2)
    page = await client.list_comments(since=None, etag=None)
    assert [c.issue_number for c in page.comments] == [1, 2]
    first: Comment = page.comments[0]
    assert (first.author_login, first.author_id) == ("alice", 1001)
    assert first.url.endswith(f"/acme/agents/issues/1#issuecomment-{first.id}")
    assert first.created_at.tzinfo is not None


async def test_second_identical_poll_is_answered_304_and_not_modified(
    client: GitHubClient, github_sandbox: RunningSandbox
) -> None:
    """A single-page answer carries an ETag; asking again with it costs a free 304."""
    add_comments(github_sandbox, 3)
    since = "2000-01-01T00:00:00Z"
    first = await client.list_comments(since=since, etag=None)
    assert first.etag is not None
    again = await client.list_comments(since=since, etag=first.etag)
    assert again.not_modified is True
    assert again.comments == ()
    assert again.requests == 1
    assert again.etag == first.etag
    assert requests_to(github_sandbox, "GET", "/repos/acme/agents/issues/comments") == [200, 304]


async def test_new_comment_breaks_the_etag_so_the_poll_sees_it(
    client: GitHubClient, github_sandbox: RunningSandbox
) -> None:
    """After a new comment the old ETag no longer matches and the comment is returned."""
    add_comments(github_sandbox, 1)
    first = await client.list_comments(since=None, etag=None)
    add_comments(github_sandbox, 1)
    again = await client.list_comments(since=None, etag=first.etag)
    assert again.not_modified is False
    assert len(again.comments) == 2


async def test_dropped_connection_is_github_unavailable(
    client: GitHubClient, github_sandbox: RunningSandbox, recorder: SleepRecorder
) -> None:
    """A connection closed without an answer, every attempt, ends in GitHubUnavailable."""
    github_sandbox.sandbox.inject_fault(
        method="GET", path=COMMENTS_PATH, status=502, drop_connection=True, times=3
    )
    with pytest.raises(GitHubUnavailable) as caught:
        await client.list_comments(since=None, etag=None)
    assert caught.value.status is None
    assert requests_to(github_sandbox, "GET", "/repos/acme/agents/issues/comments") == [0, 0, 0]
    assert recorder.waits == [2.0, 2.0]


async def test_one_dropped_connection_is_retried_transparently(
    client: GitHubClient, github_sandbox: RunningSandbox, recorder: SleepRecorder
) -> None:
    """A single dropped poll is retried after the default back-off and succeeds."""
    add_comments(github_sandbox, 2)
    github_sandbox.sandbox.inject_fault(
        method="GET", path=COMMENTS_PATH, status=502, drop_connection=True
    )
    page = await client.list_comments(since=None, etag=None)
    assert len(page.comments) == 2
    assert recorder.waits == [2.0]


async def test_burst_of_new_issues_does_not_queue_the_first_ones_lock_behind_the_rest(
    client: GitHubClient, github_sandbox: RunningSandbox
) -> None:
    """Twenty issues opened at once: the first is locked before most of the others are opened."""
    markers = [request_marker(f"{index:02x}" * 32) for index in range(20)]
    refs = await asyncio.gather(
        *(
            client.create_issue(
                title=f"Ticket {index}",
                body=f"Please answer.\n\n{marker}",
                labels=["ticketproxy"],
                marker=marker,
                lock=True,
            )
            for index, marker in enumerate(markers)
        )
    )
    assert sorted(ref.number for ref in refs) == list(range(1, 21))
    sent = [
        (r.method, r.path)
        for r in github_sandbox.sandbox.requests
        if r.method in {"POST", "PUT"} and r.path.startswith(ISSUES_PATH)
    ]
    first_lock = sent.index(("PUT", f"{ISSUES_PATH}/1/lock"))
    # Only the calls handed to the worker thread before it was asked go first (and the one
    # handed over as the first ended), not all twenty.
    assert sent[:first_lock].count(("POST", ISSUES_PATH)) <= HANDED_OVER + 1
    assert len(sent) == 40
