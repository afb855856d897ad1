"""``ticketproxy audit`` checks a task's uploaded files against the digests on its issue."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from embedded_github import RunningSandbox, SandboxConfig
from proxy.cli import main
from tests.helpers.agent_protocol import AgentProtocol, answer_step
from tests.helpers.stack import Stack, start_stack, stop_stack

DESK_TOKEN = "desk-token-for-the-audit-0123456789"
CONTENT = b"quarterly figures\n\x00\xff"
POEM = "Waves fold into foam"


@pytest.fixture
async def guarded(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[AgentProtocol]:
    """Yield an Agent Protocol client of a stack whose desk (and file links) need a token."""
    stack = await start_stack(
        github_sandbox, sandbox_config, tmp_path, step_wait=0.5, desk_token=DESK_TOKEN
    )
    try:
        async with aiohttp.ClientSession() as session:
            yield AgentProtocol(stack, session)
    finally:
        await stop_stack(stack)


def origin(stack: Stack) -> str:
    """Return the proxy's own origin, as the operator configures it for the audit."""
    return stack.base_url.removesuffix("/v1")


async def answered_task_with_upload(ap: AgentProtocol) -> tuple[str, str, str]:
    """Upload a file, answer the task with a created file, wait for delivery.

    Return the issue URL, the task id and the uploaded file's id.
    """
    task_id = await ap.create_task("Summarise the figures.")
    form = aiohttp.FormData()
    form.add_field("file", CONTENT, filename="report.txt")
    form.add_field("relative_path", "in/")
    status, artifact = await ap.call("POST", f"/tasks/{task_id}/artifacts", data=form)
    assert status == 200, artifact
    _, step = await ap.call("POST", f"/tasks/{task_id}/steps")
    text = f"Done.\n\n```artifact path=out/poem.txt\n{POEM}\n```"
    await answer_step(ap.stack, task_id, step["step_id"], text)
    [issue] = await ap.stack.issues()
    for _ in range(100):
        await ap.stack.settle()
        # The client reads the step: its answer is delivered, and the bot records that.
        await ap.call("GET", f"/tasks/{task_id}/steps/{step['step_id']}")
        if any("ticketproxy:reply delivered" in c.body for c in await ap.stack.comments(1)):
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the answer was never recorded as delivered")
    return str(issue.html_url), task_id, str(artifact["artifact_id"])


async def audit(stack: Stack, *args: str, env: dict[str, str] | None = None) -> int:
    """Run ``ticketproxy audit`` in a thread, so the stack on this loop can answer it."""
    argv = ["audit", *args, "--keyring", str(stack.tmp / "keyring.json")]
    return await asyncio.to_thread(main, argv, env or {})


