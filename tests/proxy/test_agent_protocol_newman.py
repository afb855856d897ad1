"""The Agent Protocol's own Postman suite, run by newman against ticketproxy."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.stack import start_stack, stop_stack

ROOT = Path(__file__).resolve().parents[2]
NEWMAN = ROOT / "node_modules" / ".bin" / "newman"
SUITE = ROOT / "tests" / "samples" / "agent_protocol" / "agent_protocol_v1.json"

pytestmark = pytest.mark.slow


async def test_newman_passes_the_agent_protocol_postman_suite(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """Every request of the spec's suite (less its outside echo call) gets what it checks."""
    assert NEWMAN.exists(), "run `make install`: it installs newman from package.json"
    # Loopback without client keys, as the suite sends none; steps answer running at once.
    stack = await start_stack(github_sandbox, sandbox_config, tmp_path, api_keys=(), step_wait=0.0)
    (tmp_path / "test_output.txt").write_text("Washington\n", encoding="utf-8")
    try:
        process = await asyncio.create_subprocess_exec(
            str(NEWMAN),
            "run",
            str(SUITE),
            "--env-var",
            f"url={stack.base_url.removesuffix('/v1')}",
            "--working-dir",
            str(tmp_path),
            "--reporters",
            "cli",
            "--color",
            "off",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=tmp_path,
        )
        out, _ = await asyncio.wait_for(process.communicate(), 120)
    finally:
        await stop_stack(stack)
    report = out.decode(errors="replace")
    assert process.returncode == 0, report
    assert "AssertionError" not in report
    assert "Upload Artifact" in report
    assert "Download Artifact" in report
