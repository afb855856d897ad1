"""JavaScript clients run as real Node processes against a stack, their result read as JSON.

The scripts live in ``tests/js/``; the packages they import are pinned in ``package.json`` and
installed by ``make install``. Without them a test is skipped, except under ``CI=true``,
where a missing install fails it rather than passing silently.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Awaitable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.helpers.stack import CLIENT_KEY, Stack

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "tests" / "js"
NODE_MODULES = ROOT / "node_modules"
T = TypeVar("T")


def require_node_packages(*packages: str, environ: Mapping[str, str] = os.environ) -> str:
    """Return ``node``, or skip (fail under ``CI=true``) when it or a package is missing."""
    node = shutil.which("node")
    missing = [p for p in packages if not (NODE_MODULES / p / "package.json").exists()]
    if node is not None and not missing:
        return node
    why = "node is not on PATH" if node is None else f"missing node packages: {', '.join(missing)}"
    message = f"{why}; run `make install` (it runs `npm install` from package.json)"
    if environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


async def run_script(
    stack: Stack, script: str, scenario: str, *packages: str, base_url: str | None = None
) -> dict[str, Any]:
    """Run ``tests/js/<script>`` for ``scenario`` against ``stack`` and return what it printed."""
    node = require_node_packages(*packages)
    env = {
        **os.environ,
        "TICKETPROXY_BASE_URL": base_url or stack.base_url,
        "TICKETPROXY_API_KEY": CLIENT_KEY,
        "NO_COLOR": "1",
    }
    process = await asyncio.create_subprocess_exec(
        node,
        str(SCRIPTS / script),
        scenario,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=ROOT,
        env=env,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), 60)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    report = err.decode(errors="replace")
    assert process.returncode == 0, f"{script} {scenario} exited {process.returncode}:\n{report}"
    lines = out.decode().strip().splitlines()
    assert lines, f"{script} {scenario} printed nothing:\n{report}"
    result: dict[str, Any] = json.loads(lines[-1])
    return result


async def while_running(run: asyncio.Task[dict[str, Any]], waiting: Awaitable[T]) -> T:
    """Return what ``waiting`` gives, or raise the script's failure if it ends first."""
    waiter = asyncio.ensure_future(waiting)
    done, _ = await asyncio.wait({run, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if waiter in done:
        return waiter.result()
    waiter.cancel()
    raise AssertionError(f"the script ended first, printing {run.result()}")
