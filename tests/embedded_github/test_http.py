"""The sandbox's HTTP surface as GitHub's: headers, ETags, Link pagination and error bodies."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import aiohttp

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.embedded_github_clients import auth, user
from tests.helpers.github_openapi.validate import assert_matches_response, assert_matches_schema

ISSUES = "/repos/acme/agents/issues"
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


async def _open_issue(
    http: aiohttp.ClientSession, running: RunningSandbox, headers: dict[str, str], **fields: Any
) -> dict[str, Any]:
    async with http.post(
        running.api_url + ISSUES, json={"title": "t", **fields}, headers=headers
    ) as response:
        assert response.status == 201
        payload: dict[str, Any] = await response.json()
    assert_matches_response(payload, "POST", "/repos/{owner}/{repo}/issues", 201)
    return payload


async def test_every_answer_carries_githubs_rate_and_media_headers(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """A GET carries the x-ratelimit-*, x-github-* headers, a JSON content type and a weak ETag."""
    bot = user(sandbox_config, "ticketproxy-bot")
    async with (
        aiohttp.ClientSession() as http,
        http.get(github_sandbox.api_url + "/repos/acme/agents", headers=auth(bot)) as response,
    ):
        body = await response.read()
        headers = response.headers
    assert response.status == 200
    assert headers["Content-Type"] == "application/json; charset=utf-8"
    assert headers["x-ratelimit-limit"] == "5000"
    assert headers["x-ratelimit-remaining"] == "4999"
    assert headers["x-ratelimit-used"] == "1"
    assert headers["x-ratelimit-resource"] == "core"
    assert int(headers["x-ratelimit-reset"]) > 1_700_000_000
    assert headers["x-github-api-version-selected"] == "2022-11-28"
    assert headers["x-github-media-type"] == "github.v3; format=json"
    assert headers["x-github-request-id"]
    assert headers["ETag"] == f'W/"{hashlib.sha256(body).hexdigest()}"'


async def test_conditional_get_answers_304_without_spending_the_rate_limit(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """``If-None-Match`` with the current ETag gets an empty 304 and ``remaining`` stays put."""
    alice = user(sandbox_config, "alice")
    url = github_sandbox.api_url + "/repos/acme/agents/issues/comments?sort=updated&direction=asc"
    async with aiohttp.ClientSession() as http:
        await _open_issue(http, github_sandbox, auth(alice))
        async with http.get(url, headers=auth(alice)) as first:
            etag = first.headers["ETag"]
            remaining = first.headers["x-ratelimit-remaining"]
            assert_matches_response(
                await first.json(), "GET", "/repos/{owner}/{repo}/issues/comments", 200
            )
        conditional = {**auth(alice), "If-None-Match": etag}
        async with http.get(url, headers=conditional) as second:
            second_body = await second.read()
            second_headers = second.headers
        async with http.get(url, headers=auth(alice)) as third:
            third_remaining = third.headers["x-ratelimit-remaining"]
    assert second.status == 304
    assert second_body == b""
    assert second_headers["ETag"] == etag
    assert second_headers["x-ratelimit-remaining"] == remaining
    assert int(third_remaining) == int(remaining) - 1


async def test_changed_list_answers_200_with_a_new_etag(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """After a new comment, the old ETag no longer matches and the full list comes back."""
    alice = user(sandbox_config, "alice")
    url = github_sandbox.api_url + "/repos/acme/agents/issues/comments"
    async with aiohttp.ClientSession() as http:
        issue = await _open_issue(http, github_sandbox, auth(alice))
        async with http.get(url, headers=auth(alice)) as first:
            etag = first.headers["ETag"]
        async with http.post(
            issue["comments_url"], json={"body": "hello"}, headers=auth(alice)
        ) as created:
            assert created.status == 201
        async with http.get(url, headers={**auth(alice), "If-None-Match": etag}) as second:
            payload = await second.json()
    assert second.status == 200
    assert second.headers["ETag"] != etag
    assert [comment["body"] for comment in payload] == ["hello"]


async def test_link_header_has_githubs_rels_in_order_and_keeps_other_parameters(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """A middle page links prev, next, last and first, each keeping ``state`` and ``per_page``."""
    bot = user(sandbox_config, "ticketproxy-bot")
    base = github_sandbox.api_url + ISSUES
    async with aiohttp.ClientSession() as http:
        for _ in range(7):
            await _open_issue(http, github_sandbox, auth(bot))
        async with http.get(
            base, params={"state": "all", "per_page": "2", "page": "2"}, headers=auth(bot)
        ) as response:
            link = response.headers["Link"]
            numbers = [issue["number"] for issue in await response.json()]
        async with http.get(base, params={"per_page": "100"}, headers=auth(bot)) as single:
            single_link = single.headers.get("Link")
    assert numbers == [5, 4]  # newest first by default
    assert link == (
        f'<{base}?state=all&per_page=2&page=1>; rel="prev", '
        f'<{base}?state=all&per_page=2&page=3>; rel="next", '
        f'<{base}?state=all&per_page=2&page=4>; rel="last", '
        f'<{base}?state=all&per_page=2&page=1>; rel="first"'
    )
    assert single_link is None


async def test_bad_token_gets_githubs_bad_credentials_body(
    github_sandbox: RunningSandbox,
) -> None:
    """An unknown token is a 401 with GitHub's exact body, whatever the path."""
    async with (
        aiohttp.ClientSession() as http,
        http.get(
            github_sandbox.api_url + "/repos/nobody/nothing",
            headers={"Authorization": "Bearer ghp_not_a_real_token"},
        ) as response,
    ):
        payload = await response.json()
    assert response.status == 401
    assert payload == {
        "message": "Bad credentials",
        "documentation_url": "https://docs.github.com/rest",
        "status": "401",
    }
    assert response.headers["x-ratelimit-limit"] == "60"


