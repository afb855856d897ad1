"""Stored responses of the Responses API: continue, retrieve, delete, list their input items.

A response created with ``store: true`` (the default, as OpenAI's) is kept in the ticket
store, mapped to its ticket and to the client key that made it: another key's request for
it is told it does not exist, as OpenAI says of an unknown id. ``previous_response_id``
continues a response's run on the same issue, as its next step, with its input and output
prepended (:class:`ResponsesMemory`). Deleting a response forgets what it echoes and its
input items; its ticket, its issue and the audit trail stay. Responses are answered in the
foreground, so ``cancel`` is refused as OpenAI refuses it for a foreground response.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import web

from ticketing.desk import Desk, Outcome
from ticketing.store.model import StoredResponse, Ticket

from .errors import InvalidRequest, NotFound
from .fronts import Parsed, answer_id, released
from .handlers import DESK
from .middleware import CLIENT
from .routing import RoutedModel
from .wire.invalid import require
from .wire.responses_api.objects import (
    ResponseEcho,
    render_completed,
    render_output,
    render_response,
)
from .wire.responses_api.stored import (
    echo_from_json,
    echo_to_json,
    input_items,
    issued_calls,
    item_reference_id,
    page_items,
    response_id_of_item,
)

# The front's pure parse, given the previous response's items and the calls it issued.
ContextParse = Callable[
    [dict[str, Any], str, RoutedModel, Sequence[Any], frozenset[str]], Parsed[ResponseEcho]
]


@dataclass(frozen=True)
class _Pending:
    """What a request's response keeps once its ticket exists (left on the request)."""

    context: list[Any]
    input: Any
    previous_id: str | None
    store: bool


_PENDING = web.RequestKey("pending_response", _Pending)


def response_id_for(ticket: Ticket) -> str:
    """Return the id of the response a ticket answers (a retry re-attaching sees it again)."""
    return answer_id(ticket, "resp_")


def own_response(request: web.Request, response_id: str, *, param: str | None) -> StoredResponse:
    """Return the client's stored response, or raise the 404 OpenAI answers for it."""
    record = request.app[DESK].store.response_for(response_id)
    if record is None or record.client != request[CLIENT]:
        # Another client key's response is as unknown as one never made: no oracle.
        raise NotFound(f"Response with id '{response_id}' not found.", param=param)
    if not record.stored:
        raise NotFound(
            f"Response with id '{response_id}' was created with store: false, so it was not "
            "stored and cannot be retrieved or continued: send the whole conversation in "
            "input, or leave store at its default (true).",
            param=param,
            code="response_not_stored",
        )
    return record


def _ticket(desk: Desk, record: StoredResponse) -> Ticket:
    ticket = desk.store.get_ticket(record.ticket_id)
    assert ticket is not None, "a stored response's ticket is never deleted"
    return ticket


def _output(desk: Desk, record: StoredResponse, ticket: Ticket) -> list[dict[str, Any]]:
    """Return a settled response's output items: the released answer, or the expiry text."""
    release = released(Outcome(ticket, desk.store.answer_for(ticket.id)))
    return render_output(record.response_id, release.content, release.tool_calls)


def _referenced_item(request: web.Request, item_id: str, param: str) -> dict[str, Any]:
    """Return the stored item an ``item_reference`` names, from one of the client's responses.

    The Vercel AI SDK, with ``store`` on (its default), sends the text of an earlier answer
    back as ``{"type": "item_reference", "id": "msg_…"}`` rather than as a message.
    """
    missing = NotFound(f"Item with id '{item_id}' not found.", param=param)
    response_id = response_id_of_item(item_id)
    if response_id is None:
        raise missing
    desk = request.app[DESK]
    record = desk.store.response_for(response_id)
    if record is None or record.client != request[CLIENT] or not record.stored:
        # Another key's item is as unknown as one never made: no oracle.
        raise missing
    ticket = _ticket(desk, record)
    output = [] if ticket.state.pending else _output(desk, record, ticket)
    for candidate in [*json.loads(record.items), *output]:
        if candidate.get("id") == item_id:
            return dict(candidate)
    raise missing


def _resolve_references(request: web.Request, body: dict[str, Any]) -> dict[str, Any]:
    """Return ``body`` with each ``item_reference`` in ``input`` replaced by the item it names."""
    raw = body.get("input")
    if not isinstance(raw, list):
        return body
    resolved: list[Any] = []
    for index, item in enumerate(raw):
        param = f"input[{index}]"
        item_id = item_reference_id(item, param)
        resolved.append(item if item_id is None else _referenced_item(request, item_id, param))
    return {**body, "input": resolved}


