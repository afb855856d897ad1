"""The sandbox's web pages: escaped listings, the issue page, and the comment form."""

from __future__ import annotations

import aiohttp

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.embedded_github_clients import auth, user

ISSUES = "/repos/acme/agents/issues"
TRAILER = "<!-- ticketproxy-signature: eyJhbGciOiJFZERTQSJ9.e30.sig -->"


async def _seed(running: RunningSandbox, config: SandboxConfig) -> dict[str, object]:
    bot = user(config, "ticketproxy-bot")
    async with aiohttp.ClientSession() as http:
        async with http.post(
            running.api_url + ISSUES,
            json={"title": "<script>alert(1)</script>", "body": "a & b", "labels": ["<ticket>"]},
            headers=auth(bot),
        ) as created:
            issue: dict[str, object] = await created.json()
        async with http.post(
            str(issue["comments_url"]), json={"body": f"answer\n\n{TRAILER}"}, headers=auth(bot)
        ) as commented:
            assert commented.status == 201
    return issue


async def test_index_lists_issues_with_everything_escaped(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """The index shows each issue's number, title, state, labels and comment count, escaped."""
    await _seed(github_sandbox, sandbox_config)
    async with (
        aiohttp.ClientSession() as http,
        http.get(github_sandbox.web_url + "/") as page,
    ):
        text = await page.text()
    assert page.status == 200
    assert page.content_type == "text/html"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<script>alert" not in text
    assert "&lt;ticket&gt;" in text
    assert "<td>1</td>" in text  # one comment
    assert "ticketproxy sandbox" in text.split("<footer>")[1]


async def test_issue_page_shows_the_signature_trailer_as_muted_visible_text(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """The hidden HTML comment in an answer is shown escaped, in the muted style."""
    issue = await _seed(github_sandbox, sandbox_config)
    async with aiohttp.ClientSession() as http, http.get(str(issue["html_url"])) as page:
        text = await page.text()
    assert page.status == 200
    assert "<p>a &amp; b</p>" in text
    assert f'<span class="html-comment">{TRAILER.replace("<", "&lt;").replace(">", "&gt;")}' in (
        text
    )
    assert "<!-- ticketproxy-signature" not in text
    assert '<option value="mallory">' in text


async def test_comment_form_posts_as_the_chosen_user_and_redirects_back(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """Posting the form creates a comment by that user, visible in the API, then 303s back."""
    issue = await _seed(github_sandbox, sandbox_config)
    form_url = f"{issue['html_url']}/comments"
    async with aiohttp.ClientSession() as http:
        async with http.post(
            form_url, data={"login": "alice", "body": "from the page"}, allow_redirects=False
        ) as posted:
            location = posted.headers["Location"]
        async with http.get(str(issue["comments_url"])) as listed:
            comments = await listed.json()
    assert posted.status == 303
    assert location.startswith("/acme/agents/issues/1#issuecomment-")
    assert [(c["user"]["login"], c["body"]) for c in comments][-1] == ("alice", "from the page")


async def test_comment_form_refuses_a_read_only_user_on_a_locked_issue(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """The page applies GitHub's lock rule: a read-only user cannot comment when locked."""
    issue = await _seed(github_sandbox, sandbox_config)
    bot = user(sandbox_config, "ticketproxy-bot")
    async with aiohttp.ClientSession() as http:
        async with http.put(f"{issue['url']}/lock", headers=auth(bot)) as locked:
            assert locked.status == 204
        async with http.post(
            f"{issue['html_url']}/comments", data={"login": "mallory", "body": "hi"}
        ) as refused:
            text = await refused.text()
        async with http.post(
            f"{issue['html_url']}/comments", data={"login": "nobody", "body": "hi"}
        ) as unknown:
            unknown_status = unknown.status
    assert refused.status == 403
    assert "Unable to create comment because issue is locked." in text
    assert unknown_status == 400


async def test_unknown_issue_page_is_404(github_sandbox: RunningSandbox) -> None:
    """A page for an issue that does not exist is a 404."""
    async with (
        aiohttp.ClientSession() as http,
        http.get(github_sandbox.web_url + "/acme/agents/issues/404") as page,
    ):
        assert page.status == 404


HOSTILE = (
    "# Task\n\n| step | done |\n|---|---|\n| one | yes |\n\n"
    "<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n"
    "[docs](javascript:alert(3)) [pic](data:text/html,<b>x</b>)\n"
)


async def _issue_page(running: RunningSandbox, config: SandboxConfig, body: str) -> tuple[str, str]:
    """Open an issue with ``body``, comment the same body, and return the page and its CSP."""
    bot = user(config, "ticketproxy-bot")
    async with aiohttp.ClientSession() as http:
        async with http.post(
            running.api_url + ISSUES, json={"title": "t", "body": body}, headers=auth(bot)
        ) as created:
            issue = await created.json()
        async with http.post(issue["comments_url"], json={"body": body}, headers=auth(bot)):
            pass
        async with http.get(issue["html_url"]) as page:
            return await page.text(), page.headers["Content-Security-Policy"]


async def test_script_in_prompt_is_not_executable_on_issue_page(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """``<script>``, ``<img onerror>`` and ``javascript:``/``data:`` links stay inert text."""
    text, policy = await _issue_page(github_sandbox, sandbox_config, HOSTILE)
    body = text.split("<footer>")[0]
    assert "<script" not in body
    assert "<img" not in body
    assert "javascript:alert(3)" in body  # shown, as text
    assert 'href="javascript' not in body
    assert 'href="data' not in body
    assert "default-src 'none'" in policy
    assert "script-src" not in policy  # so no script runs, even one the sanitiser missed


async def test_issue_page_renders_the_ticket_and_comments_as_github_does(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """The issue body and each comment are rendered markdown: heading, table, task list."""
    text, _ = await _issue_page(github_sandbox, sandbox_config, HOSTILE + "\n- [x] checked\n")
    assert text.count("<h1>Task</h1>") == 2
    assert text.count("<table>") == 2
    assert text.count('checked="checked" disabled="disabled" type="checkbox"> checked') == 2