async def test_unknown_repo_issue_and_route_get_githubs_not_found_body(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """An unknown repository, issue or route is a 404 ``Not Found`` with a docs link."""
    bot = user(sandbox_config, "ticketproxy-bot")
    answers = []
    async with aiohttp.ClientSession() as http:
        for path in ("/repos/acme/missing/issues/1", ISSUES + "/99", "/no/such/route"):
            async with http.get(github_sandbox.api_url + path, headers=auth(bot)) as response:
                answers.append((response.status, await response.json()))
    for status, payload in answers:
        assert status == 404
        assert_matches_schema(payload, "basic-error")
        assert payload["message"] == "Not Found"
        assert payload["status"] == "404"
    assert answers[1][1]["documentation_url"] == (
        "https://docs.github.com/rest/issues/issues#get-an-issue"
    )


async def test_issue_without_title_gets_githubs_validation_failed_body(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """Creating an issue without a title is a 422 naming the missing field."""
    alice = user(sandbox_config, "alice")
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            github_sandbox.api_url + ISSUES, json={"body": "no title"}, headers=auth(alice)
        ) as response,
    ):
        payload = await response.json()
    assert response.status == 422
    assert_matches_response(payload, "POST", "/repos/{owner}/{repo}/issues", 422)
    assert payload["message"] == "Validation Failed"
    assert payload["errors"] == [{"resource": "Issue", "code": "missing_field", "field": "title"}]


async def test_malformed_json_gets_problems_parsing_json(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """A body that is not JSON is a 400 ``Problems parsing JSON``."""
    alice = user(sandbox_config, "alice")
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            github_sandbox.api_url + ISSUES,
            data=b'{"title": ',
            headers={**auth(alice), "Content-Type": "application/json"},
        ) as response,
    ):
        payload = await response.json()
    assert response.status == 400
    assert payload["message"] == "Problems parsing JSON"


async def test_write_without_token_requires_authentication_but_read_is_allowed(
    github_sandbox: RunningSandbox,
) -> None:
    """Without a token, GETs work on GitHub's 60/h budget and writes get 401."""
    async with aiohttp.ClientSession() as http:
        async with http.get(github_sandbox.api_url + ISSUES) as read:
            assert read.status == 200
            limit = read.headers["x-ratelimit-limit"]
        async with http.post(github_sandbox.api_url + ISSUES, json={"title": "t"}) as write:
            payload = await write.json()
    assert limit == "60"
    assert write.status == 401
    assert payload["message"] == "Requires authentication"


