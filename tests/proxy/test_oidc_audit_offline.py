"""Agents' keyless answers audited offline, after the OIDC issuer rotated its key away.

A real ticketproxy trusts the local OIDC issuer; alice's agent answers keylessly through
``ticketproxy answer --oidc``; the desk verifies the token and keeps the issuer's key. Then
the issuer rotates (the old key leaves its JWKS), and ``ticketproxy audit`` is run with and
without the archive ``ticketproxy oidc-keys export`` writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from pathlib import Path

import pytest

from embedded_github import SandboxConfig
from proxy.cli import main
from tests.helpers.oidc_issuer import LocalIssuer, agent_answers, new_rsa_key, with_agent_account
from tests.helpers.review_flow import PROMPT
from tests.helpers.stack import Stack

PLAIN = "The build folder is already empty; nothing to do."


@pytest.fixture
def sandbox_config(sandbox_config: SandboxConfig) -> SandboxConfig:
    """Add the account alice's agent workflow posts as."""
    return with_agent_account(sandbox_config)


async def _answered_keylessly(stack: Stack, issuer: LocalIssuer) -> str:
    """Have alice's agent answer ticket 1 keylessly, delivered; return the issue's URL."""
    pending = asyncio.create_task(
        stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    issue = await stack.wait_for_issue(1)
    assert await agent_answers(stack, issuer, issue.html_url, PLAIN) == 0
    await stack.settle()
    completion = await asyncio.wait_for(pending, 10)
    assert completion.choices[0].message.content == PLAIN
    return str(issue.html_url)


async def _run(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run ``ticketproxy ARGV`` in a thread; return its exit code and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = await asyncio.to_thread(main, argv, env)
    return code, out.getvalue()


async def _export(stack: Stack, issuer: LocalIssuer) -> Path:
    """Run ``ticketproxy oidc-keys export --out FILE`` on the stack's store; return FILE."""
    archive = stack.tmp / "oidc-keys.json"
    env = {
        "TICKETPROXY_DATA_DIR": str(stack.settings.data_dir),
        "TICKETPROXY_OIDC_ISSUER": issuer.url,
    }
    code, printed = await _run(["oidc-keys", "export", "--out", str(archive)], env)
    assert code == 0, printed
    return archive


def _audit(stack: Stack, url: str, *extra: str) -> list[str]:
    return ["audit", url, "--keyring", str(stack.settings.keyring_path), *extra]


async def test_keyless_answer_audits_offline_with_the_archive_after_the_issuer_rotated(
    agent_stack: Stack, issuer: LocalIssuer
) -> None:
    """With the exported archive, the audit passes with the issuer rotated and then gone."""
    url = await _answered_keylessly(agent_stack, issuer)
    old = issuer.rotate()
    archive = await _export(agent_stack, issuer)
    document = json.loads(archive.read_text())
    assert document["issuer"] == issuer.url
    (kept,) = document["keys"]
    assert kept["kid"] == old
    assert {"first_seen", "last_seen"} <= set(kept)
    assert "d" not in kept
    await issuer.stop()  # no network: an audit that tried the issuer would fail
    code, printed = await _run(_audit(agent_stack, url, "--oidc-jwks", str(archive)), {})
    assert code == 0, printed
    assert ": ok (" in printed
    assert "alice's agent, by GitHub Actions OIDC token" in printed


async def test_audit_after_the_issuer_rotated_its_key_names_the_missing_kid(
    agent_stack: Stack, issuer: LocalIssuer
) -> None:
    """Fetching the rotated JWKS, the audit fails naming the kid and pointing at the archive."""
    url = await _answered_keylessly(agent_stack, issuer)
    old = issuer.rotate()
    code, printed = await _run(_audit(agent_stack, url, "--oidc-issuer", issuer.url), {})
    assert code == 1, printed
    assert f"the issuer's key {old}, which the issuer's keys given to this audit lack" in printed
    assert "ticketproxy oidc-keys export --out FILE" in printed
    assert "--oidc-jwks FILE" in printed


async def test_issuer_serving_an_archived_kid_with_other_material_fails_the_audit_loudly(
    agent_stack: Stack, issuer: LocalIssuer
) -> None:
    """An issuer now serving a kept kid with another key makes the audit a mismatch."""
    url = await _answered_keylessly(agent_stack, issuer)
    archive = await _export(agent_stack, issuer)
    issuer.key = new_rsa_key()  # the same kid, other material
    argv = _audit(agent_stack, url, "--oidc-jwks", str(archive), "--check-issuer")
    code, printed = await _run(argv, {})
    assert code == 1, printed
    assert f"OIDC issuer {issuer.url}: mismatch" in printed
    assert f"the issuer's key {issuer.kid} is not the key kept under that kid" in printed
