"""The editor's and reviewer's rules, as pure functions of what the issue shows.

Which issue a URL names, which step of an agent run an answer is signed for (never a guess),
which draft ``answer --draft`` signs, which ticket a review is about, and who may approve.
No I/O: each takes values and returns a value or raises a ``ProxyError`` that says what to
do instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlparse

from auth.logins import same_login
from proxy.errors import ProxyError
from ticketing.audit.comments import AuditComment, bot_records
from ticketing.audit.pending import PendingAnswer
from ticketing.github.client import GITHUB_API_URL
from ticketing.github.interface import Comment
from ticketing.github.one_shot import IssueHistory
from ticketing.references import parse_ticket_reference, ticket_reference
from ticketing.render.drafts import DRAFT_REPLY_KIND, Draft, parse_draft_comment
from ticketing.render.markdown import format_utc
from ticketing.render.replies import DELIVERED, NEEDS_REVIEW, REPLY_MARKER_PREFIX
from ticketing.render.ticket import find_step_number

_ISSUE_NUMBER_RE = re.compile(r"[1-9][0-9]*")


def parse_issue_url(url: str) -> tuple[str, str, int]:
    """Split an issue URL into (API URL, OWNER/REPO, number).

    Takes the page address (``https://github.com/OWNER/REPO/issues/12``, the same on GitHub
    Enterprise and the sandbox) or the issue's API address (``.../repos/OWNER/REPO/issues/12``).
    """
    parsed = urlparse(url)
    parts = [p for p in parsed.path.split("/") if p]
    host = parsed.hostname
    if parsed.scheme not in {"http", "https"} or not host:
        raise ProxyError(
            f"{url!r} is not an issue URL like https://github.com/OWNER/REPO/issues/12"
        )
    origin = f"{parsed.scheme}://{parsed.netloc}"
    if host == "api.github.com" and parts[:1] == ["repos"]:
        api, parts = GITHUB_API_URL, parts[1:]
    elif parts[:3] == ["api", "v3", "repos"]:
        api, parts = f"{origin}/api/v3", parts[3:]
    elif host in {"github.com", "www.github.com"}:
        api = GITHUB_API_URL
    else:
        # GitHub Enterprise and the embedded sandbox serve the API under /api/v3.
        api = f"{origin}/api/v3"
    if len(parts) != 4 or parts[2] != "issues":
        raise ProxyError(
            f"{url!r} is not an issue URL like https://github.com/OWNER/REPO/issues/12"
        )
    owner, repo, _, number = parts
    if not _ISSUE_NUMBER_RE.fullmatch(number):
        raise ProxyError(f"{url!r} does not end in an issue number")
    return api, f"{owner}/{repo}", int(number)


def newest_step(history: IssueHistory) -> int:
    """Return the newest step of the agent run on an issue: 1 unless the bot posted steps."""
    steps = [
        step
        for comment in history.comments
        if same_login(comment.author_login, history.author_login)
        for step in [find_step_number(comment.body)]
        if step is not None
    ]
    return max(steps, default=1)


def step_to_answer(
    history: IssueHistory, *, repo: str, issue_url: str, step: int | None = None
) -> int:
    """Return the step to sign for: ``step`` (``--step``), the step comment the URL names, or 1.

    An issue that holds later steps of an agent run needs the step named: guessing "the
    newest" could sign an answer written for one step for another that opened meanwhile.
    """
    if step is not None:
        return int(step)
    fragment = re.fullmatch(r"issuecomment-([1-9][0-9]{0,18})", urlparse(issue_url).fragment)
    if fragment is not None:
        comment = next((c for c in history.comments if c.id == int(fragment.group(1))), None)
        named = None if comment is None else find_step_number(comment.body)
        if (
            comment is None
            or named is None
            or not same_login(comment.author_login, history.author_login)
        ):
            raise ProxyError(
                f"{issue_url} does not point at one of the bot's step comments on "
                f"{repo}#{history.number}: pass the issue's URL with --step N"
            )
        return named
    newest = newest_step(history)
    if newest > 1:
        raise ProxyError(
            f"{repo}#{history.number} holds steps 1 to {newest} of an agent run: say which one "
            f"you answer with --step (the newest is --step {newest}), or pass its step "
            "comment's URL"
        )
    return 1


def refuse_delivered(
    history: IssueHistory, comments: tuple[AuditComment, ...], *, ticket: str, issue_ticket: str
) -> None:
    """Refuse to answer ``ticket`` when the bot records its answer as already delivered.

    The agent has had its answer and the issue is closed: a new one would reach nobody,
    and the editor would not know. ``answer --force`` skips this check.
    """
    delivered = [
        record
        for record in bot_records(comments, kind=DELIVERED, bot_login=history.author_login)
        if (record.ticket or issue_ticket) == ticket
    ]
    if delivered:
        first = delivered[0]
        raise ProxyError(
            f"{ticket} was already answered: its answer was delivered to the agent at "
            f"{format_utc(first.posted_at)} ({first.notice_url}), and the issue is "
            f"{history.state}. A new answer would reach nobody; pass --force to post it anyway"
        )


def draft_to_sign(
    history: IssueHistory, ticket: str, *, posted_by: str | None = None
) -> tuple[Comment, Draft]:
    """Return the newest draft the bot posted for ``ticket``, with the comment that holds it.

    With ``posted_by``, the newest draft that login posted instead: a personal agent's, which
    the editor names (the agent posts with its editor's token, not the bot's).
    """
    # Only the bot (the issue's author) posts drafts: a look-alike by anyone else is ignored.
    # A draft made for another step of the run is never signed for this one.
    marker = f"{REPLY_MARKER_PREFIX}{DRAFT_REPLY_KIND} -->"
    author = history.author_login if posted_by is None else posted_by
    posted = [
        comment
        for comment in history.comments
        if same_login(comment.author_login, author) and marker in comment.body
    ]
    drafts = [(c, d) for c in posted if (d := parse_draft_comment(c.body)) is not None]
    step_one = parse_ticket_reference(ticket)[2] == 1
    mine = [(c, d) for c, d in drafts if d.ticket == ticket or (d.ticket is None and step_one)]
    if not mine:
        altered = len(posted) > len(drafts)
        raise ProxyError(
            f"no draft for {ticket}: "
            + (
                "a draft on the issue was changed after the bot posted it, so its text cannot"
                " be trusted as drafted: copy it, check it, and pass it with --file"
                if altered and not drafts
                else "the bot has posted no suggested answer for it; write the answer yourself"
                " and pass it with --file"
            )
        )
    return max(mine, key=lambda pair: (pair[0].created_at, pair[0].id))


def ticket_to_review(
    history: IssueHistory,
    comments: tuple[AuditComment, ...],
    *,
    repo: str,
    number: int,
    step: int | None = None,
) -> str:
    """Return the ticket to review: --step's, the newest review request's, or the newest step's."""
    if step is not None:
        return ticket_reference(repo, number, step)
    asked = bot_records(comments, kind=NEEDS_REVIEW, bot_login=history.author_login)
    if asked:
        # The step the bot's newest review request is about (an agent run's issue has several).
        return asked[-1].ticket or f"{repo}#{number}"
    return ticket_reference(repo, number, newest_step(history))


