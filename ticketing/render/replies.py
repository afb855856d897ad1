"""Bodies of the comments the bot posts on a ticket, and the text an agent gets on expiry.

Pure: no I/O, no clock. Every comment ends with a hidden marker line
``<!-- ticketproxy:reply <kind> -->``, so the answer finder recognises the bot's own
comments and never treats one as an answer (nor rejects it, which would loop).

Values interpolated here (logins, URLs, rejection details that may quote a forged token's
header) are shown as escaped inline text: they cannot ping anyone, forge a marker or a
signature trailer, or inject HTML. Every value a reply quotes from a comment, an answer or
the request (details, problems, findings, commands, reasons) has its known secrets redacted
first, as the ticket's body does (:func:`ticketing.render.redact.redacted`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from ticketing.render.fences import backtick_fence
from ticketing.render.markdown import escape_inline, format_span, format_utc, neutralise_markers
from ticketing.render.markers import render_record_line
from ticketing.render.redact import redacted

__all__ = [
    "DELIVERED",
    "NEEDS_REVIEW",
    "REPLY_MARKER_PREFIX",
    "is_bot_reply",
    "render_delivered_notice",
    "render_expired_completion",
    "render_expired_notice",
    "render_late_answer_reply",
    "render_needs_review_notice",
    "render_rejection_reply",
    "render_review_rejected_notice",
    "render_unreleasable_reply",
    "reply_marker",
]

REPLY_MARKER_PREFIX = "<!-- ticketproxy:reply "
# The kinds of notice that carry a record line, which the offline audit reads.
NEEDS_REVIEW = "needs-review"  # the answer awaits review (read by `approve`)
DELIVERED = "delivered"  # the answer was released to the agent
_REJECTION = "rejection"
_EXPIRED = "expired"
_UNRELEASABLE = "unreleasable"
_LATE_ANSWER = "late-answer"
_REVIEW_REJECTED = "review-rejected"
AGENT_ANSWER = "agent-answer"  # the accepted answer is an agent's, on an editor's behalf
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")
_LINKABLE = re.compile(r"https?://[^\s<>()\[\]`\\]+")
_DETAIL_LIMIT = 500
_LATE_STATES = {
    "answered": "was already answered",
    "delivered": "was already answered",
    "expired": "had already expired",
}


def reply_marker(kind: str) -> str:
    """Return the hidden line that ends every bot comment of ``kind``."""
    return f"{REPLY_MARKER_PREFIX}{kind} -->"


def is_bot_reply(body: str) -> bool:
    """Return whether a comment carries the bot's reply marker on a line of its own."""
    # Liberal on purpose: a false positive only ignores a comment (fails closed), whereas
    # a bot reply taken for an answer would be rejected, and the rejection rejected again.
    return any(
        line.strip().startswith(REPLY_MARKER_PREFIX) and line.strip().endswith("-->")
        for line in body.splitlines()
    )


def render_rejection_reply(*, comment_url: str, author: str, detail: str) -> str:
    """Tell a comment's author, without pinging them, why their answer was not accepted."""
    reason = (
        escape_inline(redacted(detail), limit=_DETAIL_LIMIT).rstrip("\\. ") or "no reason given"
    )
    return _with_marker(
        f"**{escape_inline(author)}**'s {_link('comment', comment_url)} was not accepted:"
        f" {reason}. Fix it and post a new signed comment; editing this one will not help.",
        _REJECTION,
    )


def render_unreleasable_reply(*, comment_url: str, author: str, problems: tuple[str, ...]) -> str:
    """Tell an editor their signed answer is valid but cannot be given to the agent, and why."""
    listed = "\n".join(
        f"- {escape_inline(redacted(problem), limit=_DETAIL_LIMIT)}" for problem in problems[:10]
    )
    more = f"\n- … and {len(problems) - 10} more" if len(problems) > 10 else ""
    return _with_marker(
        f"**{escape_inline(author)}**'s {_link('comment', comment_url)} is correctly signed, but"
        " the agent cannot use it, so it was **not** delivered:\n\n"
        f"{listed}{more}\n\nFix the answer and post a new signed comment; the ticket is still"
        " waiting.",
        _UNRELEASABLE,
    )


def render_expired_notice(*, deadline: datetime, waited: timedelta, step: int | None = None) -> str:
    """Say that the ticket (or a step of its agent run) expired unanswered."""
    what = "This ticket" if step is None or step < 2 else f"Step {step} of this agent run"
    return _with_marker(
        f"{what} expired at **{format_utc(deadline)}** after waiting {format_span(waited)}:"
        " nobody posted an accepted signed answer in time. The agent was told that no human"
        " answered. Answers posted from now on are refused and will not be delivered.",
        _EXPIRED,
    )


def render_late_answer_reply(*, comment_url: str, state: str) -> str:
    """Say that an answer came after the ticket was closed, so it was not delivered."""
    phrase = _LATE_STATES.get(state) or f"was already closed (state {escape_inline(state)})"
    return _with_marker(
        f"This {_link('comment', comment_url)} arrived after the ticket {phrase}, so it was"
        " **not** delivered to the agent.",
        _LATE_ANSWER,
    )


