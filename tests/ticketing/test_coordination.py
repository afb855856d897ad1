"""Per-key locks within one process: exclusive while held, forgotten once free."""

from __future__ import annotations

import asyncio

import pytest

from ticketing.coordination import KeyLocks


async def test_key_lock_is_exclusive_per_key_and_forgotten_once_nobody_holds_it() -> None:
    """Two holders of one key take turns, other keys are free, and no lock is kept after."""
    locks = KeyLocks()
    order: list[str] = []

    async def hold(key: str, name: str, seconds: float) -> None:
        async with locks.hold(key):
            order.append(f"{name} in")
            await asyncio.sleep(seconds)
            order.append(f"{name} out")

    first = asyncio.create_task(hold("k", "a", 0.05))
    await asyncio.sleep(0)
    second = asyncio.create_task(hold("k", "b", 0))
    other = asyncio.create_task(hold("other", "c", 0))
    await asyncio.gather(first, second, other)
    assert order.index("a out") < order.index("b in")
    assert order.index("c out") < order.index("a out")
    assert len(locks) == 0


async def test_key_lock_is_released_and_forgotten_when_the_block_raises() -> None:
    """A failure inside the block frees the key for the next holder."""
    locks = KeyLocks()
    with pytest.raises(RuntimeError):
        async with locks.hold("k"):
            raise RuntimeError("boom")
    async with locks.hold("k"):
        assert len(locks) == 1
    assert len(locks) == 0
