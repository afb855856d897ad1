"""The Agent Protocol v1 over HTTP: tasks, steps that wait and come back, files, refusals."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.agent_protocol import AgentProtocol, answer_step, wait_for_running_step
from tests.helpers.stack import CLIENT_KEY, start_stack, stop_stack

OTHER_KEY = "another-client-key-9876543210"


async def _running_step(ap: AgentProtocol, task_id: str) -> tuple[asyncio.Task[Any], str]:
    """Post a body-less step in the background; return its request and the step's id."""
    pending = asyncio.create_task(ap.call("POST", f"/tasks/{task_id}/steps"))
    for _ in range(200):
        status, listed = await ap.call("GET", f"/tasks/{task_id}/steps")
        assert status == 200
        if listed["steps"] and listed["steps"][-1]["status"] == "running":
            return pending, str(listed["steps"][-1]["step_id"])
        await asyncio.sleep(0.05)
    raise AssertionError("the step never started")


def _upload(content: bytes, name: str = "report.txt", relative_path: str | None = None) -> Any:
    """Return a multipart body written by hand, so a hostile file name arrives verbatim."""
    boundary = "ap-test-boundary-7f3a"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n".encode()
        + content
        + b"\r\n"
    ]
    if relative_path is not None:
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="relative_path"\r\n\r\n'
            f"{relative_path}\r\n".encode()
        )
    payload = b"".join(parts) + f"--{boundary}--\r\n".encode()
    return aiohttp.BytesPayload(payload, content_type=f"multipart/form-data; boundary={boundary}")


async def test_body_less_step_waits_then_answers_running_and_a_repeat_returns_it(
    ap: AgentProtocol,
) -> None:
    """After the bounded wait the step is ``running`` with a null output; a repeat opens nothing."""
    task_id = await ap.create_task()
    status, step = await ap.call("POST", f"/tasks/{task_id}/steps")
    assert status == 200, step
    assert (step["status"], step["output"], step["is_last"]) == ("running", None, False)
    status, again = await ap.call("POST", f"/tasks/{task_id}/steps")
    assert again["step_id"] == step["step_id"]
    assert len(await ap.stack.issues()) == 1


async def test_question_then_final_answer_with_a_file_ends_the_task(ap: AgentProtocol) -> None:
    """A ``--ask`` answer is not last; the follow-up's final answer ends it with its file."""
    task_id = await ap.create_task("Write a haiku to haiku.txt.", additional_input={"n": 1})
    pending, step_id = await _running_step(ap, task_id)
    await answer_step(ap.stack, task_id, step_id, "About what subject?", ask=True)
    _, first = await asyncio.wait_for(pending, 10)
    assert (first["status"], first["is_last"], first["output"]) == (
        "completed",
        False,
        "About what subject?",
    )
    pending = asyncio.create_task(
        ap.call("POST", f"/tasks/{task_id}/steps", json={"input": "The sea."})
    )
    await asyncio.sleep(0.2)
    _, listed = await ap.call("GET", f"/tasks/{task_id}/steps")
    second_id = listed["steps"][-1]["step_id"]
    poem = "Waves fold into foam\nsalt wind writes on the harbour\nnight takes the last boat"
    await answer_step(
        ap.stack, task_id, second_id, f"Done.\n\n```artifact path=poems/haiku.txt\n{poem}\n```"
    )
    _, second = await asyncio.wait_for(pending, 10)
    assert (second["status"], second["is_last"], second["output"]) == ("completed", True, "Done.")
    [made] = second["artifacts"]
    assert (made["agent_created"], made["file_name"], made["relative_path"]) == (
        True,
        "haiku.txt",
        "poems/haiku.txt",
    )
    _, data = await ap.call("GET", f"/tasks/{task_id}/artifacts/{made['artifact_id']}", raw=True)
    assert data == (poem + "\n").encode()
    [issue] = await ap.stack.issues()
    assert issue.number == 1


async def test_get_step_shows_completed_once_the_signed_answer_lands(ap: AgentProtocol) -> None:
    """A client that polls sees ``running``, then ``completed`` after the answer."""
    task_id = await ap.create_task()
    _, step = await ap.call("POST", f"/tasks/{task_id}/steps")
    path = f"/tasks/{task_id}/steps/{step['step_id']}"
    assert (await ap.call("GET", path))[1]["status"] == "running"
    await answer_step(ap.stack, task_id, step["step_id"], "All done.")
    for _ in range(100):
        await ap.stack.settle()
        _, current = await ap.call("GET", path)
        if current["status"] == "completed":
            break
    assert (current["output"], current["is_last"]) == ("All done.", True)


