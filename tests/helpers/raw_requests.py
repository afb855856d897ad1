"""Raw HTTP requests to a running proxy, and the check of OpenAI's error envelope they get."""

from __future__ import annotations

import io
from typing import Any

import aiohttp

from tests.helpers.stack import CLIENT_KEY, Stack

AUTH = {"Authorization": f"Bearer {CLIENT_KEY}"}
# What the openai client sends: its key, and a body said to be JSON.
JSON_AUTH = {**AUTH, "Content-Type": "application/json"}


async def raw(
    stack: Stack,
    method: str,
    path: str,
    *,
    data: bytes | io.BytesIO | None = None,
    headers: Any = None,
) -> tuple[int, dict[str, Any], Any]:
    """Send one raw request to the proxy and return status, headers and JSON body.

    Without ``headers`` it sends the client key and ``Content-Type: application/json``, as
    the openai client does.
    """
    url = stack.base_url.removesuffix("/v1") + path
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, data=data, headers=headers or JSON_AUTH) as response,
    ):
        headers = {name.lower(): value for name, value in response.headers.items()}
        return response.status, headers, await response.json(content_type=None)


def assert_envelope(body: Any, *, code: str | None = None, param: str | None = None) -> None:
    """Check OpenAI's error envelope shape and, optionally, its code and param."""
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["message"]
    if code is not None:
        assert body["error"]["code"] == code
    if param is not None:
        assert body["error"]["param"] == param
