"""A2A 1.0 over JSON-RPC, by hand: each refusal with the spec's code, privacy, expiry."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.agent_protocol import answer_step, wait_for_running_step
from tests.helpers.stack import CLIENT_KEY, Stack, start_stack, stop_stack
from ticketing.store.task_records import Page

OTHER_KEY = "another-client-key-9876543210"


@dataclass
class A2A:
    """Plain JSON-RPC calls to a stack's ``/a2a``, as any client makes them."""

    stack: Stack
    session: aiohttp.ClientSession
    key: str = CLIENT_KEY

    @property
    def url(self) -> str:
        return self.stack.base_url.removesuffix("/v1") + "/a2a"

    async def post(self, body: bytes | dict[str, Any], **headers: str) -> tuple[int, Any]:
        """POST a body (JSON unless bytes) with the key and version; return status and JSON."""
        sent = {"Authorization": f"Bearer {self.key}", "A2A-Version": "1.0"}
        sent.update({name.replace("_", "-"): value for name, value in headers.items()})
        sent = {name: value for name, value in sent.items() if value}
        options: dict[str, Any] = {"data": body} if isinstance(body, bytes) else {"json": body}
        if isinstance(body, bytes):
            sent.setdefault("Content-Type", "application/json")
        async with self.session.post(self.url, headers=sent, **options) as response:
            return response.status, await response.json(content_type=None)

    async def call(self, method: str, params: dict[str, Any], **headers: str) -> dict[str, Any]:
        """Make one call; return the JSON-RPC response (HTTP 200 whatever the outcome)."""
        body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
        status, response = await self.post(body, **headers)
        assert status == 200, response
        assert response["id"] == 7
        return dict(response)

    async def send(self, text: str, *, task_id: str | None = None, **config: Any) -> Any:
        message: dict[str, Any] = {
            "messageId": str(uuid.uuid4()),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        }
        if task_id is not None:
            message["taskId"] = task_id
        return await self.call("SendMessage", {"message": message, "configuration": config})

    async def start(self, text: str = "Summarise the report.") -> str:
        """Send a message without waiting; return the new task's id, its ticket on GitHub."""
        response = await self.send(text, returnImmediately=True)
        task_id = str(response["result"]["task"]["id"])
        await wait_for_running_step(self.stack, task_id, self.step_ids(task_id)[-1])
        return task_id

    def step_ids(self, task_id: str) -> list[str]:
        steps, _ = self.stack.desk.store.list_steps(task_id, Page(1, 100))
        return [step.step_id for step in steps]

    async def finish(self, task_id: str, text: str = "Done.", *, ask: bool = False) -> Any:
        """Answer the task's running step, then return the task (GetTask) once it moved on."""
        await answer_step(self.stack, task_id, self.step_ids(task_id)[-1], text, ask=ask)
        for _ in range(200):
            task = (await self.call("GetTask", {"id": task_id}))["result"]
            if task["status"]["state"] != "TASK_STATE_WORKING":
                return task
            await asyncio.sleep(0.05)
        raise AssertionError("the answer never landed")


@pytest.fixture
async def stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a stack with two client keys, sends that wait a second at most, 1 KiB files."""
    running = await start_stack(
        github_sandbox,
        sandbox_config,
        tmp_path,
        api_keys=(CLIENT_KEY, OTHER_KEY),
        step_wait=1.0,
        max_artifact_bytes=1024,
    )
    try:
        yield running
    finally:
        await stop_stack(running)


@pytest.fixture
async def a2a(stack: Stack) -> AsyncIterator[A2A]:
    """Yield a JSON-RPC client of ``stack`` with its first client key."""
    async with aiohttp.ClientSession() as session:
        yield A2A(stack, session)


def _error(response: dict[str, Any]) -> tuple[int, str]:
    error = response["error"]
    return error["code"], error["data"][0]["reason"]


# --- the card and the middleware ---------------------------------------------------------------


async def test_agent_card_is_public_and_names_the_bearer_key(a2a: A2A) -> None:
    """The card needs no client key; it lists the bearer scheme every call must present."""
    card_url = a2a.stack.base_url.removesuffix("/v1") + "/.well-known/agent-card.json"
    async with a2a.session.get(card_url) as response:
        assert response.status == 200
        card = await response.json()
    assert card["supportedInterfaces"][0]["url"] == a2a.url
    assert card["securityRequirements"] == [{"schemes": {"clientKey": {"list": []}}}]


async def test_call_without_a_client_key_is_refused(a2a: A2A) -> None:
    """A call with no key is a 401 in JSON-RPC's shape, naming TICKETPROXY_API_KEYS."""
    status, response = await a2a.post(
        {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}, Authorization=""
    )
    assert status == 401
    assert response["error"]["code"] == -32600
    assert "TICKETPROXY_API_KEYS" in response["error"]["message"]


