"""The aiohttp application: OpenAI routes in front of the ticket desk.

``create_app(settings)`` is the same in production and in tests. The desk (store, GitHub
client, poller) is owned by a ``cleanup_ctx`` so it starts and stops with the app.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta

from aiohttp import web

from ticketing.desk import Desk, DeskSettings, KeyringSource, Outcome, utc_now
from ticketing.github_client import GITHUB_API_URL, GitHubClient
from ticketing.replies import render_expired_completion
from ticketing.request import ChatRequest
from ticketing.store import TicketStore

from .errors import NotFound
from .keepalive import heartbeat_interval, send_after_wait
from .middleware import CLIENT, REQUEST_ID, client_keys, openai_errors, request_ids
from .settings import Settings
from .wire import (
    parse_chat_request,
    parse_json_body,
    prompt_tokens,
    render_completion,
    render_model,
    render_model_list,
)

log = logging.getLogger(__name__)

SETTINGS = web.AppKey("settings", Settings)
DESK = web.AppKey("desk", Desk)


def create_app(
    settings: Settings,
    *,
    clock: Callable[[], datetime] = utc_now,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    bot_login: str | None = None,
) -> web.Application:
    """Build the ticketproxy application for these settings."""
    app = web.Application(
        middlewares=[request_ids, openai_errors, client_keys(settings.api_keys)],
        client_max_size=settings.max_body_bytes,
    )
    app[SETTINGS] = settings

    async def desk_context(app: web.Application) -> AsyncIterator[None]:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = TicketStore(settings.store_path)
        github = GitHubClient(
            api_url=settings.github_api_url or GITHUB_API_URL,
            token=settings.github_token,
            repo=settings.github_repo,
            sleep=sleep,
        )
        desk = Desk(
            store=store,
            github=github,
            keyring=KeyringSource(settings.keyring_path).current,
            settings=DeskSettings(
                repo=settings.github_repo,
                poll_interval=settings.poll_interval,
                max_wait=timedelta(seconds=settings.max_wait),
                lock_issues=settings.lock_issues,
            ),
            bot_login=bot_login,
            clock=clock,
            sleep=sleep,
        )
        app[DESK] = desk
        await desk.start()
        try:
            yield
        finally:
            await desk.stop()
            await github.close()
            store.close()

    app.cleanup_ctx.append(desk_context)
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/models", list_models)
    app.router.add_get("/v1/models/{model}", get_model)
    app.router.add_get("/models/{model}", get_model)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_post("/chat/completions", chat_completions)
    app.router.add_get("/healthz", healthz)
    return app


async def healthz(request: web.Request) -> web.Response:
    """Say the process is up."""
    return web.json_response({"status": "ok"})


async def list_models(request: web.Request) -> web.Response:
    """List the model ids agents may ask for."""
    return web.json_response(render_model_list(request.app[SETTINGS].models))


async def get_model(request: web.Request) -> web.Response:
    """Describe one model id."""
    model = request.match_info["model"]
    if model not in request.app[SETTINGS].models:
        raise NotFound(
            f"The model `{model}` does not exist on this ticketproxy",
            param="model",
            code="model_not_found",
        )
    return web.json_response(render_model(model))


def _completion_bytes(request: ChatRequest, outcome: Outcome, *, created: int) -> bytes:
    ticket = outcome.ticket
    if outcome.answer is not None:
        content = outcome.answer.text
    else:
        content = render_expired_completion(
            deadline=ticket.deadline, ticket_url=ticket.issue_url or ""
        )
    completion = render_completion(
        # Derived from the ticket, so a retry that re-attaches sees the same id.
        completion_id=f"chatcmpl-{ticket.request_key[:20]}{ticket.id}",
        created=created,
        model=request.model,
        content=content,
        prompt_token_count=prompt_tokens(request),
    )
    return json.dumps(completion, ensure_ascii=False).encode()


async def chat_completions(request: web.Request) -> web.StreamResponse:
    """Open (or re-attach to) a ticket and answer with its verified answer."""
    settings = request.app[SETTINGS]
    desk = request.app[DESK]
    request_id = str(request[REQUEST_ID])
    # Everything that can be refused is refused here, before the 200 goes out.
    body = parse_json_body(await request.read())
    chat = parse_chat_request(body, client=str(request[CLIENT]), models=frozenset(settings.models))
    ticket = await desk.submit(chat, request_id=request_id)
    created = int(ticket.created_at.timestamp())
    headers = {"x-request-id": request_id, "x-ticketproxy-ticket": ticket.issue_url or ""}

    def render(outcome: Outcome) -> bytes:
        return _completion_bytes(chat, outcome, created=created)

    task: asyncio.Task[Outcome] = asyncio.create_task(desk.wait(ticket))
    interval = heartbeat_interval(request.headers, default=settings.heartbeat_interval)
    response, delivered = await send_after_wait(
        request,
        task,
        render=render,
        interval=interval,
        headers=headers,
    )
    if delivered:
        desk.delivered(task.result())
    return response
