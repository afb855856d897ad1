"""Route handlers and the application's shared keys: the model list, and what every front needs.

The completion routes themselves are fronts (:mod:`proxy.fronts`) on the one flow in
:mod:`proxy.completion_flow`: chat and legacy completions in :mod:`proxy.openai_fronts`, the
Responses API in :mod:`proxy.responses_front`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from aiohttp import web

from ticketing.desk import Desk
from ticketing.store.model import Ticket

from .errors import NotFound
from .keepalive import SSE_FRAMING
from .routing import RouteTable
from .settings import Settings
from .wire.responses import render_model, render_model_list

__all__ = ["DESK", "OPENING", "ROUTES", "SETTINGS", "SSE_FRAMING", "Openings"]

SETTINGS = web.AppKey("settings", Settings)


@dataclass
class Openings:
    """Ticket openings still running after their request gave up (see proxy.completion_flow)."""

    tasks: set[asyncio.Task[Ticket]] = field(default_factory=set)
    # Set once shutdown began: an opening handed over after that is cancelled at once.
    closing: bool = False


OPENING = web.AppKey("opening", Openings)
DESK = web.AppKey("desk", Desk)
ROUTES = web.AppKey("routes", RouteTable)

# The issue (or step comment) a completion's ticket is on; the metrics time these requests.
TICKET_HEADER = "x-ticketproxy-ticket"
# A client may name its agent run: every request with the same name (from the same client
# key) lands on one issue, a step comment each.
THREAD_HEADER = "X-Ticketproxy-Thread"


async def list_models(request: web.Request) -> web.Response:
    """List the model ids agents may ask for."""
    return web.json_response(render_model_list(request.app[ROUTES].listed))


async def get_model(request: web.Request) -> web.Response:
    """Describe one model id."""
    model = request.match_info["model"]
    if request.app[ROUTES].resolve(model) is None:
        raise NotFound(
            f"The model `{model}` does not exist on this ticketproxy",
            param="model",
            code="model_not_found",
        )
    return web.json_response(render_model(model))