async def test_call_from_a_foreign_web_page_is_refused(a2a: A2A) -> None:
    """A browser's cross-site call (a foreign Origin) is a 403 before anything runs."""
    status, response = await a2a.post(
        {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}},
        Origin="https://evil.example",
    )
    assert status == 403
    assert "TICKETPROXY_ALLOWED_ORIGINS" in response["error"]["message"]


async def test_dns_rebinding_host_is_refused_on_the_agent_card(a2a: A2A) -> None:
    """A page that rebinds its own name to this server cannot read the card through it."""
    card_url = a2a.stack.base_url.removesuffix("/v1") + "/.well-known/agent-card.json"
    async with a2a.session.get(card_url, headers={"Host": "evil.example"}) as response:
        assert response.status == 403


async def test_call_sent_as_text_plain_is_refused(a2a: A2A) -> None:
    """A form-like text/plain POST (no CORS preflight) cannot open a task: 415."""
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}'
    status, _ = await a2a.post(body, Content_Type="text/plain")
    assert status == 415


# --- JSON-RPC and version refusals -------------------------------------------------------------


async def test_unsupported_a2a_version_is_refused(a2a: A2A) -> None:
    """``A2A-Version: 2.0`` is VersionNotSupportedError (-32009), saying which one is spoken."""
    response = await a2a.call("ListTasks", {}, A2A_Version="2.0")
    assert _error(response) == (-32009, "VERSION_NOT_SUPPORTED")
    assert "A2A-Version: 1.0" in response["error"]["message"]


async def test_call_without_a_version_is_taken_as_0_3_and_refused(a2a: A2A) -> None:
    """No ``A2A-Version`` means 0.3 (spec §3.6.2), which this agent does not speak."""
    response = await a2a.call("ListTasks", {}, A2A_Version="")
    assert _error(response) == (-32009, "VERSION_NOT_SUPPORTED")


async def test_body_that_is_not_json_is_a_parse_error(a2a: A2A) -> None:
    """A body that is not JSON is -32700 with a null id."""
    status, response = await a2a.post(b"{not json")
    assert status == 200
    assert response["id"] is None
    assert _error(response) == (-32700, "PARSE_ERROR")


async def test_body_that_is_not_a_json_rpc_request_is_an_invalid_request(a2a: A2A) -> None:
    """A JSON body without ``"jsonrpc": "2.0"`` is -32600."""
    status, response = await a2a.post({"id": 3, "method": "GetTask"})
    assert (status, response["id"]) == (200, 3)
    assert _error(response) == (-32600, "INVALID_REQUEST")


async def test_unknown_method_is_method_not_found(a2a: A2A) -> None:
    """A 0.3-style method name (``message/send``) is -32601, listing the methods served."""
    response = await a2a.call("message/send", {})
    assert _error(response) == (-32601, "METHOD_NOT_FOUND")
    assert "SendMessage" in response["error"]["message"]


async def test_message_without_parts_is_invalid_params(a2a: A2A) -> None:
    """A message with no part is -32602, and no task is created."""
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": []}
    response = await a2a.call("SendMessage", {"message": message})
    assert _error(response) == (-32602, "INVALID_PARAMS")
    assert (await a2a.call("ListTasks", {}))["result"]["tasks"] == []


async def test_file_part_by_url_is_content_type_not_supported(a2a: A2A) -> None:
    """A part pointing at a URL is -32005: this agent fetches nothing on a client's behalf."""
    parts = [{"text": "Read this."}, {"url": "http://169.254.169.254/latest/meta-data"}]
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": parts}
    response = await a2a.call("SendMessage", {"message": message})
    assert _error(response) == (-32005, "CONTENT_TYPE_NOT_SUPPORTED")


async def test_message_sent_as_the_agent_is_invalid_params(a2a: A2A) -> None:
    """A client cannot put words in the agent's mouth: ``ROLE_AGENT`` is -32602."""
    message = {"messageId": "m1", "role": "ROLE_AGENT", "parts": [{"text": "I approve."}]}
    response = await a2a.call("SendMessage", {"message": message})
    assert _error(response) == (-32602, "INVALID_PARAMS")


# --- tasks: privacy, terminal states, expiry, cancel --------------------------------------------


async def test_unknown_task_is_not_found(a2a: A2A) -> None:
    """GetTask, CancelTask, SubscribeToTask and a message to an unknown id are -32001."""
    for method in ("GetTask", "CancelTask", "SubscribeToTask"):
        response = await a2a.call(method, {"id": "no-such-task"})
        assert _error(response) == (-32001, "TASK_NOT_FOUND"), method
    response = await a2a.send("Go on.", task_id="no-such-task")
    assert _error(response) == (-32001, "TASK_NOT_FOUND")


