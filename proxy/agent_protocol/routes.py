"""The Agent Protocol v1 at ``/ap/v1/agent``: nine operations over :class:`TaskDesk`.

A thin adapter: each handler reads its path, query and body (:mod:`.wire`), asks the
protocol-neutral task life cycle (:mod:`ticketing.tasks.life_cycle`) and writes the spec's
JSON. Tasks are private to the client key that made them (another key's task is a 404), as
runs are. ``POST .../steps`` waits ``TICKETPROXY_STEP_WAIT`` seconds at most, then answers
the step ``running`` with a null output; posting again returns that same step.

Editors follow a task issue's links to ``/desk/api/artifacts/{task}/{artifact}``, guarded
like the rest of the desk's data (loopback, or the desk token).
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

from aiohttp import BodyPartReader, web

from ticketing.clock import Clock, utc_now
from ticketing.tasks.life_cycle import ArtifactRefused, TaskDesk, TaskFinished, TaskNotFound

from ..bodies import read_body
from ..desk_page import DESK_PAGE, refusal
from ..errors import NotFound, PayloadTooLarge, RequestTimeout
from ..fronts import Front, door_front, register_front
from ..handlers import DESK, SETTINGS
from ..middleware import CLIENT, REQUEST_ID
from .wire import (
    UnprocessableEntity,
    artifact_json,
    envelope,
    page_from_query,
    paginated,
    read_input_body,
    step_json,
    task_json,
)

__all__ = ["AGENT_PROTOCOL_PREFIX", "install_agent_protocol", "public_origin", "task_desk"]

AGENT_PROTOCOL_PREFIX = "/ap/v1/agent"
_TASKS = AGENT_PROTOCOL_PREFIX + "/tasks"
_TASK = _TASKS + "/{task_id}"
# Bodies that carry only an input and a JSON object: the completions' limit is ample.
_FIELD_LIMIT = 64 * 1024


# Registered as a front only for the middleware: its error envelope and where its key is.
AGENT_PROTOCOL_FRONT: Front[None] = door_front("agent-protocol", envelope)


TASK_CLOCK: web.AppKey[Clock] = web.AppKey("task_clock")


def install_agent_protocol(app: web.Application, *, clock: Clock = utc_now) -> None:
    """Serve the Agent Protocol v1 under ``/ap/v1/agent`` and the editors' file links."""
    app[TASK_CLOCK] = clock
    register_front(app, AGENT_PROTOCOL_PREFIX, AGENT_PROTOCOL_FRONT)
    app.router.add_post(_TASKS, create_task)
    app.router.add_get(_TASKS, list_tasks)
    app.router.add_get(_TASK, get_task)
    app.router.add_post(_TASK + "/steps", execute_step)
    app.router.add_get(_TASK + "/steps", list_steps)
    app.router.add_get(_TASK + "/steps/{step_id}", get_step)
    app.router.add_post(_TASK + "/artifacts", upload_artifact)
    app.router.add_get(_TASK + "/artifacts", list_artifacts)
    app.router.add_get(_TASK + "/artifacts/{artifact_id}", download_artifact)
    app.router.add_get("/desk/api/artifacts/{task_id}/{artifact_id}", editor_download)


def public_origin(request: web.Request) -> str:
    """Return this server's origin as clients reach it: TICKETPROXY_DESK_URL's, or the Host's."""
    settings = request.app[SETTINGS]
    origin = (settings.desk_url or str(request.url.origin()) + "/").split("/desk/")[0]
    return origin.rstrip("/")


def task_desk(request: web.Request) -> TaskDesk:
    """Return the task life cycle over the running desk, with this server's limits."""
    desk = request.app[DESK]
    settings = request.app[SETTINGS]
    base = public_origin(request) + "/desk/api/artifacts/"
    return TaskDesk(
        desk=desk,
        store=desk.store,
        clock=request.app[TASK_CLOCK],
        max_artifact_bytes=settings.max_artifact_bytes,
        link_for=lambda task_id, artifact_id: base + f"{quote(task_id)}/{quote(artifact_id)}",
    )


def _not_found(exc: TaskNotFound) -> NotFound:
    return NotFound(str(exc), code="not_found")


