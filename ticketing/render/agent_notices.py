"""The bot's notices about personal agents: drafting started, or the agent given up. Pure.

An editor's agent (a workflow in the editor's fork, :mod:`ticketing.agent_routes`) is
started by a ``workflow_dispatch``; the ticket says so, and says so again if GitHub kept
refusing it. Both are bot replies (the finder skips them), with every name made inert.
"""

from __future__ import annotations

from ticketing.render.markdown import escape_inline
from ticketing.render.replies import reply_marker

__all__ = ["AGENT_DISPATCH_KIND", "render_dispatch_failed_notice", "render_drafting_notice"]

AGENT_DISPATCH_KIND = "agent-dispatch"
_REASON_LIMIT = 300


def render_drafting_notice(*, agent: str, repository: str, workflow: str) -> str:
    """Return the notice that an editor's agent was asked to draft this ticket."""
    return (
        f"**Drafting by {escape_inline(agent)}…** ticketproxy started the workflow"
        f" {escape_inline(workflow)} of {escape_inline(repository)}. Its draft will appear"
        " here as a marked suggestion; nothing reaches the agent until an editor signs it,"
        " and people may answer before it comes.\n\n"
        f"{reply_marker(AGENT_DISPATCH_KIND)}"
    )


def render_dispatch_failed_notice(*, agent: str, reason: str) -> str:
    """Return the notice that an editor's agent could not be started: no draft will come."""
    return (
        f"**{escape_inline(agent)} could not be started**, so no draft will come from it:"
        f" GitHub refused the workflow dispatch ({escape_inline(reason, limit=_REASON_LIMIT)})."
        " This ticket waits for people as before.\n\n"
        f"{reply_marker(AGENT_DISPATCH_KIND)}"
    )
