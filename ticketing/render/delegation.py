"""What the bot says on a delegated ticket and its children, pure.

Only the addressee's ping mentions anyone: every other name is escaped so it pings nobody,
and every sub-question is shown as inline text, so a mention inside it pings nobody either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ticketing.render.markdown import escape_inline
from ticketing.render.markers import render_record_line
from ticketing.render.replies import reply_marker

__all__ = [
    "ANSWERS_KIND",
    "DELEGATED",
    "DELEGATED_ANSWER",
    "ChildAnswer",
    "render_addressee_ping",
    "render_child_answer_record",
    "render_child_expired_notice",
    "render_delegated_notice",
    "render_delegation_answers",
    "render_superseded_notice",
]

ANSWERS_KIND = "delegation-answers"
# Read by the audit (ticketing.audit.delegation): the record line of each notice says what
# was carried out: the delegate comment on the parent, the accepted answer on a child.
DELEGATED = "delegated"
DELEGATED_ANSWER = "delegated-answer"
_QUESTION_LIMIT = 200


@dataclass(frozen=True)
class ChildAnswer:
    """One child of a delegated ticket, as the parent lists it: its issue and signed answer."""

    number: int
    question: str
    addressee: str | None
    signer: str | None = None
    digest: str | None = None
    answer_url: str | None = None


def _question(text: str) -> str:
    return escape_inline(text, limit=_QUESTION_LIMIT)


def _for(addressee: str | None) -> str:
    return "" if addressee is None else f" (for **{escape_inline(addressee)}**)"


def render_delegated_notice(
    *, delegated_by: str, children: Sequence[ChildAnswer], comment_id: int, digest: str
) -> str:
    """Tell the parent that it was split, into which child issues; the agent keeps waiting."""
    lines = [
        f"**{escape_inline(delegated_by)}** delegated this ticket into sub-questions, each a"
        " sub-issue answered there with a signed answer for its own reference. The agent keeps"
        " waiting: once they are answered, an editor signs this ticket's final answer, which is"
        " what the agent gets. An editor may also answer here directly at any time.",
        "",
    ]
    lines += [f"- #{c.number}: {_question(c.question)}{_for(c.addressee)}" for c in children]
    record = render_record_line(comment_id=comment_id, digest=digest)
    return "\n".join(lines) + f"\n\n{record}\n\n{reply_marker(DELEGATED)}"


def render_child_answer_record(
    *, parent: int, signer: str, comment_id: int, digest: str, comment_url: str
) -> str:
    """Record on a child which signed answer answers it, for the audit; the child closes."""
    record = render_record_line(comment_id=comment_id, digest=digest)
    return (
        f"The [signed answer](<{comment_url}>) by **{escape_inline(signer)}** answers this"
        f" sub-question of #{parent}; #{parent} lists it for the editor who signs the final"
        f" answer.\n\n{record}\n\n{reply_marker(DELEGATED_ANSWER)}"
    )


def render_addressee_ping(*, addressee: str, parent: int, reference: str) -> str:
    """Ask the addressee (the one mention) to answer this child, signed for its reference."""
    return (
        f"@{addressee}, this sub-question of #{parent} is for you. Answer it here with a signed"
        f" answer for `{reference}`; the agent gets the final answer of #{parent}, not yours."
        f"\n\n{reply_marker('delegated-to')}"
    )


def render_delegation_answers(children: Sequence[ChildAnswer]) -> str:
    """List each child's signed answer on the parent: signer, digest, link."""
    lines = [
        "Every sub-question of this ticket is answered. An editor now signs this ticket's final"
        " answer (the agent gets that one, not these):",
        "",
    ]
    for child in children:
        signed = (
            f"answered by **{escape_inline(child.signer or '')}**, [`sha256:{child.digest}`]"
            f"(<{child.answer_url}>)"
        )
        lines.append(f"- #{child.number}: {_question(child.question)}: {signed}")
    return "\n".join(lines) + f"\n\n{reply_marker(ANSWERS_KIND)}"


def render_superseded_notice(*, parent: int) -> str:
    """Tell a child that the parent was answered directly: this sub-question is closed."""
    return (
        f"#{parent} was answered directly by an editor: this sub-question is closed as"
        f" superseded, and an answer here no longer counts.\n\n{reply_marker('superseded')}"
    )


def render_child_expired_notice(*, child: int, question: str) -> str:
    """Tell the parent that a child expired unanswered: it can still be answered directly."""
    return (
        f"Sub-issue #{child} ({_question(question)}) expired without an answer. This ticket is"
        " still open: an editor can answer it directly with a signed answer."
        f"\n\n{reply_marker('delegated-expired')}"
    )


def render_delegation_stalled(*, delegated_by: str, opened: Sequence[int], total: int) -> str:
    """Tell the parent that some of its children could not open yet, and are retried."""
    numbers = ", ".join(f"#{number}" for number in opened) or "none yet"
    return (
        f"Delegation by **{escape_inline(delegated_by)}**: {len(opened)} of {total}"
        f" sub-questions opened ({numbers}); GitHub is unavailable, retrying: each of the rest"
        " opens once GitHub takes it. The agent keeps waiting; an editor may answer this"
        " ticket directly at any time."
        f"\n\n{reply_marker('delegation-stalled')}"
    )


def render_delegation_given_up(
    *, delegated_by: str, opened: Sequence[int], missing: Sequence[str], reason: str
) -> str:
    """Tell the editors that some children were never opened: answer the parent directly."""
    lines = [
        f"**Delegation by {escape_inline(delegated_by)} given up:** {len(missing)}"
        f" sub-question(s) could not be opened in time"
        f" ({escape_inline(reason, limit=_QUESTION_LIMIT)}):",
        "",
    ]
    lines += [f"- {_question(question)}" for question in missing]
    opened_text = ", ".join(f"#{number}" for number in opened)
    lines += [
        "",
        "This ticket is still open: an editor can answer it directly with a signed answer"
        + (f" (the sub-issues opened, {opened_text}, still take theirs)." if opened else "."),
    ]
    return "\n".join(lines) + f"\n\n{reply_marker('delegation-given-up')}"
