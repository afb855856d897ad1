"""Run a composite action's ``run`` steps locally, as a GitHub runner would.

The action's YAML is parsed, ``${{ inputs.* }}`` and ``${{ github.* }}`` are substituted in
each step's ``env`` and ``run`` (inputs not given take their defaults), and each step runs in
``bash --noprofile --norc -eo pipefail``, GitHub's shell for ``shell: bash``, with the
runner's environment variables (``RUNNER_TEMP``, ``GITHUB_*``) plus the step's ``env``.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "actions" / "personal-agent" / "action.yml"
TEMPLATE = ROOT / "examples" / "personal-agent"
_EXPRESSION = re.compile(r"\$\{\{\s*(inputs|github)\.([A-Za-z0-9_-]+)\s*\}\}")


@dataclass(frozen=True)
class StepResult:
    """What one step printed, and how it ended."""

    name: str
    returncode: int
    stdout: str
    stderr: str


def load_action(path: Path = ACTION) -> dict[str, Any]:
    """Return the action's YAML as data."""
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def substitute(text: str, *, inputs: Mapping[str, str], github: Mapping[str, str]) -> str:
    """Replace ``${{ inputs.x }}`` and ``${{ github.x }}`` as the runner does."""

    def value(match: re.Match[str]) -> str:
        scope = inputs if match.group(1) == "inputs" else github
        return scope[match.group(2)]

    return _EXPRESSION.sub(value, text)


def resolved_inputs(
    action: Mapping[str, Any], given: Mapping[str, str], github: Mapping[str, str]
) -> dict[str, str]:
    """Return every input: those given, and the defaults (substituted) of the others."""
    inputs: dict[str, str] = {}
    for name, spec in action["inputs"].items():
        if name in given:
            inputs[name] = given[name]
        elif spec.get("required"):
            raise AssertionError(f"required input {name} not given")
        else:
            inputs[name] = substitute(str(spec.get("default", "")), inputs={}, github=github)
    return inputs


async def run_steps(
    *,
    given: Mapping[str, str],
    github: Mapping[str, str],
    runner_env: Mapping[str, str],
    cwd: Path,
    skip: tuple[str, ...] = (),
    action: Mapping[str, Any] | None = None,
) -> list[StepResult]:
    """Run the composite's steps (leaving out those whose name starts with one in ``skip``)."""
    action = action or load_action()
    inputs = resolved_inputs(action, given, github)
    results = []
    for step in action["runs"]["steps"]:
        if step["name"].startswith(skip):
            continue
        assert step["shell"] == "bash"
        env = {"PATH": os.environ["PATH"], "HOME": str(cwd), **runner_env}
        for key, raw in (step.get("env") or {}).items():
            env[key] = substitute(str(raw), inputs=inputs, github=github)
        script = substitute(step["run"], inputs=inputs, github=github)
        process = await asyncio.create_subprocess_exec(
            "bash",
            "--noprofile",
            "--norc",
            "-eo",
            "pipefail",
            "-c",
            script,
            cwd=cwd,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
        result = StepResult(step["name"], process.returncode or 0, out.decode(), err.decode())
        results.append(result)
        if result.returncode != 0:
            break
    return results
