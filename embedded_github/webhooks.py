"""Webhook delivery: signed ``issue_comment`` events POSTed in the background, as GitHub does.

A comment created, edited or deleted through the API or the web pages becomes one delivery
per registered target: GitHub's headers (``X-GitHub-Event``, ``X-GitHub-Delivery``,
``X-Hub-Signature-256``, ``User-Agent: GitHub-Hookshot/…``) and the documented payload
(action, issue, comment, repository, sender; ``changes`` for an edit). Deliveries go out one
at a time, in order, from a background task, so an API answer never waits for a receiver.
Each attempt is recorded with the receiver's status (0 when it could not be reached); like
GitHub, a failed delivery is not retried, though :meth:`WebhookSender.redeliver` sends one
again with the same delivery id, as GitHub's "Redeliver" button does.

Targets behave like an organization hook: they hear every hosted repository.
https://docs.github.com/en/webhooks/webhook-events-and-payloads#delivery-headers
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import json
import logging
import secrets
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from embedded_github.payloads import PayloadBuilder
from embedded_github.state import CommentChange, SandboxState

log = logging.getLogger(__name__)

COMMENT_EVENT = "issue_comment"
# GitHub gives a receiver 10 seconds to answer before it counts the delivery as failed.
DELIVERY_TIMEOUT = 10.0
_HOOKSHOT = f"GitHub-Hookshot/{secrets.token_hex(4)[:7]}"


@dataclass(frozen=True)
class WebhookTarget:
    """Where deliveries go, the secret they are signed with, and the events sent there."""

    url: str
    secret: str | None = field(default=None, repr=False)
    events: frozenset[str] = frozenset({COMMENT_EVENT})
    hook_id: int = 0


@dataclass(frozen=True)
class WebhookDelivery:
    """One delivery attempt as GitHub's "Recent Deliveries" lists it; status 0 = unreachable."""

    id: str
    event: str
    action: str | None
    url: str
    headers: Mapping[str, str]
    body: bytes
    status: int
    response: str
    redelivery: bool = False

    @property
    def payload(self) -> Any:
        """Return the JSON payload that was sent."""
        return json.loads(self.body)


@dataclass(frozen=True)
class _Job:
    target: WebhookTarget
    event: str
    action: str | None
    headers: Mapping[str, str]
    body: bytes
    redelivery: bool = False


