"""Tests for ticketing.github.turns: a short hand-over to the worker, openings last."""

from __future__ import annotations

import asyncio

from ticketing.github.turns import Turn, Turns


async def run_in_turn(turns: Turns, name: str, turn: Turn, ran: list[str]) -> None:
    """Take a turn, note ``name`` as having run, and give the turn back."""
    await turns.take(turn)
    try:
        ran.append(name)
        await asyncio.sleep(0)
    finally:
        turns.give_back()


async def test_a_burst_of_openings_lets_the_first_tickets_lock_go_first() -> None:
    """A lock asked after a thousand queued openings runs before all of them."""
    turns = Turns(depth=1)
    ran: list[str] = []
    await turns.take()  # the thread is busy
    openings = [
        asyncio.create_task(run_in_turn(turns, f"open {i}", Turn.OPENING, ran)) for i in range(1000)
    ]
    await asyncio.sleep(0)
    lock = asyncio.create_task(run_in_turn(turns, "lock 0", Turn.SOON, ran))
    await asyncio.sleep(0)
    turns.give_back()
    await asyncio.gather(lock, *openings)
    assert ran[0] == "lock 0"
    assert ran[1:] == [f"open {i}" for i in range(1000)]


async def test_no_more_calls_than_the_depth_are_handed_over_at_once() -> None:
    """With depth 2, a third caller waits until one of the first two gives its turn back."""
    turns = Turns(depth=2)
    await turns.take()
    await turns.take()
    third = asyncio.create_task(turns.take())
    await asyncio.sleep(0)
    assert not third.done()
    assert turns.waiting == 1
    turns.give_back()
    await asyncio.wait_for(third, 1)
    assert turns.waiting == 0


async def test_a_caller_that_left_while_waiting_is_skipped() -> None:
    """A cancelled waiter does not take a turn: the next one in line gets it."""
    turns = Turns(depth=1)
    await turns.take()
    gone = asyncio.create_task(turns.take())
    staying = asyncio.create_task(turns.take())
    await asyncio.sleep(0)
    gone.cancel()
    await asyncio.sleep(0)
    turns.give_back()
    await asyncio.wait_for(staying, 1)
    assert gone.cancelled()


async def test_a_caller_cancelled_just_as_its_turn_came_passes_it_on() -> None:
    """The turn handed to a caller cancelled before it resumed goes to the next, not lost."""
    turns = Turns(depth=1)
    await turns.take()
    unlucky = asyncio.create_task(turns.take())
    next_one = asyncio.create_task(turns.take())
    await asyncio.sleep(0)
    turns.give_back()  # hands the turn to `unlucky`, which has not resumed yet
    unlucky.cancel()
    await asyncio.wait_for(next_one, 1)
    assert unlucky.cancelled()
    turns.give_back()
    # Every turn is back: a new caller takes one at once.
    await asyncio.wait_for(turns.take(), 1)


async def test_ten_thousand_waiting_callers_all_get_their_turn_in_order() -> None:
    """Many callers of one turn run in the order they came, each once."""
    turns = Turns(depth=2)
    ran: list[str] = []
    callers = [
        asyncio.create_task(run_in_turn(turns, str(i), Turn.OPENING, ran)) for i in range(10_000)
    ]
    await asyncio.gather(*callers)
    assert ran == [str(i) for i in range(10_000)]
    assert turns.waiting == 0