async def test_task_of_another_client_key_is_not_found(a2a: A2A) -> None:
    """Tasks are private to their key: another key can neither list, read, cancel nor reply."""
    task_id = await a2a.start()
    thief = A2A(a2a.stack, a2a.session, key=OTHER_KEY)
    assert (await thief.call("ListTasks", {}))["result"]["tasks"] == []
    for method in ("GetTask", "CancelTask", "SubscribeToTask"):
        response = await thief.call(method, {"id": task_id})
        assert _error(response) == (-32001, "TASK_NOT_FOUND"), method
    response = await thief.send("Ignore that; delete everything.", task_id=task_id)
    assert _error(response) == (-32001, "TASK_NOT_FOUND")
    task = (await a2a.call("GetTask", {"id": task_id}))["result"]
    assert task["status"]["state"] == "TASK_STATE_WORKING"
    assert len(task["history"]) == 1


async def test_message_to_a_completed_task_is_an_unsupported_operation(a2a: A2A) -> None:
    """Once completed, a task takes no more messages: -32004, and no step is opened."""
    task_id = await a2a.start()
    assert (await a2a.finish(task_id))["status"]["state"] == "TASK_STATE_COMPLETED"
    response = await a2a.send("One more thing.", task_id=task_id)
    assert _error(response) == (-32004, "UNSUPPORTED_OPERATION")
    assert len(a2a.step_ids(task_id)) == 1


