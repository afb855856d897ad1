"""Drive ticketproxy's A2A front with the official a2a-sdk client, as a separate process.

Usage: ``python a2a_client.py BASE_URL CLIENT_KEY SCENARIO``; prints one JSON report. The
client resolves the agent card, takes its transport from ``supportedInterfaces`` and sends
the client key through the SDK's ``AuthInterceptor``, as the card's bearer scheme says.
Scenarios: ``card``, ``blocking``, ``non-blocking``, ``streamed``, ``input-required``,
``cancel``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx
from a2a.client import (
    AuthInterceptor,
    ClientCallContext,
    ClientConfig,
    CredentialService,
    create_client,
)
from a2a.client.card_resolver import A2ACardResolver
from a2a.helpers import new_text_message
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from google.protobuf import json_format


class Key(CredentialService):
    """The client key, for whichever scheme the card asks for."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.schemes: list[str] = []

    async def get_credentials(self, security_scheme_name: str, context: Any) -> str | None:
        self.schemes.append(security_scheme_name)
        return self.key


def _task(task: Task) -> dict[str, Any]:
    """Return what the tests look at in a task."""
    return {
        "id": task.id,
        "context_id": task.context_id,
        "state": TaskState.Name(task.status.state),
        "status_text": " ".join(p.text for p in task.status.message.parts),
        "artifacts": [
            {
                "name": artifact.name,
                "texts": [p.text for p in artifact.parts if p.HasField("text")],
                "raw": [p.raw.decode("utf-8", "replace") for p in artifact.parts if p.raw],
            }
            for artifact in task.artifacts
        ],
        "history": [(Role.Name(m.role), " ".join(p.text for p in m.parts)) for m in task.history],
    }


def _request(text: str, *, task_id: str | None = None) -> SendMessageRequest:
    message = new_text_message(text, task_id=task_id, role=Role.ROLE_USER)
    return SendMessageRequest(message=message)


async def _send(client: Any, request: SendMessageRequest) -> tuple[list[str], Task | None]:
    """Send a message; return the kinds of the events received and the last task seen."""
    kinds: list[str] = []
    task: Task | None = None
    event: StreamResponse
    async for event in client.send_message(request):
        kind = event.WhichOneof("payload")
        kinds.append(str(kind))
        if kind == "task":
            task = event.task
        elif kind == "status_update" and task is not None:
            task.status.CopyFrom(event.status_update.status)
        elif kind == "artifact_update" and task is not None:
            task.artifacts.append(event.artifact_update.artifact)
    return kinds, task


async def main(base_url: str, key: str, scenario: str) -> dict[str, Any]:
    """Run one scenario and return its report."""
    report: dict[str, Any] = {}
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, base_url).get_agent_card()
    report["card"] = json_format.MessageToDict(card)
    if scenario == "card":
        return report
    credentials = Key(key)
    config = ClientConfig(
        streaming=scenario == "streamed", polling=scenario in {"non-blocking", "cancel"}
    )
    client = await create_client(card, config, interceptors=[AuthInterceptor(credentials)])
    context = ClientCallContext()
    try:
        if scenario in {"blocking", "streamed"}:
            kinds, task = await _send(client, _request("Write a haiku about the sea."))
            report["events"] = kinds
            assert task is not None
            if scenario == "blocking":
                task = await client.get_task(GetTaskRequest(id=task.id), context=context)
            report["task"] = _task(task)
        elif scenario == "non-blocking":
            _, task = await _send(client, _request("Write a haiku about the sea."))
            assert task is not None
            report["first"] = _task(task)
            print(json.dumps({"task_id": task.id}), flush=True)
            while task.status.state == TaskState.TASK_STATE_WORKING:
                await asyncio.sleep(0.2)
                task = await client.get_task(GetTaskRequest(id=task.id), context=context)
            report["task"] = _task(task)
            listed = await client.list_tasks(ListTasksRequest(), context=context)
            report["listed"] = [t.id for t in listed.tasks]
        elif scenario == "input-required":
            _, first = await _send(client, _request("Write a haiku about the sea."))
            assert first is not None
            report["first"] = _task(first)
            _, second = await _send(client, _request("The North Sea.", task_id=first.id))
            assert second is not None
            report["task"] = _task(second)
        elif scenario == "cancel":
            _, task = await _send(client, _request("Write a haiku about the sea."))
            assert task is not None
            report["first"] = _task(task)
            print(json.dumps({"task_id": task.id}), flush=True)
            # Wait until the ticket is on GitHub (the test tells us on stdin).
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            canceled = await client.cancel_task(CancelTaskRequest(id=task.id), context=context)
            report["task"] = _task(canceled)
    finally:
        await client.close()
    report["schemes"] = sorted(set(credentials.schemes))
    return report


if __name__ == "__main__":
    result = asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
    print(json.dumps(result))
