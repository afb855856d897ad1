"""Revocation and a torn keyring file on a running proxy: nothing judged wrongly, nothing lost."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import aiohttp

from tests.helpers.stack import Stack

PROMPT = [{"role": "user", "content": "Rotate the staging credentials."}]


async def _readyz(stack: Stack) -> tuple[int, Any]:
    """GET ``/readyz``; return the status and JSON body."""
    url = stack.base_url.removesuffix("/v1") + "/readyz"
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        return resp.status, await resp.json()


async def _ask(stack: Stack) -> asyncio.Task[Any]:
    """Send the prompt through the openai client; return its pending task once issue 1 is up."""
    client = stack.openai()
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    return pending


async def _polls(stack: Stack, count: int) -> None:
    """Wait until the desk has polled ``count`` more times."""
    target = stack.desk.polls + count
    for _ in range(400):
        if stack.desk.polls >= target:
            return
        stack.desk.poke()
        await asyncio.sleep(0.02)
    raise AssertionError("the desk stopped polling")


async def test_answer_posted_while_the_keyring_is_half_written_is_judged_once_it_is_whole(
    stack: Stack,
) -> None:
    """A torn keyring judges nothing and says so in /readyz; the answer counts once it is whole."""
    pending = await _ask(stack)
    keyring = stack.settings.keyring_path
    whole = keyring.read_text()
    keyring.write_text(whole[: len(whole) // 3])  # an editor's save, caught half-way
    await stack.answer(1, "Rotated; the new credentials are in the vault.")
    await _polls(stack, 3)
    assert not pending.done()
    assert stack.desk.answers_accepted == 0
    assert stack.desk.answers_rejected == {}
    assert await stack.bot_replies(1) == []
    status, body = await _readyz(stack)
    assert status == 503
    assert any(
        "keyring" in problem and "1 signed comment" in problem for problem in body["problems"]
    )
    keyring.write_text(whole)
    completion = await asyncio.wait_for(pending, 10)
    assert completion.choices[0].message.content == "Rotated; the new credentials are in the vault."
    assert (await _readyz(stack))[0] == 200


async def test_revoked_key_is_refused_even_when_the_keyring_keeps_its_old_mtime(
    stack: Stack,
) -> None:
    """Removing alice's key with the file's mtime kept (``cp -p``) still revokes it at once."""
    pending = await _ask(stack)
    keyring = stack.settings.keyring_path
    before = keyring.stat()
    data = json.loads(keyring.read_text())
    data["keys"] = [key for key in data["keys"] if key["login"] != "alice"]
    keyring.write_text(json.dumps(data))
    os.utime(keyring, ns=(before.st_atime_ns, before.st_mtime_ns))
    await stack.answer(1, "Rotated.", signer="alice")
    await _polls(stack, 3)
    assert stack.desk.answers_accepted == 0
    assert stack.desk.answers_rejected["unknown_key"] == 1
    assert not pending.done()
    pending.cancel()