def signature_for(body: bytes, secret: str) -> str:
    """Return GitHub's ``X-Hub-Signature-256`` value for a body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class WebhookSender:
    """Turn comment changes into signed deliveries, sent in order in the background."""

    def __init__(
        self,
        state: SandboxState,
        *,
        targets: Sequence[WebhookTarget] = (),
        origin: str = "http://127.0.0.1",
    ) -> None:
        """Listen to comment changes in ``state``; ``origin`` is replaced once the server runs."""
        self.origin = origin
        self.deliveries: list[WebhookDelivery] = []
        self._state = state
        self._ids = itertools.count(1)
        self._targets: list[WebhookTarget] = []
        self._queue: asyncio.Queue[_Job] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None
        for target in targets:
            self.add(target)
        state.comment_listeners.append(self.comment_changed)

    @property
    def targets(self) -> tuple[WebhookTarget, ...]:
        """Return every registered target."""
        return tuple(self._targets)

    def add(self, target: WebhookTarget) -> WebhookTarget:
        """Register a target, giving it a hook id if it has none, and return it."""
        if target.hook_id == 0:
            target = WebhookTarget(
                url=target.url,
                secret=target.secret,
                events=target.events,
                hook_id=500_000_000 + next(self._ids),
            )
        self._targets.append(target)
        return target

    def remove(self, target: WebhookTarget) -> None:
        """Stop delivering to a target."""
        self._targets = [t for t in self._targets if t.hook_id != target.hook_id]

    # Events -------------------------------------------------------------------------------

    def comment_changed(self, change: CommentChange) -> None:
        """Queue an ``issue_comment`` delivery for a comment created, edited or deleted."""
        wanted = [t for t in self._targets if COMMENT_EVENT in t.events]
        if not wanted:
            return
        payload = self.comment_payload(change)
        repo_id = change.comment.repo_id
        for target in wanted:
            self._enqueue(target, COMMENT_EVENT, change.action, payload, repo_id=repo_id)

    def comment_payload(self, change: CommentChange) -> dict[str, Any]:
        """Return GitHub's ``issue_comment`` payload for a change (built now, as GitHub does)."""
        build = PayloadBuilder(
            origin=self.origin,
            store=self._state.store,
            find_user=self._state.find_user,
            repos_by_id=self._state.repos_by_id,
        )
        comment = change.comment
        repo = self._state.repos_by_id[comment.repo_id]
        issue = self._state.store.get_issue(comment.repo_id, comment.issue_number)
        assert issue is not None
        payload: dict[str, Any] = {"action": change.action}
        if change.action == "edited":
            payload["changes"] = {"body": {"from": change.previous_body or ""}}
        payload["issue"] = build.issue(issue)
        payload["comment"] = build.comment(comment)
        payload["repository"] = build.repository(repo, viewer=None, now=self._state.now())
        payload["sender"] = build.user(change.actor.login, change.actor.id)
        return payload

    async def send(self, event: str, payload: Mapping[str, Any]) -> list[WebhookDelivery]:
        """Deliver any event (``ping``, ``issues`` …) to every target now; return the attempts."""
        action = payload.get("action")
        jobs = [
            self._job(target, event, action if isinstance(action, str) else None, payload)
            for target in self._targets
        ]
        return [await self._deliver(job) for job in jobs]

    async def ping(self) -> list[WebhookDelivery]:
        """Send GitHub's ``ping`` event to every target, as GitHub does when a hook is made."""
        deliveries = []
        for target in self._targets:
            payload = {
                "zen": "Keep it logically awesome.",
                "hook_id": target.hook_id,
                "hook": {
                    "type": "Repository",
                    "id": target.hook_id,
                    "name": "web",
                    "active": True,
                    "events": sorted(target.events),
                    "config": {"content_type": "json", "insecure_ssl": "0", "url": target.url},
                },
            }
            deliveries.append(await self._deliver(self._job(target, "ping", None, payload)))
        return deliveries

    async def redeliver(self, delivery_id: str) -> WebhookDelivery:
        """Send a recorded delivery again, same id, headers and body, and return the attempt."""
        original = next((d for d in self.deliveries if d.id == delivery_id), None)
        if original is None:
            raise KeyError(f"no webhook delivery {delivery_id!r} was recorded")
        target = next((t for t in self._targets if t.url == original.url), None)
        if target is None:
            target = WebhookTarget(url=original.url)
        job = _Job(
            target=target,
            event=original.event,
            action=original.action,
            headers=original.headers,
            body=original.body,
            redelivery=True,
        )
        return await self._deliver(job)

    # Sending ------------------------------------------------------------------------------

    def _job(
        self,
        target: WebhookTarget,
        event: str,
        action: str | None,
        payload: Mapping[str, Any],
        *,
        repo_id: int | None = None,
    ) -> _Job:
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": _HOOKSHOT,
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-GitHub-Hook-ID": str(target.hook_id),
        }
        if repo_id is not None:
            headers["X-GitHub-Hook-Installation-Target-Type"] = "repository"
            headers["X-GitHub-Hook-Installation-Target-ID"] = str(repo_id)
        if target.secret is not None:
            headers["X-Hub-Signature-256"] = signature_for(body, target.secret)
        return _Job(target=target, event=event, action=action, headers=headers, body=body)

    def _enqueue(
        self,
        target: WebhookTarget,
        event: str,
        action: str | None,
        payload: Mapping[str, Any],
        *,
        repo_id: int,
    ) -> None:
        job = self._job(target, event, action, payload, repo_id=repo_id)
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._worker = asyncio.get_running_loop().create_task(
                self._work(self._queue), name="sandbox-webhooks"
            )
        self._queue.put_nowait(job)

    async def _work(self, queue: asyncio.Queue[_Job]) -> None:
        while True:
            job = await queue.get()
            try:
                await self._deliver(job)
            finally:
                queue.task_done()

    async def _deliver(self, job: _Job) -> WebhookDelivery:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=DELIVERY_TIMEOUT)
            )
        status, text = 0, ""
        try:
            async with self._session.post(
                job.target.url, data=job.body, headers=dict(job.headers)
            ) as response:
                status = response.status
                text = await response.text(errors="replace")
        except (aiohttp.ClientError, TimeoutError) as exc:
            # GitHub records an unreachable receiver and does not try again on its own.
            text = f"{type(exc).__name__}: {exc}"
        delivery = WebhookDelivery(
            id=job.headers["X-GitHub-Delivery"],
            event=job.event,
            action=job.action,
            url=job.target.url,
            headers=job.headers,
            body=job.body,
            status=status,
            response=text,
            redelivery=job.redelivery,
        )
        self.deliveries.append(delivery)
        log.info("webhook %s %s -> %s: %d", job.event, delivery.id, job.target.url, status)
        return delivery

    # Life cycle ---------------------------------------------------------------------------

    async def drain(self) -> None:
        """Wait until every queued delivery has been attempted."""
        if self._queue is not None:
            await self._queue.join()

    async def close(self, *, grace: float = 2.0) -> None:
        """Finish queued deliveries for up to ``grace`` seconds, then stop and close the client."""
        if self._queue is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.join(), timeout=grace)
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        if self._session is not None:
            await self._session.close()
        self._queue, self._worker, self._session = None, None, None