def refuse_approval(pending: PendingAnswer, *, reviewer: str) -> None:
    """Refuse to approve an answer edited since the review request, or the reviewer's own."""
    if pending.edited:
        raise ProxyError(
            "the answer was edited after the bot asked for review (its text no longer has "
            f"sha256 {pending.digest}); do not approve it: ask for a new signed answer"
        )
    if same_login(reviewer, pending.comment.author_login):
        raise ProxyError(f"you ({reviewer}) wrote this answer; another reviewer must approve it")


def configured_api_url(env: Mapping[str, str]) -> tuple[str, str]:
    """Return the GitHub API ``serve`` would use with ``env``, and a phrase naming it.

    ``TICKETPROXY_GITHUB_API_URL`` when set; else the embedded GitHub on
    ``TICKETPROXY_SANDBOX_PORT`` when no GitHub token or App is configured (the demo, where
    ``serve`` starts it); else GitHub itself.
    """
    if env.get("TICKETPROXY_GITHUB_API_URL"):
        return env["TICKETPROXY_GITHUB_API_URL"].rstrip("/"), "TICKETPROXY_GITHUB_API_URL"
    if not env.get("TICKETPROXY_GITHUB_TOKEN") and not env.get("TICKETPROXY_GITHUB_APP_ID"):
        port = env.get("TICKETPROXY_SANDBOX_PORT") or "8081"
        return f"http://127.0.0.1:{port}/api/v3", "the embedded GitHub that `serve` starts"
    return GITHUB_API_URL, "GitHub"
