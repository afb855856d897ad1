"""The quickstart, for real: ``ticketproxy serve`` with no token, asked and answered by hand.

Everything runs as a user would run it: the console script in a child process, the
official ``openai`` client, the exact ``ticketproxy answer`` command the banner prints.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import openai
import pytest

TICKETPROXY = Path(sys.executable).with_name("ticketproxy")
REPO = "acme/agents"
START_TIMEOUT = 15.0


def free_port() -> int:
    """Return a port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Banner:
    """What ``serve`` printed: where to ask, where the issues are, and how to answer."""

    base_url: str
    web_url: str
    answer_env: dict[str, str]
    answer_argv: list[str]
    editor_token: str

    def answer_argv_for(self, number: int) -> list[str]:
        """Return the printed answer command, pointed at issue ``number``."""
        first = f"{self.web_url}/{REPO}/issues/1"
        return [
            f"{self.web_url}/{REPO}/issues/{number}" if a == first else a for a in self.answer_argv
        ]


def parse_banner(text: str) -> Banner:
    """Pick the base URL, the sandbox URL and the answer command out of the banner."""
    base = re.search(r"OpenAI base URL (\S+)", text)
    pages = re.search(r"Embedded GitHub \(no TICKETPROXY_GITHUB_TOKEN set\): (\S+)/ ", text)
    command = next((line for line in text.splitlines() if " answer " in line), None)
    assert base is not None, text
    assert pages is not None, text
    assert command is not None, text
    # `echo TEXT | VAR=value ticketproxy answer URL --key K`: the answer text comes on stdin.
    _echo, _, pipeline = command.partition(" | ")
    words = shlex.split(pipeline)
    env = {}
    while "=" in words[0] and not words[0].startswith("/"):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    return Banner(
        base_url=base.group(1),
        web_url=pages.group(1),
        answer_env=env,
        answer_argv=words,
        editor_token=env.get("GITHUB_TOKEN", ""),
    )


class Server:
    """One ``ticketproxy serve`` child process, its output in a file."""

    def __init__(self, workdir: Path, env: dict[str, str], port: int, log: Path) -> None:
        """Start the console script in ``workdir``."""
        self.port = port
        self.log = log
        self._output = log.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [str(TICKETPROXY), "serve", "--port", str(port)],
            cwd=workdir,
            env=env,
            stdout=self._output,
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        """Return everything the process printed so far."""
        return self.log.read_text(encoding="utf-8")

    def wait_until_ready(self) -> Banner:
        """Wait for ``GET /healthz`` and the banner, and return the parsed banner."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert self.process.poll() is None, f"serve exited early:\n{self.output()}"
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{self.port}/healthz", timeout=2
                ) as response:
                    healthy = response.status == 200
            except OSError:
                healthy = False
            if healthy and "ticketproxy answer" in self.output():
                return parse_banner(self.output())
            assert time.monotonic() < deadline, f"serve never became ready:\n{self.output()}"
            time.sleep(0.05)

    def terminate(self) -> int:
        """Send SIGTERM and return the exit code (failing if it takes more than 5 s)."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=5)
        finally:
            self.close()

    def close(self) -> None:
        """Kill the process if it still runs, and close its log."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._output.close()


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    """Collect started servers and make sure none outlives the test."""
    started: list[Server] = []
    yield started
    for server in started:
        server.close()


def get_json(url: str) -> Any:
    """GET a JSON document without credentials."""
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


def wait_for_ready_issue(api_url: str, number: int, within: float = 10.0) -> dict[str, Any]:
    """Wait until issue ``number`` exists and is locked (ticketproxy has finished opening it)."""
    deadline = time.monotonic() + within
    while True:
        issues = get_json(f"{api_url}/repos/{REPO}/issues?state=all")
        found = [issue for issue in issues if issue["number"] == number]
        if found and found[0]["locked"]:
            return dict(found[0])
        assert time.monotonic() < deadline, f"issue #{number} never appeared: {issues}"
        time.sleep(0.05)


def ask(pool: ThreadPoolExecutor, base_url: str, question: str) -> Future[str | None]:
    """Ask a question with the blocking openai client, in a thread."""

    def call() -> str | None:
        with openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=30) as c:
            completion = c.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": question}]
            )
        return completion.choices[0].message.content

    return pool.submit(call)


def run_answer(banner: Banner, argv: list[str], text: str, cwd: Path) -> str:
    """Run the banner's answer command with ``text`` on stdin and return what it printed."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), **banner.answer_env}
    result = subprocess.run(
        argv, input=text, capture_output=True, text=True, env=env, cwd=cwd, timeout=30, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow
def test_quickstart_serves_asks_answers_and_restarts_on_the_same_data(
    tmp_path: Path, servers: list[Server]
) -> None:
    """Serve with no token, ask, answer with the printed command, restart, ask again."""
    port, sandbox_port = free_port(), free_port()
    env = {
        # A clean environment: a developer's own GITHUB_TOKEN would switch off embedded mode.
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "TICKETPROXY_DATA_DIR": str(tmp_path / "data"),
        "TICKETPROXY_SANDBOX_PORT": str(sandbox_port),
        "TICKETPROXY_POLL_INTERVAL": "0.2",
    }
    servers.append(Server(tmp_path, env, port, tmp_path / "first.log"))
    banner = servers[0].wait_until_ready()
    assert banner.base_url == f"http://127.0.0.1:{port}/v1"
    assert banner.web_url == f"http://127.0.0.1:{sandbox_port}"
    assert banner.editor_token.startswith("ghp_")
    assert banner.answer_argv[:2] == [str(TICKETPROXY), "answer"]
    api_url = f"{banner.web_url}/api/v3"
    # The start-up check of the token and repository passes for the embedded default.
    assert get_json(f"http://127.0.0.1:{port}/readyz")["status"] == "ready"

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = ask(pool, banner.base_url, "Which command runs the tests?")
        issue = wait_for_ready_issue(api_url, 1)
        assert "Which command runs the tests?" in issue["body"]
        assert issue["html_url"] in banner.answer_argv
        printed = run_answer(banner, banner.answer_argv, "Run `make test`.\n", tmp_path)
        assert "signed answer posted" in printed
        assert pending.result(timeout=15) == "Run `make test`."

    assert servers[0].terminate() == 0

    servers.append(Server(tmp_path, env, port, tmp_path / "second.log"))
    again = servers[1].wait_until_ready()
    # Same data dir: the same sandbox users (tokens), the same editor key, the same keyring;
    # the printed command names the issue the next question opens, not issue 1 again.
    assert again == replace(banner, answer_argv=banner.answer_argv_for(2))

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = ask(pool, again.base_url, "And which one lints?")
        issue = wait_for_ready_issue(api_url, 2)
        assert "And which one lints?" in issue["body"]
        assert issue["html_url"] in again.answer_argv
        run_answer(again, again.answer_argv, "Run `make lint`.\n", tmp_path)
        assert pending.result(timeout=15) == "Run `make lint`."

    assert servers[1].terminate() == 0
