"""Plain HTML pages: the repositories and their issues, one issue, and a form to comment.

Issue bodies and comments are markdown, rendered as GitHub would and sanitised by
:mod:`embedded_github.markdown_html` (no raw HTML, safe links only); everything else shown is
escaped. Hidden HTML comments (the signature trailer) are shown as visible, muted text, since
a person reviewing an answer should see what will be verified. The pages run no script, and
their Content-Security-Policy says so, as a second wall behind the sanitiser.
"""

from __future__ import annotations

import html
from importlib import resources
from string import Template

from aiohttp import web

from embedded_github.errors import ApiError
from embedded_github.markdown_html import render_markdown
from embedded_github.routes_comments import post_comment
from embedded_github.state import SandboxState
from embedded_github.store_rows import IssueRow, RepoRow
from embedded_github.timestamps import format_timestamp

# No script at all, images and forms from this server only, never framed.
PAGE_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)


def _page_template() -> Template:
    text = resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8")
    return Template(text)


class WebPages:
    """Serve the sandbox's web pages from its shared state."""

    def __init__(self, state: SandboxState) -> None:
        """Bind the state the pages show and change."""
        self._state = state
        self._template = _page_template()

    def register(self, router: web.UrlDispatcher) -> None:
        """Add the pages' routes to an application's router."""
        router.add_get("/", self.index)
        router.add_get(r"/{owner}/{repo}/issues/{number:\d+}", self.issue_page)
        router.add_post(r"/{owner}/{repo}/issues/{number:\d+}/comments", self.post_comment)

    def _page(self, title: str, content: str, *, status: int = 200) -> web.Response:
        body = self._template.substitute(title=html.escape(title), content=content)
        return web.Response(
            status=status,
            text=body,
            content_type="text/html",
            charset="utf-8",
            headers={"Content-Security-Policy": PAGE_POLICY},
        )

    def _error(self, status: int, message: str) -> web.Response:
        return self._page("Error", f'<p class="error">{html.escape(message)}</p>', status=status)

    async def index(self, request: web.Request) -> web.Response:
        """List every repository and its issues."""
        sections: list[str] = ["<h1>Repositories</h1>"]
        store = self._state.store
        for repo in self._state.repos:
            issues = store.list_issues(repo.id, state="all", sort="created", descending=True)
            sections.append(f"<h2>{html.escape(repo.full_name)}</h2>")
            if not issues:
                sections.append('<p class="meta">No issues yet.</p>')
                continue
            rows = []
            for issue in issues:
                labels = "".join(
                    f'<span class="label">{html.escape(label.name)}</span>'
                    for label in store.issue_labels(issue.id)
                )
                rows.append(
                    "<tr>"
                    f'<td><a href="{html.escape(_issue_path(repo, issue.number))}">'
                    f"#{issue.number}</a></td>"
                    f'<td><a href="{html.escape(_issue_path(repo, issue.number))}">'
                    f"{html.escape(issue.title)}</a></td>"
                    f'<td class="state-{issue.state}">{issue.state}</td>'
                    f"<td>{labels}</td>"
                    f"<td>{store.comment_count(repo.id, issue.number)}</td>"
                    "</tr>"
                )
            sections.append(
                "<table><thead><tr><th>#</th><th>Title</th><th>State</th><th>Labels</th>"
                f"<th>Comments</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            )
        return self._page("Repositories", "\n".join(sections))

    def _find(self, request: web.Request) -> tuple[RepoRow, IssueRow] | None:
        repo = self._state.find_repo(request.match_info["owner"], request.match_info["repo"])
        if repo is None:
            return None
        issue = self._state.store.get_issue(repo.id, int(request.match_info["number"]))
        return None if issue is None else (repo, issue)

    async def issue_page(self, request: web.Request) -> web.Response:
        """Show an issue, its comments, and a form to comment as a configured user."""
        found = self._find(request)
        if found is None:
            return self._error(404, "No such issue.")
        repo, issue = found
        return self._page(f"{issue.title} #{issue.number}", self._issue_content(repo, issue))

    def _issue_content(self, repo: RepoRow, issue: IssueRow) -> str:
        store = self._state.store
        labels = "".join(
            f'<span class="label">{html.escape(label.name)}</span>'
            for label in store.issue_labels(issue.id)
        )
        lock = ""
        if issue.locked:
            reason = f" as {html.escape(issue.lock_reason)}" if issue.lock_reason else ""
            lock = f'<p class="meta">Locked{reason}: only collaborators can comment.</p>'
        parts = [
            f'<h1>{html.escape(issue.title)} <span class="meta">#{issue.number}</span></h1>',
            f'<p class="meta"><a href="/">{html.escape(repo.full_name)}</a> · '
            f'<span class="state-{issue.state}">{issue.state}</span> · opened by '
            f"{html.escape(issue.author.login)} at {format_timestamp(issue.created_at)} "
            f"{labels}</p>",
            lock,
            f'<div class="markdown-body">{render_markdown(issue.body or "")}</div>',
        ]
        for comment in store.list_comments(repo.id, issue_number=issue.number):
            edited = ""
            if comment.updated_at != comment.created_at:
                edited = f" · edited {format_timestamp(comment.updated_at)}"
            parts.append(
                f'<article id="issuecomment-{comment.id}">'
                f'<p class="meta"><strong>{html.escape(comment.author.login)}</strong> '
                f"commented at {format_timestamp(comment.created_at)}{edited} · "
                f'<a href="#issuecomment-{comment.id}">link</a></p>'
                f'<div class="markdown-body">{render_markdown(comment.body)}</div></article>'
            )
        options = "".join(
            f'<option value="{html.escape(user.login)}">{html.escape(user.login)} '
            f"({html.escape(user.permission)})</option>"
            for user in self._state.users
        )
        action = html.escape(_issue_path(repo, issue.number) + "/comments")
        parts.append(
            f'<h2>Comment</h2><form method="post" action="{action}">'
            f'<p><label>As <select name="login">{options}</select></label></p>'
            '<p><textarea name="body" required></textarea></p>'
            '<p><button type="submit">Comment</button></p></form>'
        )
        return "\n".join(parts)

    async def post_comment(self, request: web.Request) -> web.StreamResponse:
        """Post the form's comment as the chosen user, then go back to the issue."""
        found = self._find(request)
        if found is None:
            return self._error(404, "No such issue.")
        repo, issue = found
        form = await request.post()
        login = form.get("login")
        body = form.get("body")
        user = self._state.find_user(login) if isinstance(login, str) else None
        if user is None:
            return self._error(400, "Choose one of the configured users.")
        if not isinstance(body, str) or not body.strip():
            return self._error(400, "A comment needs a body.")
        try:
            comment = post_comment(self._state, issue, user=user, body=body, now=self._state.now())
        except ApiError as error:
            return self._error(error.status, error.message)
        location = f"{_issue_path(repo, issue.number)}#issuecomment-{comment.id}"
        raise web.HTTPSeeOther(location)


def _issue_path(repo: RepoRow, number: int) -> str:
    return f"/{repo.owner}/{repo.name}/issues/{number}"
