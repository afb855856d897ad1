"""The aiohttp application: OpenAI routes in front of the ticket desk.

``create_app(settings)`` is the same in production and in tests. The desk (store, GitHub
client, poller) is owned by a ``cleanup_ctx`` so it starts and stops with the app.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import datetime, timedelta

from aiohttp import web

from auth.policy import ReviewPolicy
from ticketing.coordination import Coordinator, LocalCoordinator
from ticketing.desk import Desk, DeskSettings, KeyringSource, utc_now
from ticketing.errors import GitHubError
from ticketing.github.app_auth import GitHubApp
from ticketing.github.client import GITHUB_API_URL, GitHubClient
from ticketing.github.throttle import WriteThrottle
from ticketing.store.sqlite import TicketStore

from .desk_page import DeskPageSettings, install_desk_page
from .drafts import drafter_context
from .handlers import (
    DESK,
    OPENING,
    ROUTES,
    SETTINGS,
    Openings,
    cancel_openings,
    chat_completions,
    get_model,
    legacy_completions,
    list_models,
)
from .health import healthz, readyz
from .metrics import install_metrics
from .middleware import client_keys, openai_errors, request_ids
from .routing import RouteTable, load_routes
from .settings import Settings
from .upstream import upstream_session
from .webhook import WEBHOOK_PATH, github_webhook

log = logging.getLogger(__name__)

__all__ = ["DESK", "ROUTES", "SETTINGS", "create_app"]


def build_coordinator(settings: Settings) -> Coordinator:
    """Return how this process coordinates with other replicas: Redis, or alone."""
    if settings.redis_url is None:
        return LocalCoordinator()
    # Imported here so that a single process never loads the Redis client.
    from ticketing.redis_coordination import RedisCoordinator

    # Replicas share the SQLite store in data_dir (one host, a shared volume); Redis holds
    # only what they must agree on at once (see ticketing.redis_coordination).
    return RedisCoordinator.from_url(settings.redis_url)


def create_app(
    settings: Settings,
    *,
    clock: Callable[[], datetime] = utc_now,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    bot_login: str | None = None,
    routes: RouteTable | None = None,
    environ: Mapping[str, str] | None = None,
) -> web.Application:
    """Build the ticketproxy application for these settings.

    ``routes`` defaults to the routes file in ``settings.routes_path`` (its upstream keys
    read from ``environ`` now, at start-up), or to every configured model going to people.
    """
    app = web.Application(
        middlewares=[request_ids, openai_errors, client_keys(settings.api_keys)],
        client_max_size=settings.max_body_bytes,
    )
    app[SETTINGS] = settings
    if routes is None:
        routes = (
            RouteTable.humans_only(settings.models)
            if settings.routes_path is None
            else load_routes(settings.routes_path, environ or {})
        )
    app[ROUTES] = routes
    # Loaded now, so a bad policy file stops the start with its name and the fix.
    policy = ReviewPolicy.load_or_default(settings.review_policy_path)

    async def desk_context(app: web.Application) -> AsyncIterator[None]:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = TicketStore(settings.store_path)
        coordinator = build_coordinator(settings)
        github = GitHubClient(
            api_url=settings.github_api_url or GITHUB_API_URL,
            token=settings.github_token,
            repo=settings.github_repo,
            app=github_app(settings),
            throttle=WriteThrottle(
                per_minute=settings.writes_per_minute,
                per_hour=settings.writes_per_hour,
                sleep=sleep,
            ),
            sleep=sleep,
            clock=clock,
        )
        desk_bot_login = bot_login
        if desk_bot_login is None and github.app is not None:
            desk_bot_login = await app_bot_login(github)
        desk = Desk(
            store=store,
            github=github,
            keyring=KeyringSource(settings.keyring_path).current,
            settings=DeskSettings(
                repo=settings.github_repo,
                poll_interval=settings.poll_interval,
                max_wait=timedelta(seconds=settings.max_wait),
                lock_issues=settings.lock_issues,
                policy=policy,
                answer_page=settings.answer_page_url,
            ),
            bot_login=desk_bot_login,
            clock=clock,
            sleep=sleep,
            coordinator=coordinator,
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
    app.cleanup_ctx.append(desk_context)
    # After the desk, so it stops first: no draft is posted to a desk that has stopped.
    app.cleanup_ctx.append(drafter_context(settings, DESK))
    app.cleanup_ctx.append(upstream_session)
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/models", list_models)
    app.router.add_get("/v1/models/{model}", get_model)
    app.router.add_get("/models/{model}", get_model)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_post("/chat/completions", chat_completions)
    app.router.add_post("/v1/completions", legacy_completions)
    app.router.add_post("/completions", legacy_completions)
    app.router.add_get("/healthz", healthz)
    install_desk_page(
        app,
        DeskPageSettings.from_env(environ or {}, github_api_url=settings.github_api_url),
        clock=clock,
    )
    app.router.add_get("/readyz", readyz)
    install_metrics(app, token=settings.metrics_token)
    app.router.add_post(WEBHOOK_PATH, github_webhook)
    return app


def github_app(settings: Settings) -> GitHubApp | None:
    """Return the GitHub App installation the settings name, or None (token or sandbox)."""
    if (
        settings.github_app_id is None
        or settings.github_app_private_key is None
        or settings.github_app_installation_id is None
    ):
        return None
    return GitHubApp(
        app_id=settings.github_app_id,
        installation_id=settings.github_app_installation_id,
        private_key=settings.github_app_private_key,
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