async def _input_body(request: web.Request) -> tuple[str | None, dict[str, Any] | None]:
    settings = request.app[SETTINGS]
    raw = await read_body(
        request,
        limit=min(settings.max_body_bytes, 4 * 1024 * 1024),
        refusal="The body is larger than this ticketproxy accepts (TICKETPROXY_MAX_BODY_BYTES).",
        within=settings.body_timeout,
        setting="TICKETPROXY_BODY_TIMEOUT",
    )
    return read_input_body(raw)


# --- tasks -----------------------------------------------------------------------------------


async def create_task(request: web.Request) -> web.Response:
    """``POST /tasks``: store a task; its issue opens with the first step."""
    text, extra = await _input_body(request)
    task = task_desk(request).create_task(request[CLIENT], text, extra)
    return web.json_response(task_json(task, []))


async def list_tasks(request: web.Request) -> web.Response:
    """``GET /tasks``: this client key's tasks, paginated."""
    page = page_from_query(request.query)
    tasks = task_desk(request)
    found, total = tasks.tasks(request[CLIENT], page)
    items = [task_json(task, tasks.artifacts(task.client, task.task_id)[0]) for task in found]
    return web.json_response(paginated("tasks", items, total, page))


async def get_task(request: web.Request) -> web.Response:
    """``GET /tasks/{task_id}``: one task with its artifacts."""
    tasks, client, task_id = task_desk(request), request[CLIENT], request.match_info["task_id"]
    try:
        task = tasks.task(client, task_id)
        artifacts, _ = tasks.artifacts(client, task_id)
    except TaskNotFound as exc:
        raise _not_found(exc) from None
    return web.json_response(task_json(task, artifacts))


# --- steps -----------------------------------------------------------------------------------


async def execute_step(request: web.Request) -> web.Response:
    """``POST /tasks/{task_id}/steps``: the next step (body optional), or the running one."""
    text, extra = await _input_body(request)
    tasks, client, task_id = task_desk(request), request[CLIENT], request.match_info["task_id"]
    try:
        step = await tasks.post_step(
            client,
            task_id,
            text,
            extra,
            request_id=request[REQUEST_ID],
            wait=request.app[SETTINGS].step_wait,
        )
    except TaskNotFound as exc:
        raise _not_found(exc) from None
    except TaskFinished as exc:
        raise UnprocessableEntity(str(exc), code="task_finished") from None
    artifacts, _ = tasks.artifacts(client, task_id, step_id=step.step_id)
    return web.json_response(step_json(step, artifacts))


async def list_steps(request: web.Request) -> web.Response:
    """``GET /tasks/{task_id}/steps``: the task's steps, paginated, each up to date."""
    page = page_from_query(request.query)
    tasks, client, task_id = task_desk(request), request[CLIENT], request.match_info["task_id"]
    try:
        steps, total = tasks.steps(client, task_id, page)
    except TaskNotFound as exc:
        raise _not_found(exc) from None
    items = [
        step_json(step, tasks.artifacts(client, task_id, step_id=step.step_id)[0]) for step in steps
    ]
    return web.json_response(paginated("steps", items, total, page))


async def get_step(request: web.Request) -> web.Response:
    """``GET /tasks/{task_id}/steps/{step_id}``: ``completed`` once the signed answer landed."""
    tasks, client, task_id = task_desk(request), request[CLIENT], request.match_info["task_id"]
    try:
        step = tasks.refresh(tasks.step(client, task_id, request.match_info["step_id"]))
    except TaskNotFound as exc:
        raise _not_found(exc) from None
    artifacts, _ = tasks.artifacts(client, task_id, step_id=step.step_id)
    return web.json_response(step_json(step, artifacts))


# --- artifacts -------------------------------------------------------------------------------


