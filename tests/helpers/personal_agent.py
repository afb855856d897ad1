"""alice's personal agent, as the tests run it: her fork's workflow, and her action's steps.

The composite action's own ``run`` steps run as a runner would (tests/helpers/composite_action.py),
in a directory standing for alice's fork, with the template's prompt file.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.helpers.composite_action import TEMPLATE, StepResult, run_steps
from tests.helpers.desk_api import DeskApi
from tests.helpers.stack import Stack
from tests.helpers.upstream_stub import UpstreamStub

FORK = "alice/ticketproxy-agent"
ROUTES = "model:gpt-4-turbo=alice/ticketproxy-agent/agent.yml"
MODEL_KEY = "sk-alices-agent-key-that-must-stay-secret-42"
VENV_BIN = Path(sys.executable).parent  # the venv whose ticketproxy the action installs


def host_alices_workflow(stack: Stack) -> None:
    """Host the template's workflow in alice's fork, with the one input it declares."""
    stack.sandbox.sandbox.add_workflow(FORK, ".github/workflows/agent.yml", inputs=("ticket_url",))


def ask(stack: Stack, messages: list[Any], **options: Any) -> asyncio.Task[Any]:
    """Start a chat completion for gpt-4-turbo (routed to alice's agent) in the background."""
    create = stack.openai().chat.completions.create(
        model="gpt-4-turbo", messages=messages, **options
    )
    return asyncio.create_task(create)


async def run_alices_action(
    stack: Stack,
    model: UpstreamStub,
    ticket_url: str,
    tmp: Path,
    *,
    inputs: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> list[StepResult]:
    """Run the composite action's steps in alice's fork, as the dispatched workflow would.

    ``inputs`` add to or replace the workflow's ``with:``; ``env`` adds to the runner's
    environment (a job with ``id-token: write`` gets the OIDC request variables there).
    """
    fork = tmp / "fork"
    (fork / ".ticketproxy").mkdir(parents=True)
    agent_md = (TEMPLATE / ".ticketproxy" / "agent.md").read_text(encoding="utf-8")
    (fork / ".ticketproxy" / "agent.md").write_text(agent_md, encoding="utf-8")
    runner_temp = tmp / "runner-temp"
    # Where the install step's venv would be: this test's venv has ticketproxy installed.
    (runner_temp / "ticketproxy").mkdir(parents=True)
    (runner_temp / "ticketproxy" / "bin").symlink_to(VENV_BIN)
    given = {
        "ticket-url": ticket_url,
        "model-base-url": model.base_url,
        "model": "alices-model",
        "model-api-key": MODEL_KEY,
        "github-token": stack.token("alice"),
        **(inputs or {}),
    }
    action_path = TEMPLATE.parents[1] / "actions" / "personal-agent"
    github = {"repository_owner": "alice", "action_path": str(action_path)}
    runner_env = {
        "RUNNER_TEMP": str(runner_temp),
        "GITHUB_REPOSITORY": FORK,
        "CI": "true",
        **(env or {}),
    }
    return await run_steps(
        given=given, github=github, runner_env=runner_env, cwd=fork, skip=("Install",)
    )


async def dispatched_url(stack: Stack) -> str:
    """Wait for the ticket's dispatch to alice's fork and return the ticket URL it carries."""
    await stack.wait_for_issue(1)
    await stack.desk.followups.drain()
    [dispatch] = stack.sandbox.sandbox.dispatches
    return dispatch.inputs["ticket_url"]


async def draft_shown(stack: Stack, *, within: float = 10.0) -> dict[str, Any]:
    """Poll until the desk API shows ticket 1's draft, and return it."""
    async with asyncio.timeout(within):
        while True:
            await stack.settle()
            status, detail = await DeskApi(stack).get("tickets/1")
            assert status == 200
            if detail["draft"] is not None:
                return dict(detail["draft"])
            await asyncio.sleep(0.05)
