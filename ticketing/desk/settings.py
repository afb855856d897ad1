"""How the desk waits, polls and replies, and the names it gives tickets on GitHub."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from auth.policy import ReviewPolicy
from auth.verify import VerifyLimits
from ticketing.references import ticket_reference
from ticketing.store.model import Ticket

__all__ = [
    "LABEL",
    "LABEL_ANSWERED",
    "LABEL_AWAITING",
    "LABEL_EXPIRED",
    "LABEL_NEEDS_REVIEW",
    "REACTION_REFUSED",
    "DeskSettings",
]

LABEL = "ticketproxy"
LABEL_AWAITING = "awaiting-answer"
LABEL_ANSWERED = "answered"
LABEL_EXPIRED = "expired"
LABEL_NEEDS_REVIEW = "needs-review"
# The one reaction the bot leaves, on a refused signed comment, with its reply: it marks the
# refused comment itself. An accepted answer gets none: the labels, the review notice and the
# delivered notice say the same, and each reaction spends the content-creation budget.
REACTION_REFUSED = "-1"


@dataclass(frozen=True)
class DeskSettings:
    """How the desk waits, polls and replies."""

    repo: str
    poll_interval: float = 5.0
    max_wait: timedelta = timedelta(hours=1)
    redeliver_window: timedelta = timedelta(hours=1)
    poll_overlap: timedelta = timedelta(seconds=5)
    lock_issues: bool = True
    max_replies_per_ticket: int = 5
    verify_limits: VerifyLimits = field(default_factory=VerifyLimits)
    # While webhooks arrive, poll this many times less often (the backstop).
    webhook_backstop_factor: float = 6.0
    # Which answers wait for security reviewers' signed approvals.
    policy: ReviewPolicy = field(default_factory=ReviewPolicy.default)
    # With several replicas, only the holder of this lease polls GitHub; a replica that
    # stops (or dies) without renewing it hands polling over within this long.
    poll_lease: timedelta = timedelta(seconds=15)
    # The answer page's address, linked from every ticket (None: tickets name /desk/ only).
    answer_page: str | None = None
    # Past this many steps, a run's later steps open as child issues linked under its issue
    # (0: every later step); see ticketing.tree.
    tree_after_steps: int = 50

    def ticket_ref(self, ticket: Ticket) -> str:
        """Return the reference a signature's ``aud`` must name: ``owner/repo#N`` or ``#N/step``.

        The step is part of it, so a signature for one step of an agent run can answer
        no other step on the same issue.
        """
        if ticket.issue_number is None:
            raise ValueError(f"ticket {ticket.id} has no issue yet")
        # A step on an issue of its own (a child in the run's tree) is that issue's step 1.
        step = 1 if ticket.own_issue else ticket.step
        return ticket_reference(self.repo, ticket.issue_number, step)

    def step_ref(self, ticket: Ticket) -> str | None:
        """Return the reference a bot record names for a later step; None for the issue."""
        return self.ticket_ref(ticket) if ticket.step > 1 and not ticket.own_issue else None

    def page_of(self, ticket: Ticket) -> str | None:
        """Return the answer page's address that opens this ticket, if the page is known."""
        page = self.answer_page
        if page is None or ticket.issue_number is None:
            return page
        return f"{page}?ticket={ticket.issue_number}"
