"""GitHub's page-based pagination: ``page`` and ``per_page`` in, a ``Link`` header out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from yarl import URL

DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100

T = TypeVar("T")


@dataclass(frozen=True)
class Page:
    """One page of a list, and where it sits among the others."""

    number: int
    per_page: int
    last: int


def _positive_int(text: str | None, default: int) -> int:
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        return default
    return value if value > 0 else default


def select_page(items: Sequence[T], query: Mapping[str, str]) -> tuple[list[T], Page]:
    """Cut the requested page out of a list, clamping ``per_page`` to GitHub's 100."""
    per_page = min(_positive_int(query.get("per_page"), DEFAULT_PER_PAGE), MAX_PER_PAGE)
    number = _positive_int(query.get("page"), 1)
    last = max(1, -(-len(items) // per_page))
    start = (number - 1) * per_page
    return list(items[start : start + per_page]), Page(number=number, per_page=per_page, last=last)


def link_header(url: URL, page: Page) -> str | None:
    """Return GitHub's ``Link`` header for a page, keeping the request's other parameters."""

    def at(number: int) -> str:
        return f"<{url.update_query({'page': str(number)})}>"

    # GitHub's order: prev, next, last, first.
    links: list[str] = []
    if page.number > 1:
        links.append(f'{at(min(page.number - 1, page.last))}; rel="prev"')
    if page.number < page.last:
        links.append(f'{at(page.number + 1)}; rel="next"')
        links.append(f'{at(page.last)}; rel="last"')
    if page.number > 1:
        links.append(f'{at(1)}; rel="first"')
    return ", ".join(links) or None
