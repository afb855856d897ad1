"""Whose personal agent drafts which tickets: the routes, and the one a ticket takes. Pure.

A route names an editor's fork and the workflow there that drafts (``alice`` →
``alice/ticketproxy-agent``, ``agent.yml`` on ``main``), and which tickets it drafts: those
for a model id, those from a client key's name, or both (a route with both asks for both).
The first route that matches wins. Reading the routes from ``TICKETPROXY_AGENT_ROUTES`` is
:mod:`proxy.agent_route_settings`; dispatching the workflow is :mod:`ticketing.desk.agents`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["AgentRoute", "route_for"]


@dataclass(frozen=True)
class AgentRoute:
    """One editor's agent, and the tickets it drafts."""

    # The editor whose agent it is (the fork's owner unless said otherwise): the ticket
    # shows "drafting by <editor>'s agent…", and the editor signs what it drafts.
    editor: str
    # The fork that runs the agent, ``owner/name``, and its workflow (file name or id).
    repository: str
    workflow: str
    ref: str = "main"
    # What a ticket must be for: its model id, its client's name (None: any).
    model: str | None = None
    client: str | None = None

    def matches(self, *, model: str, client: str) -> bool:
        """Say whether a ticket for ``model`` from ``client`` goes to this agent."""
        if self.model is None and self.client is None:
            return False
        if self.model is not None and self.model != model:
            return False
        return self.client is None or self.client == client

    @property
    def name(self) -> str:
        """Return how tickets and logs name the agent: "alice's agent"."""
        return f"{self.editor}'s agent"


def route_for(routes: Sequence[AgentRoute], *, model: str, client: str) -> AgentRoute | None:
    """Return the first route a ticket for ``model`` from ``client`` takes, or None."""
    return next((route for route in routes if route.matches(model=model, client=client)), None)
