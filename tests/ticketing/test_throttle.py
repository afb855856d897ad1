"""Tests for ticketing.throttle: content creation paced below GitHub's secondary limits."""

from __future__ import annotations

import pytest

from ticketing.errors import GitHubUnavailable
from ticketing.throttle import TokenBucket, WriteThrottle


class FakeTime:
    """A monotonic clock that moves only when the recorded sleep is awaited (if ``passes``)."""

    def __init__(self, *, passes: bool = True) -> None:
        self.now = 1000.0
        self.passes = passes
        self.sleeps: list[float] = []

    def clock(self) -> float:
        """Return the current time."""
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Record the wait and let that much time pass."""
        self.sleeps.append(seconds)
        if self.passes:
            self.now += seconds


def throttle(time: FakeTime, **options: float) -> WriteThrottle:
    """Return a throttle on the fake clock."""
    return WriteThrottle(clock=time.clock, sleep=time.sleep, **options)


async def test_burst_of_eighty_writes_goes_out_without_waiting() -> None:
    """80/min allows a burst of 80 at once."""
    time = FakeTime()
    writes = throttle(time)
    for _ in range(80):
        await writes.acquire()
    assert time.sleeps == []
    assert time.now == 1000.0


async def test_writes_after_the_burst_are_paced_at_the_per_minute_rate() -> None:
    """Past the burst each write waits 60/80 s, so no minute holds more than 80 new ones."""
    time = FakeTime()
    writes = throttle(time)
    for _ in range(90):
        await writes.acquire()
    assert time.sleeps == pytest.approx([0.75] * 10)
    assert time.now == pytest.approx(1007.5)


async def test_idle_time_refills_the_bucket_up_to_its_capacity() -> None:
    """After a quiet hour the next burst is 80 again, not more."""
    time = FakeTime()
    writes = throttle(time)
    for _ in range(80):
        await writes.acquire()
    time.now += 3600
    for _ in range(80):
        await writes.acquire()
    assert time.sleeps == []
    await writes.acquire()
    assert time.sleeps == pytest.approx([0.75])


async def test_hourly_limit_paces_when_the_minute_limit_would_not() -> None:
    """With 500/h, the 501st write waits 3600/500 s even though the minute bucket is full."""
    time = FakeTime()
    writes = throttle(time, per_minute=10_000, max_wait=60)
    for _ in range(500):
        await writes.acquire()
    assert time.sleeps == []
    await writes.acquire()
    assert time.sleeps == pytest.approx([7.2])


async def test_wait_beyond_max_wait_raises_github_unavailable_with_retry_after() -> None:
    """When the next slot is further off than max_wait the caller is told when to retry."""
    # The clock stands still, so debt piles up: 40 writes on credit reach exactly 30 s.
    time = FakeTime(passes=False)
    writes = throttle(time)
    for _ in range(120):
        await writes.acquire()
    assert time.sleeps == pytest.approx([0.75 * n for n in range(1, 41)])
    with pytest.raises(GitHubUnavailable) as caught:
        await writes.acquire()
    assert caught.value.retry_after == pytest.approx(30.75)
    assert "80/min" in str(caught.value)
    assert len(time.sleeps) == 40


async def test_refused_write_gives_its_token_back() -> None:
    """A refusal refunds both buckets: repeated refusals do not push the wait further out."""
    time = FakeTime(passes=False)
    writes = throttle(time)
    for _ in range(120):
        await writes.acquire()
    for _ in range(5):
        with pytest.raises(GitHubUnavailable) as caught:
            await writes.acquire()
        assert caught.value.retry_after == pytest.approx(30.75)
    # 0.75 s later exactly one more token is due, so one write fits within max_wait again.
    time.now += 0.75
    await writes.acquire()
    with pytest.raises(GitHubUnavailable):
        await writes.acquire()


def test_back_to_back_reservations_are_given_increasing_waits() -> None:
    """Each reservation is taken before sleeping, so two writers never share one slot."""
    time = FakeTime()
    bucket = TokenBucket(rate=1.0, capacity=2, clock=time.clock)
    waits = [bucket.reserve() for _ in range(4)]
    assert waits == pytest.approx([0.0, 0.0, 1.0, 2.0])


def test_refund_never_exceeds_capacity() -> None:
    """Refunding a full bucket leaves it at its capacity."""
    time = FakeTime()
    bucket = TokenBucket(rate=1.0, capacity=3, clock=time.clock)
    bucket.refund()
    assert bucket.tokens == 3