async def test_expired_step_completes_as_last_saying_nobody_answered(ap: AgentProtocol) -> None:
    """Past the deadline the step ends ``completed``, ``is_last``, saying nobody answered."""
    task_id = await ap.create_task()
    _, step = await ap.call("POST", f"/tasks/{task_id}/steps")
    ap.stack.clock.offset += timedelta(hours=2)
    _, current = await ap.call("GET", f"/tasks/{task_id}/steps/{step['step_id']}")
    assert (current["status"], current["is_last"]) == ("completed", True)
    assert "No human answered" in current["output"]


async def test_step_posted_to_a_finished_task_is_refused(ap: AgentProtocol) -> None:
    """Once a step was the last, another step is a 422 saying the task is finished."""
    task_id = await ap.create_task()
    pending, step_id = await _running_step(ap, task_id)
    await answer_step(ap.stack, task_id, step_id, "Finished.")
    await asyncio.wait_for(pending, 10)
    status, body = await ap.call("POST", f"/tasks/{task_id}/steps", json={"input": "more"})
    assert status == 422
    assert "finished" in body["message"]


async def test_unknown_task_is_a_404_with_a_message(ap: AgentProtocol) -> None:
    """Every operation on a task id nobody created is a 404 ``{"message": ...}``."""
    for method, path in [
        ("GET", "/tasks/nope"),
        ("GET", "/tasks/nope/steps"),
        ("POST", "/tasks/nope/steps"),
        ("GET", "/tasks/nope/artifacts"),
        ("GET", "/tasks/nope/artifacts/nada"),
    ]:
        status, body = await ap.call(method, path)
        assert status == 404, (method, path)
        assert set(body) == {"message"}


async def test_unknown_step_is_a_404_with_a_message(ap: AgentProtocol) -> None:
    """A step id the task does not have is a 404 ``{"message": ...}``."""
    task_id = await ap.create_task()
    status, body = await ap.call("GET", f"/tasks/{task_id}/steps/nope")
    assert status == 404
    assert "nope" in body["message"]


async def test_task_of_another_client_key_is_a_404(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """Tasks are private to their client key: another key neither lists nor reads them."""
    stack = await start_stack(
        github_sandbox, sandbox_config, tmp_path, api_keys=(CLIENT_KEY, OTHER_KEY), step_wait=0.0
    )
    try:
        async with aiohttp.ClientSession() as session:
            owner = AgentProtocol(stack, session)
            thief = AgentProtocol(stack, session, key=OTHER_KEY)
            task_id = await owner.create_task()
            for method, path in [
                ("GET", f"/tasks/{task_id}"),
                ("POST", f"/tasks/{task_id}/steps"),
                ("GET", f"/tasks/{task_id}/steps"),
                ("GET", f"/tasks/{task_id}/artifacts"),
            ]:
                assert (await thief.call(method, path))[0] == 404, (method, path)
            assert (await thief.call("GET", "/tasks"))[1]["tasks"] == []
            assert (await owner.call("GET", "/tasks"))[1]["pagination"]["total_items"] == 1
    finally:
        await stop_stack(stack)


async def test_request_without_the_client_key_is_a_401_with_a_message(ap: AgentProtocol) -> None:
    """No key, no task: a 401 in the protocol's own error shape."""
    async with ap.session.get(ap.root + "/tasks") as response:
        assert response.status == 401
        assert set(await response.json()) == {"message"}


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"[1, 2]", b'{"input": 7}', b'{"additional_input": "x"}'],
)
async def test_malformed_task_body_is_a_422(ap: AgentProtocol, body: bytes) -> None:
    """A body that is not the spec's TaskRequestBody is a 422, and no task is made."""
    async with ap.session.post(
        ap.root + "/tasks", data=body, headers=ap.headers(**{"Content-Type": "application/json"})
    ) as response:
        assert response.status == 422
        assert "message" in await response.json()
    assert (await ap.call("GET", "/tasks"))[1]["tasks"] == []


async def test_page_size_that_is_not_a_positive_integer_is_a_422(ap: AgentProtocol) -> None:
    """``page_size=0`` (or a word) is refused, naming the parameter."""
    status, body = await ap.call("GET", "/tasks?page_size=0")
    assert status == 422
    assert "page_size" in body["message"]


