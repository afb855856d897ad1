"""The editor's and reviewer's rules, checked on plain values: no server, no GitHub."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from proxy.cli.rules import (
    configured_api_url,
    draft_to_sign,
    newest_step,
    parse_issue_url,
    refuse_approval,
    step_to_answer,
    ticket_to_review,
)
from proxy.errors import ProxyError
from ticketing.audit.comments import AuditComment
from ticketing.audit.pending import PendingAnswer
from ticketing.github.interface import Comment
from ticketing.github.one_shot import IssueHistory
from ticketing.render.drafts import draft_digest, render_draft_comment
from ticketing.render.markers import render_record_line, step_marker
from ticketing.render.replies import NEEDS_REVIEW, REPLY_MARKER_PREFIX

REPO = "acme/agents"
BOT = "ticketproxy-bot"
ISSUE_URL = "https://github.com/acme/agents/issues/7"
KEY = "ab" * 8
START = datetime(2026, 1, 1, tzinfo=UTC)
DIGEST = "0" * 64


def comment(comment_id: int, body: str, *, author: str = BOT) -> Comment:
    """Return comment ``comment_id`` on issue 7, posted ``comment_id`` minutes after START."""
    posted = START + timedelta(minutes=comment_id)
    return Comment(
        id=comment_id,
        issue_number=7,
        body=body,
        author_login=author,
        author_id=1 if author == BOT else 1001,
        created_at=posted,
        updated_at=posted,
        url=f"{ISSUE_URL}#issuecomment-{comment_id}",
    )


def step_comment(comment_id: int, step: int, *, author: str = BOT) -> Comment:
    """Return the comment that opens ``step`` of the agent run on issue 7."""
    return comment(
        comment_id, f"Step {step} of the run.\n\n{step_marker(KEY, step)}", author=author
    )


def draft_comment(comment_id: int, text: str, *, ticket: str | None) -> Comment:
    """Return the bot's draft comment holding ``text``, drafted for ``ticket``."""
    body = render_draft_comment(text, model="llama3.2", digest=draft_digest(text), ticket=ticket)
    return comment(comment_id, body)


def history(*comments: Comment) -> IssueHistory:
    """Return issue 7, opened by the bot, with ``comments``."""
    return IssueHistory(
        number=7,
        url=ISSUE_URL,
        title="a ticket",
        body="the request",
        labels=("ticketproxy",),
        state="open",
        author_login=BOT,
        author_id=1,
        created_at=START,
        comments=comments,
    )


def audit_comment(source: Comment) -> AuditComment:
    """Return ``source`` as the audit reads it."""
    return AuditComment(
        id=source.id,
        author_login=source.author_login,
        author_id=source.author_id,
        body=source.body,
        created_at=source.created_at,
        updated_at=source.updated_at,
        url=source.url,
    )


def pending(*, author: str = "alice", current_digest: str = DIGEST) -> PendingAnswer:
    """Return an answer by ``author`` awaiting review, edited if the digests differ."""
    return PendingAnswer(
        comment=audit_comment(comment(3, "the answer", author=author)),
        text="the answer",
        digest=DIGEST,
        current_digest=current_digest,
        requested=True,
    )


# --- parse_issue_url ---------------------------------------------------------------------


def test_issue_page_on_github_maps_to_the_public_api() -> None:
    """github.com's page address gives api.github.com, the repository and the number."""
    assert parse_issue_url(ISSUE_URL) == ("https://api.github.com", REPO, 7)


def test_issue_page_elsewhere_maps_to_its_api_v3() -> None:
    """GitHub Enterprise and the sandbox serve the API under /api/v3 on the same origin."""
    url = "http://127.0.0.1:8081/acme/agents/issues/7"
    assert parse_issue_url(url) == ("http://127.0.0.1:8081/api/v3", REPO, 7)


def test_issue_number_zero_is_refused() -> None:
    """An issue number must be a positive integer without leading zeros."""
    with pytest.raises(ProxyError, match="does not end in an issue number"):
        parse_issue_url("https://github.com/acme/agents/issues/0")


# --- newest_step and step_to_answer ------------------------------------------------------


def test_issue_without_step_comments_is_at_step_one() -> None:
    """An issue whose bot posted no step comment has only step 1."""
    assert newest_step(history(comment(1, "a reply"))) == 1


def test_step_comments_by_anyone_but_the_bot_do_not_count() -> None:
    """A look-alike step comment by another login does not make a newer step."""
    issue = history(step_comment(1, 2), step_comment(2, 5, author="mallory"))
    assert newest_step(issue) == 2


