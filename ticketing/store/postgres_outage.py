"""How long a store call may wait for a connection, given whether the database is down.

The store's calls are synchronous and run on the event loop, so a call that waits for a
connection stalls every request, heartbeat and probe of its replica meanwhile. While
PostgreSQL is up that wait is a pool slot (milliseconds); once it is down, every call would
wait the pool's full timeout before its 429, and a burst of them would stall the replica for
seconds each. So the first call that finds no connection starts an *outage*: while it
lasts, calls fail at once, but one call per ``probe_every`` seconds that waits briefly (the
pool reconnects in the background, and a call is what asks it to), or any call while the
pool has an idle connection again. The first call that gets a connection ends it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Outage:
    """Whether the database was found down, and when a call may try again."""

    def __init__(
        self,
        *,
        wait: float,
        probe_wait: float = 0.1,
        probe_every: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._wait, self._probe_wait, self._probe_every = wait, probe_wait, probe_every
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None
        self._next_probe = 0.0

    def wait(self, *, idle: Callable[[], int]) -> float | None:
        """Return how long the next call may wait for a connection; None: fail it at once.

        ``idle`` counts the pool's idle connections; it is asked only during an outage.
        """
        with self._lock:
            if self._since is None or idle() > 0:
                return self._wait
            now = self._clock()
            if now < self._next_probe:
                return None
            self._next_probe = now + self._probe_every
            return self._probe_wait

    def began(self) -> None:
        """Record that a call found no connection: the database is down from now."""
        with self._lock:
            if self._since is None:
                self._since = self._clock()
                self._next_probe = self._since + self._probe_every

    def over(self) -> None:
        """Record that a call got a connection: the database answers again."""
        with self._lock:
            self._since = None

    def lasted(self) -> float:
        """Return for how many seconds the database has been found down (0: it is not)."""
        with self._lock:
            return 0.0 if self._since is None else self._clock() - self._since
