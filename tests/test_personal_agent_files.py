"""The personal agent's action and template workflow: least privilege, and nothing unpinned."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tests.helpers.composite_action import ACTION, TEMPLATE, load_action

WORKFLOW = TEMPLATE / ".github" / "workflows" / "agent.yml"
CONSTRAINTS = ACTION.with_name("constraints.txt")
FULL_SHA = re.compile(r"[^@\s]+@[0-9a-f]{40}")


def _workflow() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return data


def test_no_file_of_the_personal_agent_asks_for_write_all() -> None:
    """``write-all`` (the real personal-agent's mistake) appears in neither YAML file."""
    for path in (ACTION, WORKFLOW):
        assert "write-all" not in path.read_text(encoding="utf-8"), path


def test_the_template_workflow_asks_for_no_write_permission_on_the_fork() -> None:
    """The workflow reads its repository only; it comments with a fine-grained token."""
    workflow = _workflow()
    assert workflow["permissions"] == {"contents": "read"}
    for job in workflow["jobs"].values():
        assert "permissions" not in job or "write" not in str(job["permissions"])


def test_the_template_uses_every_action_pinned_to_a_full_commit_sha() -> None:
    """Each ``uses:`` is ``OWNER/REPO[/PATH]@<40 hex digits>``, never a branch or a tag."""
    steps = [step for job in _workflow()["jobs"].values() for step in job["steps"]]
    uses = [step["uses"] for step in steps if "uses" in step]
    assert any(use.startswith("ticketproxy/ticketproxy/actions/personal-agent@") for use in uses)
    for use in uses:
        assert FULL_SHA.fullmatch(use), use


def test_the_template_takes_the_ticket_url_and_passes_no_classic_token() -> None:
    """``workflow_dispatch`` declares ``ticket_url``; the token is a secret, not GITHUB_TOKEN."""
    workflow = _workflow()
    # PyYAML reads the key `on` as True (YAML 1.1).
    trigger = workflow.get("on", workflow.get(True))
    assert list(trigger["workflow_dispatch"]["inputs"]) == ["ticket_url"]
    text = WORKFLOW.read_text(encoding="utf-8")
    assert "secrets.TICKETPROXY_TICKET_TOKEN" in text
    assert "ghp_" not in text


def test_the_action_is_composite_and_its_install_is_pinned() -> None:
    """No image to build; pip installs the action's own commit under exact constraints."""
    action = load_action()
    assert action["runs"]["using"] == "composite"
    installs = [s["run"] for s in action["runs"]["steps"] if "pip install" in s["run"]]
    [install] = installs
    assert '--constraint "$ACTION_PATH/constraints.txt"' in install
    assert install.rstrip().endswith('"$ACTION_PATH/../.."')
    pins = [
        line
        for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    assert pins
    for line in pins:
        assert re.fullmatch(r"[a-z0-9-]+==[0-9][0-9A-Za-z.+-]*", line), line


def test_the_action_keeps_expressions_out_of_its_scripts() -> None:
    """Inputs reach the scripts as environment variables only (no script injection)."""
    for step in load_action()["runs"]["steps"]:
        assert "${{" not in step["run"], step["name"]


def test_the_template_ships_its_prompt_file_and_readme() -> None:
    """A member finds the prompt additions and the steps to follow."""
    assert (TEMPLATE / ".ticketproxy" / "agent.md").read_text(encoding="utf-8").strip()
    readme = (TEMPLATE / "README.md").read_text(encoding="utf-8")
    assert "fine-grained" in readme
    assert "40-digit commit SHA" in readme
    assert Path(ACTION).exists()


def test_answering_as_the_agent_is_opt_in_and_off_in_the_template() -> None:
    """The action drafts by default; the template shows ``id-token: write`` commented out."""
    inputs = load_action()["inputs"]
    assert inputs["answer-as-agent"]["default"] == "false"
    assert inputs["agent-login"]["default"] == ""
    text = WORKFLOW.read_text(encoding="utf-8")
    assert "  # id-token: write\n" in text
    assert "  # answer-as-agent: true\n" in text
    assert "id-token" not in str(_workflow()["permissions"])
