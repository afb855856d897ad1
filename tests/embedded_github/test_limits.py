"""GitHub's primary and secondary rate limits, as the sandbox enforces them."""

from __future__ import annotations

import aiohttp

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.embedded_github_clients import auth, user
from tests.helpers.embedded_github_fixtures import ManualClock
from tests.helpers.github_openapi.validate import assert_matches_schema

ISSUES = "/repos/acme/agents/issues"


async def test_exhausted_primary_limit_is_403_with_remaining_zero(
    start_github_sandbox, sandbox_config: SandboxConfig, sandbox_clock: ManualClock
) -> None:
    """Past the hourly budget, GitHub answers 403 ``API rate limit exceeded for user ID N``."""
    running: RunningSandbox = await start_github_sandbox(clock=sandbox_clock, rate_limit=3)
    alice = user(sandbox_config, "alice")
    url = running.api_url + ISSUES
    async with aiohttp.ClientSession() as http:
        statuses = []
        for _ in range(3):
            async with http.get(url, headers=auth(alice)) as answer:
                statuses.append(answer.status)
        async with http.get(url, headers=auth(alice)) as refused:
            payload = await refused.json()
            headers = refused.headers
        sandbox_clock.advance(3600)
        async with http.get(url, headers=auth(alice)) as after_reset:
            reset_status = after_reset.status
            reset_remaining = after_reset.headers["x-ratelimit-remaining"]
    assert statuses == [200, 200, 200]
    assert refused.status == 403
    assert headers["x-ratelimit-remaining"] == "0"
    assert headers["x-ratelimit-used"] == "3"
    assert payload["message"].startswith("API rate limit exceeded for user ID 1001.")
    assert payload["documentation_url"] == (
        "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
    )
    assert_matches_schema(payload, "basic-error")
    assert (reset_status, reset_remaining) == (200, "2")


async def test_limits_are_per_user_and_rate_limit_endpoint_is_free(
    start_github_sandbox, sandbox_config: SandboxConfig
) -> None:
    """One user's spending leaves another's budget whole; ``GET /rate_limit`` spends nothing."""
    running: RunningSandbox = await start_github_sandbox(rate_limit=2)
    alice = user(sandbox_config, "alice")
    bob = user(sandbox_config, "bob")
    async with aiohttp.ClientSession() as http:
        for _ in range(2):
            async with http.get(running.api_url + ISSUES, headers=auth(alice)):
                pass
        async with http.get(running.api_url + "/rate_limit", headers=auth(alice)) as alice_limit:
            alice_core = (await alice_limit.json())["resources"]["core"]
        async with http.get(running.api_url + ISSUES, headers=auth(bob)) as bob_answer:
            bob_remaining = bob_answer.headers["x-ratelimit-remaining"]
    assert alice_limit.status == 200
    assert alice_core["remaining"] == 0
    assert alice_core["used"] == 2
    assert bob_remaining == "1"


async def test_secondary_limit_refuses_fast_creation_with_retry_after(
    start_github_sandbox, sandbox_config: SandboxConfig, sandbox_clock: ManualClock
) -> None:
    """Creating content faster than allowed gets 403 with ``retry-after: 60``, then recovers."""
    running: RunningSandbox = await start_github_sandbox(
        clock=sandbox_clock, creations_per_minute=2, creations_per_hour=10
    )
    alice = user(sandbox_config, "alice")
    url = running.api_url + ISSUES
    async with aiohttp.ClientSession() as http:
        statuses = []
        for _ in range(2):
            async with http.post(url, json={"title": "t"}, headers=auth(alice)) as created:
                statuses.append(created.status)
        async with http.post(url, json={"title": "t"}, headers=auth(alice)) as refused:
            payload = await refused.json()
        async with http.get(url, headers=auth(alice)) as reading:
            reading_status = reading.status
        sandbox_clock.advance(61)
        async with http.post(url, json={"title": "t"}, headers=auth(alice)) as later:
            later_status = later.status
    assert statuses == [201, 201]
    assert refused.status == 403
    assert refused.headers["retry-after"] == "60"
    assert int(refused.headers["x-ratelimit-remaining"]) > 0
    assert payload["message"].startswith(
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
    )
    assert reading_status == 200
    assert later_status == 201


async def test_secondary_hourly_limit_counts_comments_too(
    start_github_sandbox, sandbox_config: SandboxConfig, sandbox_clock: ManualClock
) -> None:
    """Issues and comments share the hourly creation budget."""
    running: RunningSandbox = await start_github_sandbox(
        clock=sandbox_clock, creations_per_minute=100, creations_per_hour=3
    )
    alice = user(sandbox_config, "alice")
    async with aiohttp.ClientSession() as http:
        async with http.post(
            running.api_url + ISSUES, json={"title": "t"}, headers=auth(alice)
        ) as created:
            comments_url = (await created.json())["comments_url"]
        statuses = []
        for _ in range(3):
            sandbox_clock.advance(120)
            async with http.post(comments_url, json={"body": "b"}, headers=auth(alice)) as answer:
                statuses.append(answer.status)
    assert statuses == [201, 201, 403]
