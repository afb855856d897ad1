"""The aiohttp application: OpenAI routes in front of the ticket desk.

``create_app(settings)`` is the same in production and in tests. The desk (store, GitHub
client, poller) is owned by a ``cleanup_ctx`` so it starts and stops with the app.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator
from datetime import timedelta

from aiohttp import web

from auth.policy import ReviewPolicy
from ticketing.clock import Clock, Sleep, utc_now
from ticketing.desk import Desk, DeskSettings
from ticketing.errors import GitHubError, TicketingError
from ticketing.github.client import GitHubClient

from .a2a.routes import install_a2a
from .agent_protocol.routes import install_agent_protocol
from .completion_flow import cancel_openings, install_front
from .desk_api import install_desk_api
from .desk_factories import (
    CoordinatorFactory,
    GitHubFactory,
    StoreFactory,
    build_coordinator,
    build_github,
    open_store,
)
from .desk_page import DeskPageSettings, install_desk_page
from .drafts import drafter_context
from .front_door import front_door
from .handlers import DESK, OPENING, ROUTES, SETTINGS, Openings, get_model, list_models
from .health import healthz, readyz
from .mcp.routes import install_mcp
from .messages_front import MESSAGES_FRONT, count_tokens
from .metrics import install_metrics
from .middleware import ClientKeys
from .oidc_jwks import OIDC_KEYS, oidc_keys_context
from .openai_fronts import CHAT_FRONT, LEGACY_FRONT
from .origin_checks import OriginPolicy
from .responses_front import RESPONSES_FRONT
from .routing import RouteTable, load_routes
from .settings import Settings
from .startup import check_github, open_keyring
from .stored_responses import install_stored_responses
from .upstream import upstream_session
from .webhook import WEBHOOK_PATH, github_webhook

log = logging.getLogger(__name__)

__all__ = ["DESK", "ROUTES", "SETTINGS", "create_app"]


def create_app(
    settings: Settings,
    *,
    clock: Clock = utc_now,
    sleep: Sleep = asyncio.sleep,
    bot_login: str | None = None,
    routes: RouteTable | None = None,
    store_factory: StoreFactory = open_store,
    github_factory: GitHubFactory = build_github,
    coordinator_factory: CoordinatorFactory = build_coordinator,
) -> web.Application:
    """Build the ticketproxy application for these settings.

    ``routes`` defaults to the routes file in ``settings.routes_path`` (read now, with the
    upstream keys in ``settings.upstream_keys``), or to every configured model going to people.
    The desk's store, GitHub client and coordinator come from the factories, called when the
    app starts; the defaults are SQLite in the data directory, GitHub (or the sandbox) as the
    settings say, and Redis if ``settings.redis_url`` is set.
    """
    app = web.Application(
        client_max_size=settings.max_body_bytes,
        # aiohttp closes a connection still waiting for a whole request (headers included)
        # when its keep-alive deadline passes, and data arriving does not move it: so a
        # trickled header section is cut within TICKETPROXY_HEADER_TIMEOUT.
        handler_args={"keepalive_timeout": settings.header_timeout},
    )
    app[SETTINGS] = settings
    if routes is None:
        routes = (
            RouteTable.humans_only(settings.models)
            if settings.routes_path is None
            else load_routes(settings.routes_path, settings.upstream_keys)
        )
    app[ROUTES] = routes
    # Loaded now, so a bad policy file stops the start with its name and the fix.
    policy = ReviewPolicy.load_or_default(settings.review_policy_path)

    async def desk_context(app: web.Application) -> AsyncIterator[None]:
        # First: a keyring that is missing (or a directory) stops the start before anything
        # is opened, with the variable and the fix.
        keyring = open_keyring(settings)
        store = store_factory(settings)
        coordinator = coordinator_factory(settings)
        github = github_factory(settings, clock=clock, sleep=sleep)
        desk_bot_login = bot_login
        if desk_bot_login is None and github.app is not None:
            desk_bot_login = await app_bot_login(github)
        await check_github(github)
        oidc_keys = app[OIDC_KEYS]
        if oidc_keys is not None:
            # Every issuer key the desk verifies with stays on record for offline audits.
            oidc_keys.keep_in(store)
        desk = Desk(
            store=store,
            github=github,
            keyring=keyring.current,
            settings=DeskSettings(
                repo=settings.github_repo,
                poll_interval=settings.poll_interval,
                poll_lease=timedelta(seconds=settings.poll_lease),
                max_wait=timedelta(seconds=settings.max_wait),
                lock_issues=settings.lock_issues,
                tree_after_steps=settings.tree_after_steps,
                policy=policy,
                answer_page=settings.answer_page_url,
            ),
            bot_login=desk_bot_login,
            clock=clock,
            coordinator=coordinator,
            oidc_keys=oidc_keys,
        )
        app[DESK] = desk
        await desk.start()
        try:
            yield
        finally:
            # Openings handed over by requests cancelled after on_shutdown ran.
            await cancel_openings(app)
            await desk.stop()
            await coordinator.close()
            await github.close()
            store.close()

    app[OPENING] = Openings()
    # On shutdown, before any cleanup: no ticket opening outlives the desk it runs on.
    app.on_shutdown.append(cancel_openings)
    # Then waiting clients are told to retry at once: aiohttp would otherwise wait for their
    # handlers (shutdown_timeout) before the desk stops and releases them.
    app.on_shutdown.append(release_waiting_clients)
    # Before the desk, so the desk stops before the issuer's keys' session closes.
    app.cleanup_ctx.append(oidc_keys_context(settings.oidc_issuer, clock=clock))
    app.cleanup_ctx.append(desk_context)
    # After the desk, so it stops first: no draft is posted to a desk that has stopped.
    app.cleanup_ctx.append(drafter_context(settings, DESK))
    app.cleanup_ctx.append(upstream_session)
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/models", list_models)
    app.router.add_get("/v1/models/{model}", get_model)
    app.router.add_get("/models/{model}", get_model)
    # Each front: its wire module and its routes (see proxy/fronts.py).
    install_front(app, CHAT_FRONT, "/v1/chat/completions", "/chat/completions")
    install_front(app, LEGACY_FRONT, "/v1/completions", "/completions")
    install_front(app, RESPONSES_FRONT, "/v1/responses", "/responses")
    install_stored_responses(app, "/v1/responses")
    install_front(app, MESSAGES_FRONT, "/v1/messages")
    # Under /v1/messages, so the middleware gives it the same envelope and key reading.
    app.router.add_post("/v1/messages/count_tokens", count_tokens)
    install_agent_protocol(app, clock=clock)
    install_a2a(app)
    install_mcp(app)
    app.router.add_get("/healthz", healthz)
    install_desk_page(
        app,
        DeskPageSettings.from_settings(settings),
        clock=clock,
    )
    install_desk_api(app)
    app.router.add_get("/readyz", readyz)
    metrics = install_metrics(app, token=settings.metrics_token)
    # The one middleware (see proxy/front_door.py): Host, Origin and content type before the
    # client key, so a page a browser was tricked into sending is refused whatever it
    # carries; errors in the route's front's envelope; ticket-backed answers timed.
    app.middlewares.append(
        front_door(
            OriginPolicy.from_settings(settings), ClientKeys(settings.api_keys), metrics=metrics
        )
    )
    app.router.add_post(WEBHOOK_PATH, github_webhook)
    return app


async def release_waiting_clients(app: web.Application) -> None:
    """Tell the clients still waiting to retry, and log what is left pending for next time."""
    desk = app.get(DESK)
    if desk is None:
        return
    released = desk.release_waiting()
    try:
        pending = desk.store.count_pending()
    except (sqlite3.Error, TicketingError) as exc:
        log.info("shutting down: told %d waiting client(s) to retry (%s)", released, exc)
        return
    log.info(
        "shutting down: told %d waiting client(s) to retry (they re-attach once a server is "
        "back); %d ticket(s) left pending, resumed at the next start",
        released,
        pending,
    )


async def app_bot_login(github: GitHubClient) -> str | None:
    """Return the App's ``<slug>[bot]`` login, or None (logged) if GitHub will not say now.

    Without it the desk still skips its own comments by their reply markers; the failure
    stays on ``github.last_failure``, so ``/readyz`` names the setting to fix.
    """
    try:
        return await github.app_bot_login()
    except GitHubError as exc:
        log.error("cannot learn the GitHub App's bot login: %s", exc)
        return None
