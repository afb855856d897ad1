"""Tests for ticketing.github.throttle: content creation paced below GitHub's secondary limits."""

from __future__ import annotations

import pytest

from ticketing.errors import GitHubUnavailable
from ticketing.github.throttle import SlidingWindow, WriteThrottle


class FakeTime:
    """A monotonic clock that moves only when the recorded sleep is awaited (if ``passes``)."""

    def __init__(self, *, passes: bool = True) -> None:
        self.now = 1000.0
        self.passes = passes
        self.sleeps: list[float] = []
        self.sent: list[float] = []

    def clock(self) -> float:
        """Return the current time."""
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Record the wait and let that much time pass."""
        self.sleeps.append(seconds)
        if self.passes:
            self.now += seconds


def throttle(time: FakeTime, **options: float) -> WriteThrottle:
    """Return a throttle on the fake clock, at GitHub's own 80/min and 500/h unless told."""
    options = {"per_minute": 80, "per_hour": 500, **options}
    return WriteThrottle(clock=time.clock, sleep=time.sleep, **options)


def most_in_any_window(moments: list[float], seconds: float) -> int:
    """Return the largest number of moments in any window of ``seconds``."""
    return max(sum(1 for other in moments if start <= other < start + seconds) for start in moments)


async def test_burst_of_eighty_writes_goes_out_without_waiting() -> None:
    """80/min allows a burst of 80 at once."""
    time = FakeTime()
    writes = throttle(time)
    for _ in range(80):
        await writes.acquire()
    assert time.sleeps == []


async def test_the_81st_write_waits_until_the_first_leaves_the_minute() -> None:
    """A token bucket would let it through at once; GitHub's window would then be exceeded."""
    time = FakeTime()
    writes = throttle(time, max_wait=120)
    for _ in range(81):
        await writes.acquire()
    assert time.sleeps == pytest.approx([60.05])


async def test_no_minute_and_no_hour_ever_exceeds_github_limits() -> None:
    """Over 1,200 writes, every 60 s window holds at most 80 and every hour at most 500."""
    time = FakeTime()
    writes = throttle(time, max_wait=10_000)
    for _ in range(1200):
        await writes.acquire()
        time.sent.append(time.now)
    assert most_in_any_window(time.sent, 60) <= 80
    assert most_in_any_window(time.sent, 3600) <= 500


async def test_wait_beyond_max_wait_raises_github_unavailable_with_retry_after() -> None:
    """When the next slot is further off than max_wait the caller is told when to retry."""
    time = FakeTime(passes=False)
    writes = throttle(time, max_wait=30)
    for _ in range(80):
        await writes.acquire()
    with pytest.raises(GitHubUnavailable) as caught:
        await writes.acquire()
    assert caught.value.retry_after == pytest.approx(60.05)
    assert "80/min" in str(caught.value)


async def test_refused_write_reserves_nothing() -> None:
    """A refusal takes no slot: once time passes the next write goes straight out."""
    time = FakeTime(passes=False)
    writes = throttle(time, max_wait=30)
    for _ in range(80):
        await writes.acquire()
    for _ in range(5):
        with pytest.raises(GitHubUnavailable):
            await writes.acquire()
    time.now += 61
    await writes.acquire()
    assert time.sleeps == []


def test_concurrent_reservations_get_distinct_slots() -> None:
    """Reserved future slots count, so two writers never share one."""
    window = SlidingWindow(limit=2, seconds=10)
    first = window.earliest(0)
    window.record(first)
    second = window.earliest(0)
    window.record(second)
    third = window.earliest(0)
    window.record(third)
    assert (first, second) == (0, 0)
    assert third == pytest.approx(10.05)
    assert window.earliest(0) == pytest.approx(10.05)


async def test_courtesy_writes_use_only_the_spare_half_and_never_delay_a_ticket() -> None:
    """Reactions take a slot only while half the minute is free; issues then still fit."""
    time = FakeTime()
    writes = throttle(time, per_minute=10, per_hour=500)
    taken = [await writes.try_acquire(share=0.5) for _ in range(8)]
    assert taken == [True] * 5 + [False] * 3
    # The other half is left for what agents wait on: five issues go out at once.
    for _ in range(5):
        await writes.acquire()
    assert time.sleeps == []
    assert await writes.try_acquire(share=0.5) is False
    time.now += 61
    assert await writes.try_acquire(share=0.5) is True