async def upload_artifact(request: web.Request) -> web.Response:
    """``POST /tasks/{task_id}/artifacts``: multipart ``file`` and ``relative_path``."""
    tasks, client, task_id = task_desk(request), request[CLIENT], request.match_info["task_id"]
    try:
        tasks.task(client, task_id)
    except TaskNotFound as exc:
        raise _not_found(exc) from None
    file_name, relative_path, data = await _read_upload(request, tasks.max_artifact_bytes)
    try:
        artifact = tasks.upload(
            client, task_id, file_name=file_name, relative_path=relative_path, data=data
        )
    except ArtifactRefused as exc:
        raise UnprocessableEntity(str(exc), code="artifact_refused") from None
    return web.json_response(artifact_json(artifact))


async def _read_upload(request: web.Request, limit: int) -> tuple[str, str | None, bytes]:
    """Read the multipart body's ``file`` (capped at ``limit``) and ``relative_path``."""
    within = request.app[SETTINGS].body_timeout
    file_name: str | None = None
    relative_path: str | None = None
    data = b""
    try:
        async with asyncio.timeout(within):
            try:
                reader = await request.multipart()
            except (AssertionError, ValueError, KeyError):
                raise UnprocessableEntity(
                    "Upload the file as multipart/form-data with a `file` field.",
                    code="invalid_body",
                ) from None
            while (part := await reader.next()) is not None:
                if not isinstance(part, BodyPartReader):
                    raise UnprocessableEntity("Nested multipart is not accepted.")
                if part.name == "file":
                    file_name = part.filename or "file"
                    data = await _read_capped(part, limit)
                elif part.name == "relative_path":
                    relative_path = (await _read_capped(part, _FIELD_LIMIT)).decode(
                        "utf-8", "replace"
                    )
                else:
                    await part.release()
    except TimeoutError:
        raise RequestTimeout(
            f"The upload did not arrive within {within:g} seconds (TICKETPROXY_BODY_TIMEOUT).",
            code="body_timeout",
        ) from None
    if file_name is None:
        raise UnprocessableEntity("The upload has no `file` field.", param="file")
    return file_name, relative_path or None, data


async def _read_capped(part: BodyPartReader, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while chunk := await part.read_chunk(64 * 1024):
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(
                f"The file is larger than this ticketproxy's limit of {limit} bytes "
                "(TICKETPROXY_MAX_ARTIFACT_BYTES).",
                code="artifact_too_large",
            )
        chunks.append(chunk)
    return b"".join(chunks)


async def list_artifacts(request: web.Request) -> web.Response:
    """``GET /tasks/{task_id}/artifacts``: uploaded and agent-created files, paginated."""
    page = page_from_query(request.query)
    tasks, client, task_id = task_desk(request), request[CLIENT], request.match_info["task_id"]
    try:
        artifacts, total = tasks.artifacts(client, task_id, page)
    except TaskNotFound as exc:
        raise _not_found(exc) from None
    return web.json_response(
        paginated("artifacts", [artifact_json(item) for item in artifacts], total, page)
    )


async def download_artifact(request: web.Request) -> web.Response:
    """``GET /tasks/{task_id}/artifacts/{artifact_id}``: the file's bytes, as uploaded."""
    tasks, client, task_id = task_desk(request), request[CLIENT], request.match_info["task_id"]
    try:
        artifact, content = tasks.download(client, task_id, request.match_info["artifact_id"])
    except TaskNotFound as exc:
        raise _not_found(exc) from None
    return _file_response(artifact.file_name, content)


async def editor_download(request: web.Request) -> web.StreamResponse:
    """The link on a task's issue: a file, for editors (loopback or the desk token)."""
    reason = refusal(request, request.app[DESK_PAGE])
    if reason is not None:
        return web.json_response({"error": reason}, status=403)
    try:
        artifact, content = task_desk(request).file(
            request.match_info["task_id"], request.match_info["artifact_id"]
        )
    except TaskNotFound as exc:
        return web.json_response({"error": str(exc)}, status=404)
    return _file_response(artifact.file_name, content)


def _file_response(file_name: str, content: bytes) -> web.Response:
    # Always a download, never rendered: an uploaded .html must not run as this origin's page.
    quoted = quote(file_name, safe="")
    return web.Response(
        body=content,
        content_type="application/octet-stream",
        headers={
            "Content-Disposition": f"attachment; filename*=UTF-8''{quoted}",
            "X-Content-Type-Options": "nosniff",
        },
    )
