"""Read GitHub's response headers: case-insensitive lookup and the next page's link."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_LINK_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')


def header_value(headers: Mapping[str, Any] | None, name: str) -> str | None:
    """Return the header ``name`` (given in lower case) from ``headers``, whatever its case."""
    for key, value in (headers or {}).items():
        if key.lower() == name:
            return str(value)
    return None


def next_page_url(headers: Mapping[str, Any] | None) -> str | None:
    """Return the ``rel="next"`` URL of a paginated answer's ``link`` header, or None."""
    match = _LINK_NEXT.search(header_value(headers, "link") or "")
    return match.group(1) if match else None
