"""The handlers' hook that hands a new ticket to an editor's personal agent, if routed.

The routes are ``Settings.agent_routes`` (``TICKETPROXY_AGENT_ROUTES``); the desk's store,
write queue and clock do the rest (:func:`ticketing.desk.agents.dispatch_to_agent`).
"""

from __future__ import annotations

from aiohttp import web

from ticketing.desk.agents import dispatch_to_agent
from ticketing.request import ChatRequest
from ticketing.store.model import Ticket

from .handlers import DESK, SETTINGS


def start_agent(app: web.Application, ticket: Ticket, request: ChatRequest) -> bool:
    """Queue the dispatch of the agent a new ticket is routed to; False if it has no route."""
    routes = app[SETTINGS].agent_routes
    if not routes:
        return False
    desk = app[DESK]
    route = dispatch_to_agent(
        routes,
        ticket,
        request,
        store=desk.store,
        followups=desk.followups,
        clock=desk.clock,
    )
    return route is not None
