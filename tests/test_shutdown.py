"""Stopping ``ticketproxy serve`` while a client waits: quick, told to retry, logged."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest

from tests.helpers.stack import Stack

TICKETPROXY = Path(sys.executable).with_name("ticketproxy")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until(check: object, what: str, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while True:
        try:
            if check():  # type: ignore[operator]
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.05)


def _get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=2) as response:
        return json.load(response)


def _ask(base_url: str) -> str:
    with openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=60) as c:
        try:
            c.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "Still there?"}]
            )
        except openai.APIConnectionError:
            return "connection dropped"
    return "answered"


@pytest.mark.slow
def test_sigterm_while_a_client_waits_stops_within_seconds_and_logs_what_was_pending(
    tmp_path: Path,
) -> None:
    """A SIGTERM releases the waiting client (told to retry) and exits in seconds, logged."""
    port, sandbox_port = _free_port(), _free_port()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "TICKETPROXY_DATA_DIR": str(tmp_path / "data"),
        "TICKETPROXY_SANDBOX_PORT": str(sandbox_port),
    }
    log = tmp_path / "serve.log"
    with log.open("w", encoding="utf-8") as output:
        process = subprocess.Popen(
            [str(TICKETPROXY), "serve", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_until(lambda: _get(f"http://127.0.0.1:{port}/healthz"), "serving")
            api = f"http://127.0.0.1:{sandbox_port}/api/v3/repos/acme/agents/issues"
            with ThreadPoolExecutor(max_workers=1) as pool:
                waiting = pool.submit(_ask, f"http://127.0.0.1:{port}/v1")
                _wait_until(lambda: _get(api), "the ticket's issue")
                time.sleep(0.3)  # the client is in its wait, heartbeats flowing
                started = time.monotonic()
                process.send_signal(signal.SIGTERM)
                assert process.wait(timeout=10) == 0
                took = time.monotonic() - started
                assert waiting.result(timeout=5) == "connection dropped"
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    text = log.read_text(encoding="utf-8")
    assert took < 5, f"stopping took {took:.1f} s:\n{text}"
    assert "told 1 waiting client(s) to retry" in text, text
    assert "1 ticket(s) left pending, resumed at the next start" in text, text


async def test_request_arriving_while_the_desk_stops_gets_429_to_retry_not_a_500(
    stack: Stack,
) -> None:
    """Once waiting clients are released, a late request is told to retry (429), not failed."""
    assert stack.desk.release_waiting() == 0
    with pytest.raises(openai.RateLimitError) as caught:
        await stack.openai().chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Late?"}]
        )
    assert caught.value.code == "ticketproxy_stopping"
    assert caught.value.response.headers["retry-after"] == "5"


async def test_shutdown_releases_each_waiting_client_with_a_retry(stack: Stack) -> None:
    """Releasing the waiters answers the waiting client at once; the ticket stays pending."""
    client = stack.openai()
    waiting = asyncio.ensure_future(
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Waiting"}]
        )
    )
    await stack.wait_for_issue(1)
    await asyncio.sleep(0.3)
    assert stack.desk.release_waiting() == 1
    with pytest.raises(openai.APIConnectionError):
        await asyncio.wait_for(waiting, 5)
    assert stack.desk.store.count_pending() == 1