class ResponsesMemory:
    """The Responses front's memory: ``previous_response_id`` in, the stored response out."""

    def __init__(self, parse: ContextParse) -> None:
        self._parse = parse

    def parse(
        self, request: web.Request, body: dict[str, Any], routed: RoutedModel
    ) -> Parsed[ResponseEcho]:
        """Parse a body, with the input and output of its previous response prepended."""
        body = _resolve_references(request, body)
        previous_id = body.get("previous_response_id")
        context: list[Any] = []
        issued: frozenset[str] = frozenset()
        continues = None
        if previous_id is not None:
            require(
                isinstance(previous_id, str) and previous_id != "",
                "previous_response_id must be a response id",
                "previous_response_id",
                "invalid_type",
            )
            desk = request.app[DESK]
            record = own_response(request, previous_id, param="previous_response_id")
            ticket = _ticket(desk, record)
            if ticket.state.pending:
                raise InvalidRequest(
                    f"Previous response with id '{previous_id}' is still in_progress: wait "
                    "for it to complete (people are answering it) before continuing it.",
                    param="previous_response_id",
                    code="previous_response_in_progress",
                )
            output = _output(desk, record, ticket)
            context = [*json.loads(record.items), *output]
            issued = issued_calls(output)
            continues = ticket.id
        parsed = self._parse(body, request[CLIENT], routed, context, issued)
        store = body.get("store")
        request[_PENDING] = _Pending(
            context=context,
            input=body["input"],
            previous_id=previous_id,
            store=store is not False,
        )
        return replace(parsed, continues=continues)

    def keep(self, request: web.Request, ticket: Ticket, parsed: Parsed[ResponseEcho]) -> None:
        """Store the response this ticket answers (or, with store: false, only its id)."""
        pending = request.pop(_PENDING)
        response_id = response_id_for(ticket)
        items = [*pending.context, *input_items(pending.input, response_id)]
        request.app[DESK].store.keep_response(
            StoredResponse(
                response_id=response_id,
                ticket_id=ticket.id,
                client=request[CLIENT],
                stored=pending.store,
                previous_id=pending.previous_id,
                echo=echo_to_json(parsed.terms),
                items=json.dumps(items, ensure_ascii=False),
                created_at=ticket.created_at,
            )
        )


def _json(body: dict[str, Any]) -> web.Response:
    return web.json_response(body, dumps=lambda value: json.dumps(value, ensure_ascii=False))


async def retrieve_response(request: web.Request) -> web.Response:
    """Return a stored response: ``in_progress`` while people think, then ``completed``."""
    desk = request.app[DESK]
    record = own_response(request, request.match_info["response_id"], param=None)
    ticket = _ticket(desk, record)
    echo = echo_from_json(record.echo)
    created = int(ticket.created_at.timestamp())
    if ticket.state.pending:
        body = render_response(
            response_id=record.response_id,
            created=created,
            echo=echo,
            status="in_progress",
            output=[],
        )
        return _json(body)
    release = released(Outcome(ticket, desk.store.answer_for(ticket.id)))
    body = render_completed(
        response_id=record.response_id,
        created=created,
        echo=echo,
        content=release.content,
        tool_calls=release.tool_calls,
    )
    return _json(body)


async def delete_response(request: web.Request) -> web.Response:
    """Forget a stored response; its ticket, issue and audit trail stay."""
    desk = request.app[DESK]
    record = own_response(request, request.match_info["response_id"], param=None)
    desk.store.delete_response(record.response_id, now=desk.clock())
    return _json({"id": record.response_id, "object": "response.deleted", "deleted": True})


async def list_input_items(request: web.Request) -> web.Response:
    """List a stored response's input items, a page at a time."""
    record = own_response(request, request.match_info["response_id"], param=None)
    return _json(page_items(json.loads(record.items), request.query))


async def cancel_response(request: web.Request) -> web.Response:
    """Refuse to cancel: only background responses can be, and none is made here."""
    record = own_response(request, request.match_info["response_id"], param=None)
    raise InvalidRequest(
        f"Response with id '{record.response_id}' cannot be cancelled: only responses created "
        "with background: true can be, and this ticketproxy answers in the foreground. Its "
        "ticket waits until a person answers it or its deadline passes.",
        param=None,
        code="not_cancellable",
    )


def install_stored_responses(app: web.Application, prefix: str) -> None:
    """Serve the stored responses under ``prefix`` (the Responses front's path)."""
    one = prefix + "/{response_id}"
    app.router.add_get(one, retrieve_response)
    app.router.add_delete(one, delete_response)
    app.router.add_get(one + "/input_items", list_input_items)
    app.router.add_post(one + "/cancel", cancel_response)
