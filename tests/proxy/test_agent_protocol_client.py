"""agbenchmark's loop, driven by the official agent-protocol-client as a real process."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.agent_protocol import scripted_editor
from tests.helpers.stack import CLIENT_KEY, start_stack, stop_stack

ROOT = Path(__file__).resolve().parents[2]
CLIENT_PYTHON = ROOT / ".venv-apclient" / "bin" / "python"
LOOP = ROOT / "tests" / "helpers" / "agbenchmark_loop.py"
POEM = "Waves fold into foam\nsalt wind writes on the harbour\nnight takes the last boat"
INPUT = b"The sea, in three lines.\r\n\x00\xff"

pytestmark = pytest.mark.slow


async def test_agent_protocol_client_runs_agbenchmarks_loop_to_the_last_step(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """A question, a body-less follow-up, a final answer with a file downloaded byte for byte."""
    assert CLIENT_PYTHON.exists(), "run `make install`: it makes .venv-apclient for this test"
    stack = await start_stack(github_sandbox, sandbox_config, tmp_path, step_wait=1.0)
    input_file = tmp_path / "brief.txt"
    input_file.write_bytes(INPUT)
    try:
        process = await asyncio.create_subprocess_exec(
            str(CLIENT_PYTHON),
            str(LOOP),
            stack.base_url.removesuffix("/v1"),
            CLIENT_KEY,
            str(input_file),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=tmp_path,
        )
        editor = asyncio.create_task(
            scripted_editor(
                stack,
                [
                    ("Which sea: the North Sea or the Adriatic?", True),
                    (f"Here it is.\n\n```artifact path=out/haiku.txt\n{POEM}\n```", False),
                ],
            )
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
        editor.cancel()
        assert process.returncode == 0, err.decode()
    finally:
        await stop_stack(stack)
    report: dict[str, Any] = json.loads(out)
    outputs = [(s["output"], s["is_last"]) for s in report["steps"] if s["status"] == "completed"]
    assert outputs == [
        ("Which sea: the North Sea or the Adriatic?", False),
        ("Here it is.", True),
    ]
    files = {f["file_name"]: f for f in report["files"]}
    assert bytes.fromhex(files["brief.txt"]["content"]) == INPUT
    assert files["brief.txt"]["agent_created"] is False
    assert bytes.fromhex(files["haiku.txt"]["content"]) == (POEM + "\n").encode()
    assert (files["haiku.txt"]["agent_created"], files["haiku.txt"]["relative_path"]) == (
        True,
        "out/haiku.txt",
    )
    assert report["listed_steps"] == 2
    assert report["task_artifacts"] == 2
