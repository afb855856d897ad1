"""The app's one middleware: request id, browser checks, client key, wait timing, errors.

Every coroutine a handler is awaited through stays alive for as long as the handler runs,
and a completion may wait for hours, ten thousand of them at once: one middleware per
concern cost a frame each per waiting request. So the concerns run in one middleware, in
this order:

1. a request id, in ``request[REQUEST_ID]``, in the logging context and in ``x-request-id``;
2. Host, Origin and JSON content type (:func:`proxy.origin_checks.refuse_foreign`), before
   the client key, so a page a browser was tricked into sending is refused whatever it
   carries;
3. the client key (:class:`proxy.middleware.ClientKeys`);
4. the handler, timed for ``ticketproxy_wait_seconds`` when it returns;
5. every error turned into the route's front's envelope
   (:func:`proxy.middleware.failure_response`).

Steps 2 and 3 are plain calls made before the handler: nothing of theirs is held while it
waits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from .errors import APIError
from .logs import current_request_id
from .metrics import ProxyMetrics
from .middleware import REQUEST_ID, ClientKeys, failure_response, new_request_id, send_and_close
from .origin_checks import OriginPolicy, refuse_foreign

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def front_door(
    policy: OriginPolicy, keys: ClientKeys, *, metrics: ProxyMetrics | None = None
) -> Middleware:
    """Return the middleware that checks, names, times and answers for every request.

    ``policy`` says which Hosts and Origins are this server's, ``keys`` which client keys
    it takes; with ``metrics``, ticket-backed answers are timed into its wait histogram.
    """

    @web.middleware
    async def front(request: web.Request, handler: Handler) -> web.StreamResponse:
        request_id = new_request_id()
        request[REQUEST_ID] = request_id
        # Log lines written while serving (and by tasks started meanwhile) carry the id.
        token = current_request_id.set(request_id)
        try:
            response = refuse_foreign(policy, request)
            if response is None:
                keys.check(request)
                if metrics is None:
                    response = await handler(request)
                else:
                    started = metrics.clock()
                    response = await handler(request)
                    metrics.observe_wait(request, response, started)
        except Exception as exc:
            failure = failure_response(request, exc, request_id=request_id)
            if failure is None:
                raise
            if isinstance(exc, APIError) and exc.closes_connection:
                await send_and_close(request, failure)
            response = failure
        finally:
            current_request_id.reset(token)
        if not response.prepared:
            response.headers.setdefault("x-request-id", request_id)
        return response

    return front
