"""**pure**: retries of a delivered answer, answered from its rendered bytes before any parsing.

Clients retry (the openai client and AutoGPT re-send the same bytes after a timeout or a
lost response), and a retry of a request answered within the redeliver window gets that
answer again. Reading, parsing and validating the body, computing its request key and
rendering the completion each time costs more than all the rest of serving the retry, so the
rendered response is kept here, by everything that decides it:

- the client's identity (the client key it was authenticated with, never the key itself),
- the front (chat or legacy completions, the Responses API, …: each renders its own way),
- the thread header (``X-Ticketproxy-Thread``) as sent, or its absence,
- the body's exact bytes (their SHA-256).

Any other byte, header value or client misses, and takes the full path, which answers as it
always did. A hit is only served while the desk still holds the delivered answer it was
rendered from (same request key, same ticket): the desk's own redeliver window and anything
else that ends a delivered answer for retries end its entry here too. What is kept is what
the full path would send for that retry, byte for byte, minus the per-request
``x-request-id``. The authentication and browser checks run before the handler, so a retry
is refused by them exactly as any other request is.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["AnsweredRetries", "RetryAnswer", "RetryKey", "retry_key"]

# Rendered answers kept, most recently used last; each is one completion's bytes.
CAPACITY = 1024
# Larger answers are not kept (the full path serves them): the cache stays under ~64 MiB.
MAX_BODY_BYTES = 64 * 1024


@dataclass(frozen=True)
class RetryAnswer:
    """The response the full path sends a retry of one delivered answer."""

    request_key: str  # the ticket's request key, which the desk's delivered answers are by
    ticket_id: int
    body: bytes
    # In the order the full path sets them, without x-request-id (each request has its own).
    headers: tuple[tuple[str, str], ...]
    content_type: str  # application/json, or text/event-stream when streamed


# The client, the front, the thread header (None when absent) and the body's SHA-256.
RetryKey = tuple[str, str, str | None, bytes]


def retry_key(*, client: str, front: str, thread: str | None, body: bytes) -> RetryKey:
    """Return the key naming a request: its client, front, thread header and body's digest."""
    return (client, front, thread, hashlib.sha256(body).digest())


def still_answers(answer: RetryAnswer, delivered_ticket: int | None) -> bool:
    """Say whether a kept answer may still be sent, given the ticket the desk now delivers."""
    return delivered_ticket is not None and delivered_ticket == answer.ticket_id


class AnsweredRetries:
    """Rendered answers to retries, by :func:`retry_key`; bounded, least recently used out."""

    def __init__(self, *, capacity: int = CAPACITY, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self._capacity = capacity
        self._max_body_bytes = max_body_bytes
        self._answers: OrderedDict[RetryKey, RetryAnswer] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._answers)

    def find(self, key: RetryKey, delivered: Callable[[str], int | None]) -> RetryAnswer | None:
        """Return the kept answer for ``key`` if the desk still delivers its ticket, else None.

        ``delivered(request_key)`` names the ticket whose delivered answer the desk would
        send a retry of that request now, or None. An answer it no longer names is dropped.
        """
        answer = self._answers.get(key)
        if answer is not None and not still_answers(answer, delivered(answer.request_key)):
            del self._answers[key]
            answer = None
        if answer is None:
            self.misses += 1
            return None
        self._answers.move_to_end(key)
        self.hits += 1
        return answer

    def remember(self, key: RetryKey, answer: RetryAnswer) -> None:
        """Keep ``answer`` for the retries of the request ``key`` names (unless too large)."""
        if len(answer.body) > self._max_body_bytes:
            return
        self._answers[key] = answer
        self._answers.move_to_end(key)
        while len(self._answers) > self._capacity:
            self._answers.popitem(last=False)

    def clear(self) -> None:
        """Forget every kept answer."""
        self._answers.clear()