def test_the_step_named_with_step_wins() -> None:
    """``--step N`` is signed for as given, whatever the issue holds."""
    issue = history(step_comment(1, 2), step_comment(2, 3))
    assert step_to_answer(issue, repo=REPO, issue_url=ISSUE_URL, step=2) == 2


def test_a_step_comment_url_names_its_step() -> None:
    """The URL of the bot's step comment answers that step."""
    issue = history(step_comment(1, 2), step_comment(2, 3))
    url = f"{ISSUE_URL}#issuecomment-1"
    assert step_to_answer(issue, repo=REPO, issue_url=url) == 2


def test_a_plain_issue_url_answers_step_one_when_there_is_no_other() -> None:
    """An issue with one step needs no step named."""
    assert step_to_answer(history(), repo=REPO, issue_url=ISSUE_URL) == 1


def test_the_newest_step_is_never_guessed() -> None:
    """An issue with several steps refuses a plain URL and says how to name the step."""
    issue = history(step_comment(1, 2), step_comment(2, 3))
    with pytest.raises(ProxyError) as refused:
        step_to_answer(issue, repo=REPO, issue_url=ISSUE_URL)
    assert str(refused.value) == (
        "acme/agents#7 holds steps 1 to 3 of an agent run: say which one you answer with "
        "--step (the newest is --step 3), or pass its step comment's URL"
    )


@pytest.mark.parametrize(
    "comments",
    [
        pytest.param((comment(1, "no step marker"),), id="not-a-step-comment"),
        pytest.param((step_comment(1, 2, author="mallory"),), id="not-the-bot's"),
        pytest.param((), id="no-such-comment"),
    ],
)
def test_a_comment_url_that_is_not_the_bots_step_comment_is_refused(
    comments: tuple[Comment, ...],
) -> None:
    """A comment URL must point at one of the bot's step comments on the issue."""
    with pytest.raises(ProxyError, match="does not point at one of the bot's step comments"):
        step_to_answer(history(*comments), repo=REPO, issue_url=f"{ISSUE_URL}#issuecomment-1")


# --- draft_to_sign -----------------------------------------------------------------------


def test_the_newest_draft_for_the_ticket_is_signed() -> None:
    """Of two drafts for the same ticket, the newer one's exact text is chosen."""
    ticket = f"{REPO}#7/2"
    issue = history(
        draft_comment(1, "older draft", ticket=ticket),
        draft_comment(2, "newer draft", ticket=ticket),
    )
    chosen, draft = draft_to_sign(issue, ticket)
    assert chosen.id == 2
    assert draft.text == "newer draft"


def test_a_draft_for_another_step_is_never_signed() -> None:
    """A draft made for step 2 is not signed for step 3."""
    issue = history(draft_comment(1, "for step two", ticket=f"{REPO}#7/2"))
    with pytest.raises(ProxyError, match="the bot has posted no suggested answer"):
        draft_to_sign(issue, f"{REPO}#7/3")


def test_a_draft_without_a_ticket_counts_for_step_one_only() -> None:
    """Drafts from before steps existed belong to the issue's first step."""
    issue = history(draft_comment(1, "old-style draft", ticket=None))
    assert draft_to_sign(issue, f"{REPO}#7")[1].text == "old-style draft"
    with pytest.raises(ProxyError, match="no draft for acme/agents#7/2"):
        draft_to_sign(issue, f"{REPO}#7/2")


def test_a_draft_posted_by_someone_else_is_ignored() -> None:
    """Only the bot posts drafts: a look-alike by another login is not signed."""
    look_alike = draft_comment(1, "run rm -rf /", ticket=f"{REPO}#7")
    issue = history(comment(1, look_alike.body, author="mallory"))
    with pytest.raises(ProxyError, match="the bot has posted no suggested answer"):
        draft_to_sign(issue, f"{REPO}#7")


def test_a_draft_edited_after_posting_is_refused_saying_so() -> None:
    """A draft whose text no longer matches its digest cannot be signed as drafted."""
    posted = draft_comment(1, "the draft", ticket=f"{REPO}#7")
    issue = history(comment(1, posted.body.replace("the draft", "the edit")))
    with pytest.raises(ProxyError, match="was changed after the bot posted it"):
        draft_to_sign(issue, f"{REPO}#7")


def test_a_personal_agents_draft_is_signed_only_from_the_login_the_editor_names() -> None:
    """With ``posted_by``, that login's draft is chosen; a look-alike by anyone else is not."""
    ticket = f"{REPO}#7"
    mine = draft_comment(1, "agent draft", ticket=ticket)
    look_alike = draft_comment(2, "run rm -rf /", ticket=ticket)
    issue = history(
        comment(1, mine.body, author="alice"), comment(2, look_alike.body, author="mallory")
    )
    chosen, draft = draft_to_sign(issue, ticket, posted_by="alice")
    assert (chosen.id, draft.text) == (1, "agent draft")
    with pytest.raises(ProxyError, match="no draft for"):
        draft_to_sign(issue, ticket)


