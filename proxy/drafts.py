"""The drafter: ask an upstream OpenAI-compatible model for a suggested answer per ticket.

When ``TICKETPROXY_DRAFT_URL`` is set, each new ticket (one with an issue, that no retry or
replica has claimed a draft for) gets one background request to
``{DRAFT_URL}/chat/completions``: the ticket's request as people see it (secrets redacted),
non-streaming, with ``Authorization: Bearer <DRAFT_KEY>``. The answer is posted on the
issue as a marked suggestion (:mod:`ticketing.render.drafts`); it is never released to the agent
unless an editor signs it. Any failure (refused connection, 5xx, bad JSON, timeout) is
logged without the key and recorded as ``failed``; the ticket waits for people as before.

The client is never delayed: drafting runs in tasks the app tracks, cancelled and awaited
on cleanup.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from ticketing.desk import Desk
from ticketing.render.drafts import DraftCall, draft_answer_text
from ticketing.render.redact import redact_request
from ticketing.request import ChatRequest, Message
from ticketing.store.model import DraftState, Ticket

from .agent_dispatch import start_agent
from .errors import DraftFailed
from .settings import Settings

log = logging.getLogger(__name__)

_DETAIL_LIMIT = 300
# How many drafts are asked for at the same time.
DRAFTS_AT_ONCE = 4
# Seconds past the drafting timeout after which a claim counts as left by a stopped process.
_CLAIM_MARGIN = 60.0


@dataclass(frozen=True)
class Completion:
    """What the drafting model answered: its content and tool calls."""

    content: str | None
    tool_calls: tuple[DraftCall, ...]


def draft_request_body(request: ChatRequest, *, model: str) -> dict[str, Any]:
    """Rebuild a ticket's request as a non-streaming OpenAI chat completion body."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [_message(message) for message in request.messages],
        "stream": False,
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": dict(tool.parameters),
                    **({"strict": True} if tool.strict else {}),
                },
            }
            for tool in request.tools
        ]
        choice = request.tool_choice
        body["tool_choice"] = (
            {"type": "function", "function": {"name": choice.removeprefix("function:")}}
            if choice.startswith("function:")
            else choice
        )
        # The legacy `functions` field takes one call per answer; so does this draft.
        body["parallel_tool_calls"] = request.parallel_tool_calls and not request.legacy_functions
    fmt = request.response_format
    if fmt is not None and fmt.type == "json_schema":
        schema: dict[str, Any] = {"name": fmt.name or "answer", "strict": fmt.strict}
        if fmt.schema is not None:
            schema["schema"] = dict(fmt.schema)
        body["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif fmt is not None:
        body["response_format"] = {"type": fmt.type}
    if request.stop:
        body["stop"] = list(request.stop)
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    return body


def _message(message: Message) -> dict[str, Any]:
    shown: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.name:
        shown["name"] = message.name
    if message.tool_calls:
        shown["tool_calls"] = [
            {
                "id": call.id or f"call_{index}",
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for index, call in enumerate(message.tool_calls)
        ]
        if not message.content:
            shown["content"] = None
    if message.tool_call_id is not None:
        shown["tool_call_id"] = message.tool_call_id
    return shown


def read_completion(data: Any) -> Completion:
    """Read the first choice of a chat completion, or raise DraftFailed saying what is wrong."""
    try:
        message = data["choices"][0]["message"]
        content = message.get("content")
        calls = list(message.get("tool_calls") or [])
        if message.get("function_call"):
            calls.append({"function": message["function_call"]})
        tool_calls = tuple(
            DraftCall(
                name=str(call["function"]["name"]),
                arguments=_arguments(call["function"].get("arguments", "{}")),
            )
            for call in calls
        )
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise DraftFailed(
            f"the answer is not a chat completion ({type(exc).__name__} reading it)"
        ) from None
    if content is not None and not isinstance(content, str):
        raise DraftFailed("the answer's message content is not a string")
    return Completion(content=content, tool_calls=tool_calls)


def _arguments(value: Any) -> str:
    # Some servers send the arguments as a JSON object rather than a string.
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class Drafter:
    """Ask the drafting model once per ticket, in the background, and post what it says."""

    def __init__(
        self,
        *,
        desk: Desk,
        session: aiohttp.ClientSession,
        url: str,
        key: str | None,
        model: str | None,
        timeout: float,
    ) -> None:
        self._desk = desk
        self._session = session
        self._url = url.rstrip("/")
        self._key = key
        self._model = model
        self._timeout = timeout
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(DRAFTS_AT_ONCE)

    def start(self, ticket: Ticket, request: ChatRequest | None) -> None:
        """Draft an answer for this ticket in the background, unless one was claimed.

        Without ``request`` the stored one is read when the draft's turn comes.
        """
        if ticket.issue_number is None or not ticket.state.pending:
            return
        task = asyncio.create_task(self._draft(ticket, request), name="ticketproxy-draft")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait until every draft under way has been posted or has failed."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def close(self) -> None:
        """Cancel the drafts under way and wait for them to end."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def resume(self) -> int:
        """Draft for waiting tickets that have none: claims left by a stopped process included.

        Return how many drafts were started.
        """
        started = 0
        for ticket in self._desk.store.pending_tickets():
            if ticket.issue_number is None:
                continue
            draft = self._desk.store.draft_for(ticket.id)
            if draft is not None and draft.state is not DraftState.CLAIMED:
                continue
            # The request is read when the draft's turn comes, not all at once here.
            self.start(ticket, None)
            started += 1
        return started

    async def _draft(self, ticket: Ticket, given: ChatRequest | None) -> None:
        # A few drafts at a time: after a restart with many waiting tickets, neither the
        # model nor this process is flooded, and no draft times out queueing for a slot.
        async with self._slots:
            await self._draft_now(ticket, given)

    async def _draft_now(self, ticket: Ticket, given: ChatRequest | None) -> None:
        desk = self._desk
        stored = None if given is not None else desk.store.request_for(ticket.id)
        request = (
            given
            if given is not None
            else (None if stored is None else ChatRequest.from_json(stored))
        )
        if request is None:
            return
        model = self._model or request.model
        claimed = False
        try:
            # A claim older than the longest draft (plus a margin) was left by a process
            # that stopped mid-draft; a younger one is another replica's, still under way.
            stale = timedelta(seconds=self._timeout + _CLAIM_MARGIN)
            if not desk.claim_draft(ticket, stale_after=stale):
                return
            claimed = True
            try:
                completion = await self._ask(request, model=model, request_id=ticket.request_id)
            except DraftFailed as exc:
                detail = str(exc)[:_DETAIL_LIMIT]
                log.warning(
                    "request_id=%s ticket %d: no draft from %s (model %s): %s",
                    ticket.request_id,
                    ticket.id,
                    shown_url(self._url),
                    model,
                    detail,
                )
                desk.fail_draft(ticket, detail, model=model)
                return
            text = draft_answer_text(completion.content, completion.tool_calls)
            claimed = False  # posted (or recorded as failed) from here on
            desk.post_draft(ticket, text, model=model)
        except asyncio.CancelledError:
            if claimed:
                # Stopped mid-draft: give the claim back, so a restart drafts it at once
                # rather than waiting for the claim to go stale.
                desk.store.release_draft(ticket.id)
            raise
        except Exception:
            # A bug here must cost the draft only; the ticket waits for people as before.
            log.exception("request_id=%s ticket %d: drafting failed", ticket.request_id, ticket.id)

    async def _ask(self, request: ChatRequest, *, model: str, request_id: str) -> Completion:
        # The model sees what the ticket shows people: secrets in the prompt are redacted,
        # so a draft cannot carry one onto the issue.
        shown, _ = redact_request(request)
        body = draft_request_body(shown, model=model)
        headers = {"Content-Type": "application/json", "X-Request-Id": request_id}
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key}"
        try:
            async with self._session.post(
                f"{self._url}/chat/completions",
                data=json.dumps(body, ensure_ascii=False).encode(),
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=self._timeout),
            ) as response:
                raw = await response.read()
                if response.status != 200:
                    raise DraftFailed(f"the drafting model answered HTTP {response.status}")
        except (aiohttp.ClientError, TimeoutError) as exc:
            # The exception's type only: its text can quote the request, headers included.
            raise DraftFailed(
                f"the drafting model is unreachable or too slow ({type(exc).__name__})"
            ) from None
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            raise DraftFailed("the drafting model's answer is not JSON") from None
        return read_completion(data)


def shown_url(url: str) -> str:
    """Return a URL fit for a log line: without any user or password it carries."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}{parts.path}"


DRAFTER = web.AppKey("drafter", Drafter)


def drafter_context(
    settings: Settings, desk_key: web.AppKey[Desk]
) -> Callable[[web.Application], AsyncIterator[None]]:
    """Return a cleanup_ctx that runs a Drafter when drafting is on (after the desk)."""

    async def context(app: web.Application) -> AsyncIterator[None]:
        if settings.draft_url is None:
            yield
            return
        async with aiohttp.ClientSession() as session:
            drafter = Drafter(
                desk=app[desk_key],
                session=session,
                url=settings.draft_url,
                key=settings.draft_key,
                model=settings.draft_model,
                timeout=settings.draft_timeout,
            )
            app[DRAFTER] = drafter
            resumed = drafter.resume()
            if resumed:
                log.info("drafting for %d waiting ticket(s) left without a draft", resumed)
            try:
                yield
            finally:
                await drafter.close()

    return context


def start_draft(app: web.Application, ticket: Ticket, request: ChatRequest) -> None:
    """Start drafting an answer for a new ticket when drafting is on (the handlers' hook).

    A ticket routed to an editor's personal agent is that agent's to draft, not the model's.
    """
    if start_agent(app, ticket, request):
        return
    drafter = app.get(DRAFTER)
    if drafter is not None:
        drafter.start(ticket, request)
