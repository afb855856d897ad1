"""Whose personal agent drafts which tickets: the routes, and the one a ticket takes. Pure.

A route names an editor's fork and the workflow there that drafts (``alice`` →
``alice/ticketproxy-agent``, ``agent.yml`` on ``main``), and which tickets it drafts: those
for a model id, those from a client key's name, those whose request carries a label, or any
mix (a route with several asks for all of them). The first route that matches wins.

A request's labels are what its client put in the request's ``metadata`` under
``ticketproxy_labels`` (comma-separated; OpenAI's and the Responses API's ``metadata``
object), the one place a client can label a request when the ticket opens: the issue's
GitHub labels are ticketproxy's own at that moment, and any label a person adds comes after
the dispatch was decided. The ticket shows the metadata, so the label routed by is visible.

Reading the routes from ``TICKETPROXY_AGENT_ROUTES`` is
:mod:`proxy.agent_route_settings`; dispatching the workflow is :mod:`ticketing.desk.agents`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["LABELS_METADATA_KEY", "AgentRoute", "request_labels", "route_for"]

# The metadata entry whose comma-separated values are a request's labels.
LABELS_METADATA_KEY = "ticketproxy_labels"
_MAX_LABELS = 20


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
    # What a ticket must be for: its model id, its client's name, a label its request
    # carries (None: any).
    model: str | None = None
    client: str | None = None
    label: str | None = None

    def matches(self, *, model: str, client: str, labels: frozenset[str] = frozenset()) -> bool:
        """Say whether a ticket for ``model`` from ``client`` with ``labels`` goes to this agent."""
        if self.model is None and self.client is None and self.label is None:
            return False
        if self.model is not None and self.model != model:
            return False
        if self.label is not None and self.label.casefold() not in labels:
            return False
        return self.client is None or self.client == client

    @property
    def name(self) -> str:
        """Return how tickets and logs name the agent: "alice's agent"."""
        return f"{self.editor}'s agent"


def request_labels(metadata: Mapping[str, str]) -> frozenset[str]:
    """Return the labels a request's ``metadata`` carries, case-folded (at most twenty)."""
    raw = metadata.get(LABELS_METADATA_KEY, "")
    labels = [part.strip().casefold() for part in raw.split(",")]
    return frozenset(label for label in labels[:_MAX_LABELS] if label)


def route_for(
    routes: Sequence[AgentRoute],
    *,
    model: str,
    client: str,
    labels: frozenset[str] = frozenset(),
) -> AgentRoute | None:
    """Return the first route a ticket for ``model`` from ``client`` with ``labels`` takes."""
    return next((r for r in routes if r.matches(model=model, client=client, labels=labels)), None)
