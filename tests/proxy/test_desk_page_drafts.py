"""The desk API's read-only view of recently expired tickets, and its draft field."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from tests.helpers.desk_page import PROMPT, desk_url, get_json
from tests.helpers.stack import REPO, Stack
from ticketing.store.model import TicketState


async def expire_first_ticket(stack: Stack) -> asyncio.Task[object]:
    """Open a ticket, let nobody answer, move past its deadline; return the finished request."""
    pending = asyncio.create_task(
        stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    await stack.wait_for_issue(1)
    stack.clock.offset += timedelta(minutes=5)
    stack.desk.poke()
    await asyncio.wait_for(pending, 10)
    return pending


async def test_recently_expired_ticket_is_listed_as_expired(stack: Stack) -> None:
    """A ticket that expired within the hour stays on the list with state "expired"."""
    await expire_first_ticket(stack)
    status, data = await get_json(desk_url(stack, "api/tickets"))
    assert status == 200
    [ticket] = data["tickets"]
    assert (ticket["number"], ticket["ref"], ticket["state"]) == (1, f"{REPO}#1", "expired")


async def test_ticket_expired_over_an_hour_ago_leaves_the_list(stack: Stack) -> None:
    """An hour after its expiry a ticket is no longer listed."""
    await expire_first_ticket(stack)
    stack.clock.offset += timedelta(hours=1, seconds=1)
    _, data = await get_json(desk_url(stack, "api/tickets"))
    assert data["tickets"] == []


async def test_expired_ticket_detail_is_read_only(stack: Stack) -> None:
    """The expired ticket opens with its body, marked read-only, with nothing to review."""
    await expire_first_ticket(stack)
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    assert ticket.state is TicketState.EXPIRED
    status, detail = await get_json(desk_url(stack, "api/tickets/1"))
    assert status == 200
    assert detail["state"] == "expired"
    assert detail["read_only"] is True
    assert detail["candidate"] is None
    assert "Write the word hello" in detail["body"]


async def test_pending_ticket_detail_is_not_read_only_and_has_no_draft(stack: Stack) -> None:
    """Without drafting, a waiting ticket can be answered and shows no draft."""
    pending = asyncio.create_task(
        stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    await stack.wait_for_issue(1)
    _, detail = await get_json(desk_url(stack, "api/tickets/1"))
    pending.cancel()
    assert (detail["read_only"], detail["draft"]) == (False, None)
