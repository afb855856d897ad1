"""A client of the desk API (``/desk/api/v1``) that checks every answer against its OpenAPI.

Each response's status must be one the description lists for the operation, and its JSON
must match that response's schema (``openapi-schema-validator``, OpenAPI 3.1's dialect), so
a test that reads the API also pins the description to what the server really sends.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from openapi_schema_validator import OAS31Validator

from proxy.desk_api.routes import openapi_description
from tests.helpers.stack import Stack

SPEC = openapi_description()
_TEMPLATES = [
    (re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"), path) for path in SPEC["paths"]
]


def api_url(stack: Stack, path: str) -> str:
    """Return the address of ``/desk/api/v1/<path>`` on the stack's proxy."""
    return stack.base_url.removesuffix("/v1") + "/desk/api/v1/" + path


def check_against_description(path: str, method: str, status: int, body: Any) -> None:
    """Fail unless ``status`` and ``body`` are what the description says ``method path`` gives."""
    template = next((t for pattern, t in _TEMPLATES if pattern.match(path)), None)
    assert template is not None, f"{path} is not in the OpenAPI description"
    operation = SPEC["paths"][template][method.lower()]
    responses = operation["responses"]
    assert str(status) in responses, f"{method} {template} answered {status}, not described"
    content = responses[str(status)].get("content", {})
    schema = content.get("application/json", {}).get("schema")
    assert schema is not None, f"{method} {template} {status} has no JSON schema"
    validator = OAS31Validator({**schema, "components": SPEC["components"]})
    validator.validate(body)


@dataclass
class DeskApi:
    """Calls to one stack's desk API, each checked against the description."""

    stack: Stack
    headers: dict[str, str] = field(default_factory=dict)

    async def call(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        data: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        """Send one request and return its status and JSON, checked against the description."""
        url = api_url(self.stack, path)
        sent = {**self.headers, **(headers or {})}
        async with (
            aiohttp.ClientSession() as session,
            session.request(method, url, json=json_body, data=data, headers=sent) as response,
        ):
            body = await response.json(content_type=None)
        check_against_description(
            "/desk/api/v1/" + path.split("?")[0], method, response.status, body
        )
        return response.status, body

    async def get(self, path: str, **kwargs: Any) -> tuple[int, Any]:
        """GET ``/desk/api/v1/<path>``."""
        return await self.call("GET", path, **kwargs)

    async def post_comment(
        self, number: int, body: str, *, github_token: str | None, **kwargs: Any
    ) -> tuple[int, Any]:
        """POST a signed comment for issue ``number`` with an editor's GitHub token."""
        headers = dict(kwargs.pop("headers", {}) or {})
        if github_token is not None:
            headers["X-GitHub-Token"] = github_token
        return await self.call(
            "POST",
            f"tickets/{number}/comments",
            json_body={"body": body},
            headers=headers,
            **kwargs,
        )


class EventStream:
    """The desk API's event stream, open from ``ready`` on: ``async with EventStream(stack)``."""

    def __init__(self, stack: Stack, *, headers: dict[str, str] | None = None) -> None:
        self._url = api_url(stack, "events")
        self._headers = headers or {}
        self._session: aiohttp.ClientSession | None = None
        self._response: aiohttp.ClientResponse | None = None
        self.seen: list[tuple[str, dict[str, Any]]] = []

    async def __aenter__(self) -> EventStream:
        self._session = aiohttp.ClientSession()
        self._response = await self._session.get(self._url, headers=self._headers)
        assert self._response.status == 200
        assert self._response.headers["Content-Type"].startswith("text/event-stream")
        await self.until({"ready"})
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._response is not None:
            self._response.close()
        if self._session is not None:
            await self._session.close()

    async def until(self, names: set[str], *, within: float = 10.0) -> list[str]:
        """Read events until every one of ``names`` has come; return the names read so far."""
        assert self._response is not None
        name = ""
        async with asyncio.timeout(within):
            while not names <= {n for n, _ in self.seen}:
                line = (await self._response.content.readline()).decode().rstrip("\n")
                if line.startswith("event: "):
                    name = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    self.seen.append((name, json.loads(line.removeprefix("data: "))))
        return [n for n, _ in self.seen]
