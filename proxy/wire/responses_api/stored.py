"""Stored responses: their input items, the echo kept for them, and the input items list.

Reference: https://platform.openai.com/docs/api-reference/responses/get and
https://platform.openai.com/docs/api-reference/responses/input-items. A response's input
items are those of the response it continues (its input, then its output), then its own
input, each with an id; ``GET /v1/responses/{id}/input_items`` pages through them with
``limit``, ``order`` (``desc`` by default, as OpenAI does) and ``after``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from proxy.errors import InvalidRequest
from proxy.wire.invalid import require

from .objects import ResponseEcho

_ID_PREFIXES = {"message": "msg", "function_call": "fc", "function_call_output": "fco"}
_LIMIT_DEFAULT, _LIMIT_MAX = 20, 100


def input_items(value: Any, response_id: str) -> list[dict[str, Any]]:
    """Return a valid ``input`` as items, each with an id and text content as parts."""
    raw = [{"role": "user", "content": value}] if isinstance(value, str) else list(value)
    base = response_id.removeprefix("resp_")
    items: list[dict[str, Any]] = []
    for index, item in enumerate(raw):
        kind = item.get("type", "message")
        normal = {**item, "type": kind}
        content = item.get("content")
        if kind == "message" and isinstance(content, str):
            part = "output_text" if item.get("role") == "assistant" else "input_text"
            normal["content"] = [{"type": part, "text": content}]
        normal.setdefault("id", f"{_ID_PREFIXES.get(kind, 'item')}_{base}_in{index}")
        normal.setdefault("status", "completed")
        items.append(normal)
    return items


def response_id_of_item(item_id: str) -> str | None:
    """Return the id of the response an item id was given by (``msg_<base>``, ``fc_<base>_0``…)."""
    prefix, _, rest = item_id.partition("_")
    base = rest.partition("_")[0]
    known = prefix in _ID_PREFIXES.values() or prefix == "item"
    return f"resp_{base}" if known and base.isalnum() else None


def item_reference_id(item: Any, param: str) -> str | None:
    """Return the id an ``item_reference`` input item names, or None for any other item."""
    if not isinstance(item, dict) or item.get("type") != "item_reference":
        return None
    item_id = item.get("id")
    require(
        isinstance(item_id, str) and item_id != "",
        "an item_reference needs the id of an item",
        f"{param}.id",
        "invalid_type",
    )
    assert isinstance(item_id, str)
    return item_id


def issued_calls(output: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """Return the call ids of a response's function calls, which the next input may answer."""
    return frozenset(item["call_id"] for item in output if item.get("type") == "function_call")


def echo_to_json(echo: ResponseEcho) -> str:
    """Return what a response echoes of its request, as it is stored."""
    return json.dumps(dataclasses.asdict(echo), ensure_ascii=False)


def echo_from_json(text: str) -> ResponseEcho:
    """Return a stored echo."""
    fields = json.loads(text)
    fields["tools"] = tuple(fields.get("tools") or ())
    return ResponseEcho(**fields)


def _limit(raw: str | None) -> int:
    if raw is None:
        return _LIMIT_DEFAULT
    require(
        raw.isdigit() and 1 <= int(raw) <= _LIMIT_MAX,
        f"limit must be an integer from 1 to {_LIMIT_MAX}",
        "limit",
    )
    return int(raw)


def page_items(items: Sequence[Mapping[str, Any]], query: Mapping[str, str]) -> dict[str, Any]:
    """Return one page of input items as OpenAI lists them, for ``limit``, ``order``, ``after``."""
    limit = _limit(query.get("limit"))
    order = query.get("order", "desc")
    require(order in {"asc", "desc"}, "order must be asc or desc", "order")
    ordered = list(items) if order == "asc" else list(reversed(items))
    after = query.get("after")
    if after is not None:
        ids = [item.get("id") for item in ordered]
        if after not in ids:
            raise InvalidRequest(
                f"after names no input item of this response: {after!r}",
                param="after",
                code="invalid_value",
            )
        ordered = ordered[ids.index(after) + 1 :]
    page = [dict(item) for item in ordered[:limit]]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(ordered) > limit,
    }