async def test_read_only_user_cannot_label_lock_or_edit_issues(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """A read-only user gets GitHub's 403 for labels, lock and issue edits."""
    bot = user(sandbox_config, "ticketproxy-bot")
    mallory = user(sandbox_config, "mallory")
    async with aiohttp.ClientSession() as http:
        issue = await _open_issue(http, github_sandbox, auth(bot))
        attempts = [
            ("POST", issue["url"] + "/labels", {"labels": ["x"]}),
            ("PUT", issue["url"] + "/lock", {"lock_reason": "spam"}),
            ("PATCH", issue["url"], {"state": "closed"}),
        ]
        answers = []
        for method, url, body in attempts:
            async with http.request(method, url, json=body, headers=auth(mallory)) as response:
                answers.append((response.status, await response.json()))
    for status, payload in answers:
        assert status == 403
        assert payload["message"] == "Resource not accessible by personal access token"


async def test_comment_author_may_edit_but_another_reader_may_not(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """Editing a comment is for its author or for users with push access."""
    bot = user(sandbox_config, "ticketproxy-bot")
    mallory = user(sandbox_config, "mallory")
    alice = user(sandbox_config, "alice")
    async with aiohttp.ClientSession() as http:
        issue = await _open_issue(http, github_sandbox, auth(bot))
        async with http.post(
            issue["comments_url"], json={"body": "mine"}, headers=auth(alice)
        ) as created:
            comment = await created.json()
        async with http.patch(
            comment["url"], json={"body": "hijacked"}, headers=auth(mallory)
        ) as by_reader:
            assert by_reader.status == 403
        async with http.patch(
            comment["url"], json={"body": "fixed typo"}, headers=auth(alice)
        ) as by_author:
            edited = await by_author.json()
        async with http.delete(comment["url"], headers=auth(alice)) as deleted:
            assert deleted.status == 204
        async with http.get(comment["url"], headers=auth(alice)) as gone:
            assert gone.status == 404
    assert edited["body"] == "fixed typo"
    assert TIMESTAMP.fullmatch(edited["updated_at"])


async def test_labels_endpoints_add_replace_and_refuse_removing_an_absent_label(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """Labels take an object or a bare list, PUT replaces, and removing an absent one is 404."""
    bot = user(sandbox_config, "ticketproxy-bot")
    async with aiohttp.ClientSession() as http:
        issue = await _open_issue(http, github_sandbox, auth(bot), labels=["a"])
        labels_url = issue["url"] + "/labels"
        async with http.post(labels_url, json=["b"], headers=auth(bot)) as added:
            after_add = [label["name"] for label in await added.json()]
        async with http.put(labels_url, json={"labels": ["c"]}, headers=auth(bot)) as replaced:
            after_put = [label["name"] for label in await replaced.json()]
        async with http.delete(labels_url + "/a", headers=auth(bot)) as absent:
            absent_body = await absent.json()
        repo_labels_url = github_sandbox.api_url + "/repos/acme/agents/labels"
        async with http.get(repo_labels_url, headers=auth(bot)) as listed:
            repo_labels = await listed.json()
    assert after_add == ["a", "b"]
    assert after_put == ["c"]
    assert absent.status == 404
    assert absent_body["message"] == "Label does not exist"
    assert sorted(label["name"] for label in repo_labels) == ["a", "b", "c"]
    for label in repo_labels:
        assert_matches_schema(label, "label")


async def test_reaction_with_unknown_content_is_rejected_and_repeat_is_200(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """Reactions answer 201 when new, 200 when repeated, 422 for unknown content."""
    alice = user(sandbox_config, "alice")
    async with aiohttp.ClientSession() as http:
        issue = await _open_issue(http, github_sandbox, auth(alice))
        url = issue["url"] + "/reactions"
        statuses = []
        for content in ("heart", "heart", "thumbsup"):
            async with http.post(url, json={"content": content}, headers=auth(alice)) as answer:
                statuses.append(answer.status)
                if answer.status < 300:
                    assert_matches_schema(await answer.json(), "reaction")
    assert statuses == [201, 200, 422]


async def test_since_accepts_offsets_and_fractions(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """``since`` with an offset or fractional seconds filters like the same instant in UTC."""
    alice = user(sandbox_config, "alice")
    url = github_sandbox.api_url + "/repos/acme/agents/issues/comments"
    async with aiohttp.ClientSession() as http:
        issue = await _open_issue(http, github_sandbox, auth(alice))
        async with http.post(
            issue["comments_url"], json={"body": "x"}, headers=auth(alice)
        ) as created:
            created_at = (await created.json())["created_at"]
        counts = []
        for since in ("2000-01-01T02:00:00.250+02:00", "2999-01-01T00:00:00Z"):
            async with http.get(url, params={"since": since}, headers=auth(alice)) as answer:
                counts.append(len(await answer.json()))
        async with http.get(url, params={"since": "yesterday"}, headers=auth(alice)) as bad:
            assert bad.status == 422
    assert TIMESTAMP.fullmatch(created_at)
    assert counts == [1, 0]


async def test_collaborator_permission_reports_each_users_level(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """The permission endpoint answers admin, write and read as configured."""
    bot = user(sandbox_config, "ticketproxy-bot")
    levels = {}
    async with aiohttp.ClientSession() as http:
        for login in ("ticketproxy-bot", "alice", "mallory"):
            url = f"{github_sandbox.api_url}/repos/acme/agents/collaborators/{login}/permission"
            async with http.get(url, headers=auth(bot)) as answer:
                payload = await answer.json()
                assert_matches_schema(payload, "repository-collaborator-permission")
                levels[login] = payload["permission"]
    assert levels == {"ticketproxy-bot": "admin", "alice": "write", "mallory": "read"}