async def test_uploaded_file_is_listed_shown_on_the_issue_and_downloaded_byte_for_byte(
    ap: AgentProtocol,
) -> None:
    """An upload keeps its bytes; the task's issue shows its size, sha256 and link."""
    task_id = await ap.create_task()
    content = b"\x00\xffbinary\r\nlines\n"
    status, artifact = await ap.call(
        "POST", f"/tasks/{task_id}/artifacts", data=_upload(content, relative_path="in/")
    )
    assert status == 200, artifact
    assert (artifact["agent_created"], artifact["file_name"]) == (False, "report.txt")
    status, data = await ap.call(
        "GET", f"/tasks/{task_id}/artifacts/{artifact['artifact_id']}", raw=True
    )
    assert data == content
    _, listed = await ap.call("GET", f"/tasks/{task_id}/artifacts")
    assert listed["pagination"] == {
        "total_items": 1,
        "total_pages": 1,
        "current_page": 1,
        "page_size": 10,
    }
    _, step = await ap.call("POST", f"/tasks/{task_id}/steps")
    ticket = await wait_for_running_step(ap.stack, task_id, step["step_id"])
    [issue] = await ap.stack.issues()
    assert ticket.issue_number == issue.number
    assert hashlib.sha256(content).hexdigest() in issue.body
    link = f"/desk/api/artifacts/{task_id}/{artifact['artifact_id']}"
    assert link in issue.body
    async with ap.session.get(ap.stack.base_url.removesuffix("/v1") + link) as response:
        assert await response.read() == content


async def test_artifact_over_the_configured_size_is_refused(ap: AgentProtocol) -> None:
    """A file over TICKETPROXY_MAX_ARTIFACT_BYTES is a 413, and nothing is stored."""
    task_id = await ap.create_task()
    status, body = await ap.call("POST", f"/tasks/{task_id}/artifacts", data=_upload(b"x" * 1025))
    assert status == 413
    assert "TICKETPROXY_MAX_ARTIFACT_BYTES" in body["message"]
    assert (await ap.call("GET", f"/tasks/{task_id}/artifacts"))[1]["artifacts"] == []


@pytest.mark.parametrize(
    ("name", "relative_path"),
    [
        ("report.txt", "../outside"),
        ("report.txt", "/etc"),
        ("report.txt", "in\x00side"),
        ("../report.txt", None),
    ],
)
async def test_artifact_with_a_path_escaping_its_folder_is_refused(
    ap: AgentProtocol, name: str, relative_path: str | None
) -> None:
    """``../``, an absolute path or NUL in the upload's path is a 422; nothing is stored."""
    task_id = await ap.create_task()
    status, body = await ap.call(
        "POST", f"/tasks/{task_id}/artifacts", data=_upload(b"x", name, relative_path)
    )
    assert status == 422, body
    assert (await ap.call("GET", f"/tasks/{task_id}/artifacts"))[1]["artifacts"] == []


async def test_signed_answer_naming_an_artifact_path_twice_is_refused_with_a_reply(
    ap: AgentProtocol,
) -> None:
    """The answer is not released: the bot says why, and the step keeps running."""
    task_id = await ap.create_task()
    _, step = await ap.call("POST", f"/tasks/{task_id}/steps")
    twice = "```artifact path=a.txt\none\n```\n\n```artifact path=a.txt\ntwo\n```"
    await answer_step(ap.stack, task_id, step["step_id"], twice)
    await ap.stack.settle()
    [reply] = await ap.stack.bot_replies(1)
    assert "each file may appear once" in reply
    _, current = await ap.call("GET", f"/tasks/{task_id}/steps/{step['step_id']}")
    assert current["status"] == "running"


async def test_restart_in_the_middle_of_a_running_step_loses_nothing(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """Stopped while a step runs, the next server completes it with the same ids."""
    first = await start_stack(github_sandbox, sandbox_config, tmp_path, step_wait=0.0)
    try:
        async with aiohttp.ClientSession() as session:
            ap = AgentProtocol(first, session)
            task_id = await ap.create_task()
            _, step = await ap.call("POST", f"/tasks/{task_id}/steps")
            await wait_for_running_step(first, task_id, step["step_id"])
    finally:
        await stop_stack(first)
    again = await start_stack(
        github_sandbox, sandbox_config, tmp_path, keys=first.keys, step_wait=5.0
    )
    try:
        async with aiohttp.ClientSession() as session:
            ap = AgentProtocol(again, session)
            await answer_step(again, task_id, step["step_id"], "Answered after the restart.")
            status, same = await ap.call("POST", f"/tasks/{task_id}/steps")
            assert status == 200, same
            assert same["step_id"] == step["step_id"]
            assert (same["status"], same["output"]) == ("completed", "Answered after the restart.")
            assert len(await again.issues()) == 1
    finally:
        await stop_stack(again)