# --- ticket_to_review --------------------------------------------------------------------


def review_request(comment_id: int, *, ticket: str | None) -> Comment:
    """Return the bot's needs-review notice for answer comment 3, about ``ticket``."""
    record = render_record_line(comment_id=3, digest=DIGEST, ticket=ticket)
    return comment(comment_id, f"Needs review.\n{record}\n{REPLY_MARKER_PREFIX}{NEEDS_REVIEW} -->")


def review_ticket(issue: IssueHistory, step: int | None = None) -> str:
    """Return the ticket a review of ``issue`` judges."""
    comments = tuple(audit_comment(c) for c in issue.comments)
    return ticket_to_review(issue, comments, repo=REPO, number=7, step=step)


def test_review_judges_the_step_named_with_step() -> None:
    """``--step N`` names the ticket, whatever the bot asked about."""
    issue = history(step_comment(1, 2), review_request(2, ticket=f"{REPO}#7/2"))
    assert review_ticket(issue, step=3) == f"{REPO}#7/3"


def test_review_judges_the_step_of_the_newest_review_request() -> None:
    """Without ``--step``, the bot's newest review request names the ticket."""
    issue = history(step_comment(1, 2), step_comment(2, 3), review_request(4, ticket=f"{REPO}#7/2"))
    assert review_ticket(issue) == f"{REPO}#7/2"


def test_review_request_without_a_ticket_is_about_the_issue() -> None:
    """A review request from before steps is about the issue's own ticket."""
    assert review_ticket(history(review_request(2, ticket=None))) == f"{REPO}#7"


def test_review_without_a_request_judges_the_newest_step() -> None:
    """With no review request, the newest step is judged."""
    assert review_ticket(history(step_comment(1, 2), step_comment(2, 3))) == f"{REPO}#7/3"


# --- refuse_approval ---------------------------------------------------------------------


def test_approving_your_own_answer_is_refused() -> None:
    """Self-approval: the answer's author may not be its reviewer."""
    with pytest.raises(ProxyError) as refused:
        refuse_approval(pending(author="alice"), reviewer="alice")
    assert str(refused.value) == "you (alice) wrote this answer; another reviewer must approve it"


def test_self_approval_is_refused_whatever_the_logins_case() -> None:
    """GitHub logins are case-insensitive, so ``Alice`` is still alice."""
    with pytest.raises(ProxyError, match="another reviewer must approve it"):
        refuse_approval(pending(author="alice"), reviewer="Alice")


def test_approving_an_answer_edited_since_the_review_request_is_refused() -> None:
    """Text edited after the bot asked for review is never approved."""
    with pytest.raises(ProxyError, match="the answer was edited after the bot asked for review"):
        refuse_approval(pending(current_digest="f" * 64), reviewer="bob")


def test_another_reviewer_may_approve_an_unedited_answer() -> None:
    """Bob may approve alice's answer as the bot asked for it."""
    refuse_approval(pending(author="alice"), reviewer="bob")


def test_audit_without_server_settings_goes_to_the_embedded_github_serve_starts() -> None:
    """In the embedded demo (no GitHub token configured), audit asks the local GitHub."""
    assert configured_api_url({})[0] == "http://127.0.0.1:8081/api/v3"
    assert configured_api_url({"TICKETPROXY_SANDBOX_PORT": "9000"})[0] == (
        "http://127.0.0.1:9000/api/v3"
    )


def test_audit_follows_the_configured_github_api_url() -> None:
    """TICKETPROXY_GITHUB_API_URL, as serve reads it, wins over every default."""
    env = {
        "TICKETPROXY_GITHUB_API_URL": "https://ghe.example/api/v3/",
        "TICKETPROXY_GITHUB_TOKEN": "t",
    }
    assert configured_api_url(env) == ("https://ghe.example/api/v3", "TICKETPROXY_GITHUB_API_URL")


@pytest.mark.parametrize("credential", ["TICKETPROXY_GITHUB_TOKEN", "TICKETPROXY_GITHUB_APP_ID"])
def test_audit_with_a_real_github_configured_goes_to_github(credential: str) -> None:
    """A configured token or App without an API URL means github.com, as for serve."""
    assert configured_api_url({credential: "x"})[0] == "https://api.github.com"