async def test_uploaded_file_audited_end_to_end_matches(
    guarded: AgentProtocol, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file fetched with the desk token has the issue's size and digest: exit 0."""
    url, _, _ = await answered_task_with_upload(guarded)
    capsys.readouterr()
    env = {"TICKETPROXY_DESK_TOKEN": DESK_TOKEN}
    code = await audit(guarded.stack, url, "--proxy-url", origin(guarded.stack), env=env)
    out, err = capsys.readouterr()
    assert code == 0, out
    assert "file in/report.txt: digest matches" in out
    assert "files the agent created, covered by the answer's signature: out/poem.txt" in out
    assert f"fetched only from {origin(guarded.stack)} (--proxy-url)" in err
    assert "1 uploaded file(s): 1 match(es), 0 digest mismatch(es)" in out


async def test_upload_altered_after_listing_fails_the_audit(
    guarded: AgentProtocol, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bytes swapped in the SQLite store behind ticketproxy's back are a mismatch, exit 1."""
    url, _, artifact_id = await answered_task_with_upload(guarded)
    with sqlite3.connect(guarded.stack.settings.store_path) as db:
        db.execute(
            "UPDATE task_artifacts SET content = ? WHERE artifact_id = ?",
            (b"quarterly figures\n\x00\xfe", artifact_id),
        )
    capsys.readouterr()
    args = ("--proxy-url", origin(guarded.stack), "--desk-token", DESK_TOKEN, "--json")
    assert await audit(guarded.stack, url, *args) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    [files] = [line["files"] for line in lines if "files" in line]
    [check] = files
    assert (check["name"], check["result"]) == ("in/report.txt", "mismatch")
    assert "issue says 20 bytes" in check["detail"]
    [ticket] = [line for line in lines if "verdict" in line]
    assert ticket["verdict"] == "ok"


async def test_file_link_refused_without_the_desk_token_is_not_checked(
    guarded: AgentProtocol, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the desk token the download is refused: reported as not checked, saying why."""
    url, _, _ = await answered_task_with_upload(guarded)
    capsys.readouterr()
    assert await audit(guarded.stack, url, "--proxy-url", origin(guarded.stack)) == 0
    out = capsys.readouterr().out
    assert "file in/report.txt: not checked (ticketproxy refused the download (403)" in out
    assert "TICKETPROXY_DESK_TOKEN" in out


async def test_exported_files_are_audited_offline_from_a_folder(
    guarded: AgentProtocol, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--files DIR`` reads DIR/TASK/ARTIFACT: the exported copy matches, a changed one not."""
    url, task_id, artifact_id = await answered_task_with_upload(guarded)
    exported = tmp_path / "export" / task_id / artifact_id
    exported.parent.mkdir(parents=True)
    exported.write_bytes(CONTENT)
    capsys.readouterr()
    assert await audit(guarded.stack, url, "--files", str(tmp_path / "export")) == 0
    assert "file in/report.txt: digest matches" in capsys.readouterr().out
    exported.write_bytes(CONTENT + b"!")
    assert await audit(guarded.stack, url, "--files", str(tmp_path / "export")) == 1
    assert "file in/report.txt: DIGEST MISMATCH (issue says 20 bytes" in capsys.readouterr().out


@pytest.fixture
async def foreign_host() -> AsyncIterator[tuple[str, list[Any]]]:
    """Yield the origin of another server on 127.0.0.1 and the requests it received."""
    seen: list[Any] = []

    async def record(request: web.Request) -> web.StreamResponse:
        seen.append((request.path, dict(request.headers)))
        if request.path.startswith("/desk/api/artifacts/"):
            # As a configured ticketproxy gone wrong would: send the download elsewhere.
            raise web.HTTPFound("/elsewhere")
        return web.Response(body=CONTENT)

    app = web.Application()
    app.router.add_get("/{tail:.*}", record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}", seen
    finally:
        await runner.cleanup()


async def test_audit_does_not_follow_a_file_link_to_a_foreign_host(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    tmp_path: Path,
    foreign_host: tuple[str, list[Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A listed link to another host is reported, never fetched, and gets no desk token."""
    foreign, seen = foreign_host
    stack = await start_stack(
        github_sandbox,
        sandbox_config,
        tmp_path,
        step_wait=0.5,
        desk_url=foreign + "/desk/",
        allowed_hosts=("127.0.0.1",),
    )
    try:
        async with aiohttp.ClientSession() as session:
            ap = AgentProtocol(stack, session)
            url, _, _ = await answered_task_with_upload(ap)
            capsys.readouterr()
            args = ("--proxy-url", origin(stack), "--desk-token", DESK_TOKEN)
            assert await audit(stack, url, *args) == 0
    finally:
        await stop_stack(stack)
    out = capsys.readouterr().out
    assert (
        f"file in/report.txt: not checked (the link points to {foreign}, not to the "
        f"configured ticketproxy {origin(stack)}; not followed)"
    ) in out
    assert seen == []


async def test_audit_does_not_follow_a_redirect_from_the_configured_ticketproxy(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    tmp_path: Path,
    foreign_host: tuple[str, list[Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A redirect answering a file link is reported as not checked, and not followed."""
    configured, seen = foreign_host
    stack = await start_stack(
        github_sandbox,
        sandbox_config,
        tmp_path,
        step_wait=0.5,
        desk_url=configured + "/desk/",
        allowed_hosts=("127.0.0.1",),
    )
    try:
        async with aiohttp.ClientSession() as session:
            url, _, _ = await answered_task_with_upload(AgentProtocol(stack, session))
            capsys.readouterr()
            assert await audit(stack, url, "--proxy-url", configured) == 0
    finally:
        await stop_stack(stack)
    out = capsys.readouterr().out
    assert "file in/report.txt: not checked (ticketproxy answered a redirect (302)" in out
    assert [path for path, _ in seen if not path.startswith("/desk/")] == []
    assert len(seen) == 1
