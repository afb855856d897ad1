"""The unversioned aliases (``/chat/completions``, ``/responses``, ``/completions``) are
guarded and answered like their ``/v1`` routes: some clients drop the ``/v1`` from their base
URL, and an alias must neither skip the client-key check nor fail on its absence."""

from __future__ import annotations

import json

import pytest

from tests.helpers.raw_requests import assert_envelope, raw
from tests.helpers.stack import Stack

ALIASES = {
    "/chat/completions": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
    "/completions": {"model": "gpt-4o", "prompt": "hi"},
    "/responses": {"model": "gpt-4o", "input": "hi"},
}


@pytest.mark.parametrize("path", list(ALIASES))
async def test_unversioned_alias_without_a_client_key_is_refused_not_a_500(
    stack: Stack, path: str
) -> None:
    """An alias without a client key is a 401 in the API's envelope, as its /v1 route is."""
    data = json.dumps(ALIASES[path]).encode()
    status, _, body = await raw(
        stack, "POST", path, data=data, headers={"Content-Type": "application/json"}
    )
    assert status == 401
    assert_envelope(body, code="invalid_api_key")


@pytest.mark.parametrize("path", list(ALIASES))
async def test_unversioned_alias_with_a_wrong_client_key_is_refused(
    stack: Stack, path: str
) -> None:
    """A wrong key on an alias is refused as on its /v1 route (no ticket is opened)."""
    data = json.dumps(ALIASES[path]).encode()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer not-a-key"}
    status, _, body = await raw(stack, "POST", path, data=data, headers=headers)
    assert status == 401
    assert_envelope(body, code="invalid_api_key")
    assert await stack.issues() == []