def render_delivered_notice(
    *,
    comment_url: str,
    signer: str,
    kid: str,
    delivered_at: datetime,
    comment_id: int | None = None,
    digest: str | None = None,
    approvers: Sequence[str] = (),
    ticket: str | None = None,
) -> str:
    """Record which signed comment was delivered to the agent, by whom and when.

    With ``comment_id`` and ``digest`` the notice carries the record line the offline
    audit (`ticketproxy audit`) reads to know exactly which text was released.
    """
    approved = (
        f" Approved by {', '.join(f'**{escape_inline(a)}**' for a in approvers)}."
        if approvers
        else ""
    )
    record = (
        f"\n\n{render_record_line(comment_id=comment_id, digest=digest, ticket=ticket)}"
        if comment_id is not None and digest is not None
        else ""
    )
    return _with_marker(
        f"Delivered to the agent at **{format_utc(delivered_at)}**: the"
        f" {_link('signed comment', comment_url)} by **{escape_inline(signer)}**"
        f" (key {escape_inline(kid)}).{approved} Later answers on this ticket are not"
        f" delivered.{record}",
        DELIVERED,
    )


def render_agent_answer_notice(
    *, comment_url: str, on_behalf_of: str, poster: str, proof: str | None
) -> str:
    """Say plainly that an agent, not its editor, answered, and how it proved who it is."""
    how = (
        f"Its identity: a {escape_inline(proof, limit=_DETAIL_LIMIT)}."
        if proof is not None
        else "Its identity: a dedicated key enrolled in the keyring with the role agent."
    )
    return _with_marker(
        f"Answered by **{escape_inline(on_behalf_of)}'s agent**: the"
        f" {_link('signed comment', comment_url)} posted by **{escape_inline(poster)}** was"
        f" signed by an agent identity, not by a person. {how}",
        AGENT_ANSWER,
    )


def render_needs_review_notice(
    *,
    comment_url: str,
    author: str,
    required: int,
    commands: Sequence[str],
    findings: Sequence[tuple[str, str]],
    reviewers: Sequence[str],
    comment_id: int,
    digest: str,
    ticket: str | None = None,
) -> str:
    """Ask security reviewers to approve or reject an answer that holds risky commands."""
    # The commands are the editor's text: keep them from forging a marker or a second
    # record line (the audit ignores a notice with two).
    shown = neutralise_markers(
        redacted("\n".join(commands)) or "(no command could be read)"
    ).replace("comment_id=", "comment_id\u2060=")
    fence = backtick_fence(shown)
    risks = "\n".join(
        f"- **{escape_inline(rule)}**: {escape_inline(redacted(detail), limit=_DETAIL_LIMIT)}"
        for rule, detail in findings[:20]
    )
    # Reviewers come from the operator's keyring, never from the agent: pinging them is
    # the point of this notice.
    ping = " ".join(f"@{login}" for login in reviewers if _LOGIN.fullmatch(login))
    approvals = "1 approval" if required == 1 else f"{required} approvals"
    issue = issue_url_of(comment_url)
    return _with_marker(
        f"**Security review needed.** The {_link('signed answer', comment_url)} by"
        f" **{escape_inline(author)}** runs commands that need {approvals} from a reviewer"
        " other than its author before the agent gets them:\n\n"
        f"{fence}text\n{shown}\n{fence}\n\n{risks}\n\n"
        f"{ping + ': ' if ping else ''}approve with `ticketproxy approve {issue}"
        f" --key <your key>`, or reject with `ticketproxy reject {issue} --key"
        ' <your key> --reason "…"`. A rejected answer never reaches the agent.\n\n'
        f"{render_record_line(comment_id=comment_id, digest=digest, ticket=ticket)}",
        NEEDS_REVIEW,
    )


def render_review_rejected_notice(*, comment_url: str, reviewer: str, reason: str) -> str:
    """Say an answer was rejected in review and the ticket waits for a new answer."""
    why = escape_inline(redacted(reason), limit=_DETAIL_LIMIT) or "no reason given"
    return _with_marker(
        f"The answer was **rejected** by **{escape_inline(reviewer)}** in a"
        f" {_link('signed review', comment_url)}: {why}. The agent did not get it; the"
        " ticket waits for a new signed answer.",
        _REVIEW_REJECTED,
    )


def render_expired_completion(*, deadline: datetime, ticket_url: str) -> str:
    """Return the plain text an agent receives when nobody answered before the deadline."""
    # Plain prose on purpose: no code fence, no braces, no instruction, so neither a
    # tool-call parser nor a JSON-reply agent can read an action into it.
    url = "".join(c for c in ticket_url if c.isprintable() and not c.isspace())
    for char, escaped in (("{", "%7B"), ("}", "%7D"), ("`", "%60"), ("[", "%5B"), ("]", "%5D")):
        url = url.replace(char, escaped)
    return (
        "No human answered this request in time. The ticket for it"
        f" ({url or 'unknown'}) expired at {format_utc(deadline)} without an accepted signed"
        " answer, so there is no answer to give: nothing was decided and no action was approved."
    )


def _with_marker(text: str, kind: str) -> str:
    """End a comment with the hidden marker line that identifies the bot's replies."""
    return f"{text}\n\n{reply_marker(kind)}"


def issue_url_of(comment_url: str) -> str:
    """Return the issue's address from one of its comments' addresses, else a placeholder."""
    issue = comment_url.split("#", 1)[0]
    return issue if _LINKABLE.fullmatch(issue) else "<this issue's URL>"


def _link(label: str, url: str) -> str:
    """Return a markdown link to a plain http(s) URL, or the URL as escaped text."""
    if _LINKABLE.fullmatch(url):
        # The pointy-bracket destination takes any URL character except <, > and newline.
        return f"[{label}](<{url}>)"
    return f"{label} ({escape_inline(url, limit=_DETAIL_LIMIT)})"