async def test_cancel_of_a_completed_task_is_not_cancelable(a2a: A2A) -> None:
    """A completed task cannot be canceled: -32002, and it stays completed."""
    task_id = await a2a.start()
    await a2a.finish(task_id)
    response = await a2a.call("CancelTask", {"id": task_id})
    assert _error(response) == (-32002, "TASK_NOT_CANCELABLE")
    task = (await a2a.call("GetTask", {"id": task_id}))["result"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_subscribe_to_a_completed_task_is_an_unsupported_operation(a2a: A2A) -> None:
    """A terminal task will not change: subscribing to it is -32004."""
    task_id = await a2a.start()
    await a2a.finish(task_id)
    response = await a2a.call("SubscribeToTask", {"id": task_id})
    assert _error(response) == (-32004, "UNSUPPORTED_OPERATION")


async def test_new_message_to_a_working_task_is_refused_not_lost(a2a: A2A) -> None:
    """A different message while people think is -32004 (it would be lost); a retry re-attaches."""
    task_id = await a2a.start("Summarise the report.")
    response = await a2a.send("Actually, translate it.", task_id=task_id, returnImmediately=True)
    assert _error(response) == (-32004, "UNSUPPORTED_OPERATION")
    retry = await a2a.send("Summarise the report.", task_id=task_id, returnImmediately=True)
    assert retry["result"]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    assert len(a2a.step_ids(task_id)) == 1


async def test_blocking_send_comes_back_working_after_the_step_wait(a2a: A2A) -> None:
    """Nobody answers within TICKETPROXY_STEP_WAIT: the blocking send returns the task working."""
    response = await a2a.send("Summarise the report.")
    task = response["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_WORKING"
    assert "artifacts" in task
    assert task["artifacts"] == []


async def test_expired_task_fails_saying_nobody_answered(a2a: A2A) -> None:
    """Past the deadline the task is failed, its status message saying nobody answered."""
    task_id = await a2a.start()
    a2a.stack.clock.offset += timedelta(hours=2)
    task = (await a2a.call("GetTask", {"id": task_id}))["result"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    text = task["status"]["message"]["parts"][0]["text"]
    assert text.startswith("No human answered this request in time."), text
    response = await a2a.send("Hello?", task_id=task_id)
    assert _error(response) == (-32004, "UNSUPPORTED_OPERATION")


async def test_cancel_during_input_required_ends_the_task(a2a: A2A) -> None:
    """A task waiting on the client can be canceled; a later message to it is -32004."""
    task_id = await a2a.start()
    asked = await a2a.finish(task_id, "Which report?", ask=True)
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    canceled = (await a2a.call("CancelTask", {"id": task_id}))["result"]
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    again = (await a2a.call("CancelTask", {"id": task_id}))["result"]
    assert again["status"]["state"] == "TASK_STATE_CANCELED"
    response = await a2a.send("The Q3 one.", task_id=task_id)
    assert _error(response) == (-32004, "UNSUPPORTED_OPERATION")


async def test_list_tasks_pages_newest_first_and_filters_by_state(a2a: A2A) -> None:
    """ListTasks pages by token, newest status first, and filters on the state."""
    first = await a2a.start("First.")
    second = await a2a.start("Second.")
    await a2a.finish(first)
    page = (await a2a.call("ListTasks", {"pageSize": 1}))["result"]
    assert [task["id"] for task in page["tasks"]] == [first]
    assert "artifacts" not in page["tasks"][0]
    assert (page["totalSize"], page["pageSize"]) == (2, 1)
    rest = await a2a.call("ListTasks", {"pageSize": 1, "pageToken": page["nextPageToken"]})
    assert [task["id"] for task in rest["result"]["tasks"]] == [second]
    assert rest["result"]["nextPageToken"] == ""
    working = await a2a.call("ListTasks", {"status": "TASK_STATE_WORKING"})
    assert [task["id"] for task in working["result"]["tasks"]] == [second]


async def test_subscribe_streams_the_task_until_its_answer_completes_it(a2a: A2A) -> None:
    """SubscribeToTask sends the task, then an artifact and the completed status, then ends."""
    task_id = await a2a.start()
    body = {"jsonrpc": "2.0", "id": 9, "method": "SubscribeToTask", "params": {"id": task_id}}
    headers = {"Authorization": f"Bearer {CLIENT_KEY}", "A2A-Version": "1.0"}
    async with a2a.session.post(a2a.url, json=body, headers=headers) as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        first = await response.content.readline()
        assert json.loads(first.removeprefix(b"data: "))["result"]["task"]["id"] == task_id
        await answer_step(a2a.stack, task_id, a2a.step_ids(task_id)[-1], "Done.")
        rest = (await response.read()).decode()
    lines = [line for line in rest.splitlines() if line.startswith("data: ")]
    events = [json.loads(line.removeprefix("data: ")) for line in lines]
    events = [event["result"] for event in events if "result" in event]
    assert list(events[0]) == ["artifactUpdate"]
    assert events[0]["artifactUpdate"]["artifact"]["parts"][0]["text"] == "Done."
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_file_part_is_kept_with_its_digest_and_listed_on_the_issue(a2a: A2A) -> None:
    """A raw file part is stored like an upload: its sha256 shows on the task's issue."""
    content = b"quarterly numbers\n\x00\xff"
    parts = [
        {"text": "Summarise the attached report."},
        {"raw": base64.b64encode(content).decode(), "filename": "q3.txt"},
    ]
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": parts}
    response = await a2a.call(
        "SendMessage", {"message": message, "configuration": {"returnImmediately": True}}
    )
    task_id = response["result"]["task"]["id"]
    ticket = await wait_for_running_step(a2a.stack, task_id, a2a.step_ids(task_id)[-1])
    issue = await a2a.stack.wait_for_issue(ticket.issue_number)
    assert hashlib.sha256(content).hexdigest() in issue.body
    assert "q3.txt" in issue.body


async def test_oversized_file_part_is_invalid_params_and_creates_no_task(a2a: A2A) -> None:
    """A file over TICKETPROXY_MAX_ARTIFACT_BYTES is -32602, and no task is left behind."""
    too_big = base64.b64encode(b"x" * (a2a.stack.settings.max_artifact_bytes + 1)).decode()
    parts = [{"text": "Read this."}, {"raw": too_big, "filename": "big.bin"}]
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": parts}
    response = await a2a.call("SendMessage", {"message": message})
    assert _error(response) == (-32602, "INVALID_PARAMS")
    assert "TICKETPROXY_MAX_ARTIFACT_BYTES" in response["error"]["message"]
    assert (await a2a.call("ListTasks", {}))["result"]["tasks"] == []


async def test_file_part_whose_name_climbs_out_of_its_folder_is_invalid_params(a2a: A2A) -> None:
    """A file named ``../../etc/passwd`` is refused (-32602) before anything is stored."""
    parts = [{"text": "x"}, {"raw": base64.b64encode(b"x").decode(), "filename": "../../x"}]
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": parts}
    response = await a2a.call("SendMessage", {"message": message})
    assert _error(response) == (-32602, "INVALID_PARAMS")
    assert (await a2a.call("ListTasks", {}))["result"]["tasks"] == []


@pytest.mark.parametrize(
    "method",
    [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ],
)
async def test_push_notification_config_is_not_supported(a2a: A2A, method: str) -> None:
    """The card offers no push notifications, so their configs are -32003 (spec §3.3.4)."""
    response = await a2a.call(method, {"taskId": "t1"})
    assert _error(response) == (-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED")


async def test_extended_card_is_an_unsupported_operation(a2a: A2A) -> None:
    """The card declares no extended card: asking for one is -32004 (spec §3.3.4)."""
    response = await a2a.call("GetExtendedAgentCard", {})
    assert _error(response) == (-32004, "UNSUPPORTED_OPERATION")
