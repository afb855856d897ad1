"""Opening a delegation's children, and resuming it until every one is open or it is given up.

An accepted delegate act is recorded (with its sub-questions) when its jti is spent. Its
children are opened from that record: at once, then again while GitHub is unavailable
(backing off), and at start-up for what a crash left. Each sub-question gets one child:
its request key is derived from the act, so opening it again finds the same ticket (the
intake holds the key across replicas and looks for an issue an interrupted attempt
opened), and the store records one child per sub-question, queueing its link and its
addressee's ping in the same transaction. The parent hears once that GitHub held the rest
up, and once if it is given up (see :mod:`ticketing.desk.delegation_plan`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from ticketing.clock import Clock
from ticketing.errors import GitHubError, GitHubUnavailable, StoreUnavailable
from ticketing.github.write_kinds import WriteKind, encode_write
from ticketing.github.write_queue import WriteQueue
from ticketing.render.delegation import (
    ChildAnswer,
    render_addressee_ping,
    render_delegated_notice,
    render_delegation_given_up,
    render_delegation_stalled,
)
from ticketing.request import ChatRequest, Message
from ticketing.store.interface import TicketStore
from ticketing.store.model import DelegationAct, StoredDelegation, Ticket, TicketState

from .delegation_plan import (
    GIVEN_UP,
    OPENED,
    Finish,
    children_deadline,
    plan_delegation,
    retry_delay,
)
from .settings import DeskSettings

__all__ = ["DelegationOpener", "Submit"]

log = logging.getLogger(__name__)

# Intake.submit: a request (with its id and deadline) in, its ticket (issue opened) out.
Submit = Callable[[ChatRequest, str, datetime], Awaitable[Ticket]]


class DelegationOpener:
    """Open the children of accepted delegations, now or later, each sub-question once."""

    def __init__(
        self,
        *,
        store: TicketStore,
        followups: WriteQueue,
        settings: DeskSettings,
        clock: Clock,
        submit: Submit,
    ) -> None:
        self._store = store
        self._followups = followups
        self.settings = settings
        self._clock = clock
        self._submit = submit
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failures = 0

    def start(self) -> None:
        """Resume, now and whenever woken, the delegations left unfinished."""
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="delegation-opener")

    async def stop(self) -> None:
        """Stop resuming (what is left stays recorded for the next start)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def open(self, act: DelegationAct) -> None:
        """Open ``act``'s children now; if GitHub is unavailable, leave them to the retries."""
        try:
            await self._carry_out(act)
        except GitHubUnavailable as exc:
            self._stalled(act)
            log.warning("delegation %s held up, retried later: %s", act.jti[:8], exc)
            self._wake.set()
        except StoreUnavailable as exc:
            # Recorded already: the retries carry it out once the store answers again.
            log.warning("delegation %s waits for the store: %s", act.jti[:8], exc)
            self._wake.set()

    async def resume_all(self) -> float | None:
        """Carry out every unfinished delegation; return when to try again (None: when woken)."""
        acts = self._store.unfinished_delegations()
        for act in acts:
            try:
                await self._carry_out(act)
            except GitHubUnavailable as exc:
                self._failures += 1
                self._stalled(act)
                delay = retry_delay(self._failures, exc.retry_after)
                # Not past the earliest deadline of those still waiting: they are given up then.
                return min(delay, max(self._seconds_to_give_up(acts), 0.5))
        self._failures = 0
        return None

    async def _loop(self) -> None:
        delay: float | None = 0.0
        while True:
            if delay != 0.0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=delay)
            self._wake.clear()
            try:
                delay = await self.resume_all()
            except StoreUnavailable as exc:
                delay = exc.retry_after
            except Exception:
                log.exception("resuming delegations failed unexpectedly")
                delay = 30.0

    def _seconds_to_give_up(self, acts: list[DelegationAct]) -> float:
        now = self._clock()
        waits = [
            (children_deadline(act.delegated_at, parent.deadline) - now).total_seconds()
            for act in acts
            if (parent := self._store.get_ticket(act.parent_id)) is not None
        ]
        return min(waits, default=60.0)

    async def _carry_out(self, act: DelegationAct) -> None:
        """Open ``act``'s missing children, then finish it; GitHubUnavailable stops midway."""
        parent = self._store.get_ticket(act.parent_id)
        assert parent is not None
        assert parent.issue_number is not None
        opened = {d.position: d for d in self._children(act)}
        step = plan_delegation(
            questions=len(act.questions),
            opened=opened,
            parent_open=parent.state is TicketState.OPEN,
            delegated_at=act.delegated_at,
            parent_deadline=parent.deadline,
            now=self._clock(),
        )
        if isinstance(step, Finish):
            self._finish(act, parent, step.outcome, "GitHub was unavailable until their deadline")
            return
        for position in step.positions:
            try:
                await self._open_child(act, parent, position, step.deadline)
            except GitHubUnavailable:
                raise
            except GitHubError as exc:
                # A refusal waiting cannot fix (the intake ended that ticket): say so once.
                self._finish(act, parent, GIVEN_UP, f"GitHub refused to open one: {exc}")
                return
        self._finish(act, parent, OPENED, "")

    def _children(self, act: DelegationAct) -> list[StoredDelegation]:
        return [d for d in self._store.delegations_of(act.parent_id) if d.jti == act.jti]

    async def _open_child(
        self, act: DelegationAct, parent: Ticket, position: int, deadline: datetime
    ) -> None:
        """Open (or find again) sub-question ``position``'s child, and record it once."""
        ask, to = act.questions[position]
        request = self._child_request(parent, act, position, ask)
        child = await self._submit(request, f"{parent.request_id}.d{position + 1}", deadline)
        assert child.issue_number is not None
        assert parent.issue_number is not None
        writes = [
            (
                WriteKind.LINK_SUB_ISSUE.value,
                parent.issue_number,
                encode_write({"child": child.issue_number}, parent.request_id, None),
            )
        ]
        if to is not None:
            ping = render_addressee_ping(
                addressee=to, parent=parent.issue_number, reference=self.settings.ticket_ref(child)
            )
            writes.append(
                (
                    WriteKind.COMMENT.value,
                    child.issue_number,
                    encode_write({"body": ping}, child.request_id, None),
                )
            )
        delegation = StoredDelegation(
            child_id=child.id,
            parent_id=parent.id,
            position=position,
            question=ask,
            addressee=to,
            delegated_by=act.delegated_by,
            comment_id=act.comment_id,
            comment_url=act.comment_url,
            jti=act.jti,
            delegated_at=act.delegated_at,
        )
        # The link and the ping are queued with the record, by whoever records it first.
        if self._store.record_delegation(delegation, writes=writes, now=self._clock()):
            self._followups.wake()

    def _child_request(
        self, parent: Ticket, act: DelegationAct, position: int, ask: str
    ) -> ChatRequest:
        """Return the request a child ticket shows: where it comes from, and its question."""
        stored = self._store.request_for(parent.id)
        model = ChatRequest.from_json(stored).model if stored else "delegated"
        # Its own key: opening this sub-question again finds the same child.
        seed = f"delegation\0{parent.id}\0{act.jti}\0{position}"
        origin = (
            f"A sub-question of {self.settings.ticket_ref(parent)}, delegated by"
            f" {act.delegated_by}. Answer it with a signed answer for this issue; the agent"
            " receives only the final answer of the delegated ticket."
        )
        return ChatRequest(
            model=model,
            messages=(Message("system", origin), Message("user", ask)),
            client="delegation",
            key=hashlib.sha256(seed.encode("utf-8")).hexdigest(),
        )

    def _listed(self, act: DelegationAct) -> list[ChildAnswer]:
        listed: list[ChildAnswer] = []
        for child in self._children(act):
            ticket = self._store.get_ticket(child.child_id)
            if ticket is not None and ticket.issue_number is not None:
                listed.append(ChildAnswer(ticket.issue_number, child.question, child.addressee))
        return listed

    def _comment(self, parent: Ticket, body: str) -> list[tuple[str, int, str]]:
        assert parent.issue_number is not None
        payload = encode_write({"body": body}, parent.request_id, None)
        return [(WriteKind.COMMENT.value, parent.issue_number, payload)]

    def _stalled(self, act: DelegationAct) -> None:
        """Tell the parent, once per act, how many children opened and that the rest wait."""
        parent = self._store.get_ticket(act.parent_id)
        if parent is None or parent.issue_number is None:
            return
        notice = render_delegation_stalled(
            delegated_by=act.delegated_by,
            opened=[child.number for child in self._listed(act)],
            total=len(act.questions),
        )
        writes = self._comment(parent, notice)
        if self._store.note_delegation_stalled(act.jti, now=self._clock(), writes=writes):
            self._followups.wake()

    def _finish(self, act: DelegationAct, parent: Ticket, outcome: str, reason: str) -> None:
        """End the act: the split's notice once all are open, a clear notice if given up."""
        listed = self._listed(act)
        writes: list[tuple[str, int, str]] = []
        if outcome == OPENED:
            notice = render_delegated_notice(
                delegated_by=act.delegated_by,
                children=listed,
                comment_id=act.comment_id,
                digest=act.digest,
            )
            writes = self._comment(parent, notice)
        elif outcome == GIVEN_UP:
            opened = {child.position for child in self._children(act)}
            notice = render_delegation_given_up(
                delegated_by=act.delegated_by,
                opened=[child.number for child in listed],
                missing=[ask for i, (ask, _) in enumerate(act.questions) if i not in opened],
                reason=reason,
            )
            writes = self._comment(parent, notice)
        now = self._clock()
        if not self._store.end_delegation(act.jti, outcome=outcome, now=now, writes=writes):
            return
        self._followups.wake()
        log.info(
            "request_id=%s ticket %d: delegation by %s %s (%d child ticket(s))",
            parent.request_id,
            parent.id,
            act.delegated_by,
            outcome.replace("_", " "),
            len(listed),
        )
