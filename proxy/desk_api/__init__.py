"""The desk API, ``/desk/api/v1``: what every editors' front end (the answer page, the VS Code
extension, scripts) reads and posts through. Described in ``docs/desk-api.md`` and served as
OpenAPI 3.1 at ``/desk/api/v1/openapi.json``.

- :mod:`~proxy.desk_api.shapes` (pure): tickets, requests, held answers as JSON;
- :mod:`~proxy.desk_api.routes`: the list, one ticket, the configuration, the description;
- :mod:`~proxy.desk_api.posting`: a comment signed client-side, checked, posted as the editor;
- :mod:`~proxy.desk_api.stream`: ticket events as server-sent events.

Access is the desk's: the desk token (bearer, cookie or ``?token=``), or loopback only when
no token is set. The description itself holds no ticket data and is served to anyone.
"""

from __future__ import annotations

from aiohttp import web

from . import posting, routes, stream

__all__ = ["API_PREFIX", "install_desk_api"]

API_PREFIX = "/desk/api/v1"


def install_desk_api(app: web.Application) -> None:
    """Add the ``/desk/api/v1`` routes (the desk page's settings and clock must be set)."""
    app[routes.TITLES] = {}
    app[stream.STREAMS] = set()
    app.on_shutdown.append(stream.end_streams)
    guarded = routes.guarded
    app.router.add_get(f"{API_PREFIX}/openapi.json", routes.openapi)
    app.router.add_get(f"{API_PREFIX}/config", guarded(routes.config))
    app.router.add_get(f"{API_PREFIX}/tickets", guarded(routes.list_tickets))
    app.router.add_get(f"{API_PREFIX}/tickets/{{number:[0-9]+}}", guarded(routes.show_ticket))
    app.router.add_post(
        f"{API_PREFIX}/tickets/{{number:[0-9]+}}/comments", guarded(posting.post_comment)
    )
    app.router.add_get(f"{API_PREFIX}/events", guarded(stream.events))
