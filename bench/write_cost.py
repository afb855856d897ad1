"""Count the content-creating GitHub writes ticketproxy spends per answered ticket.

github.com allows a token about 80 content-creating requests a minute and 500 an hour
(docs: rate limits for the REST API, secondary rate limits); every POST, PATCH, PUT or
DELETE also costs five times a read in its point budget. So the writes one answered ticket
costs set how many tickets one token carries an hour: 500 / writes per ticket.

A real ``ticketproxy serve`` process works against an in-process sandbox GitHub that
records every request with the fields of its JSON body. One ticket at a time, three cases:

- plain: one chat completion, answered by alice's signed comment;
- step: the second request of the same agent run (its messages continue the first's
  delivered reply), answered; the first request is answered before and not counted;
- reviewed: a request offering a shell tool, answered with ``rm -rf build``, which the
  default review policy holds until carol, a security reviewer, signs an approval.

A ticket's writes are every write the proxy's token made from its request until its issue
is closed again and the proxy's write queue is empty (so writes sent late, after the
client's 200, are counted too). Reads (the poll, look-ups) are not writes and are left out.
Each case prints each kind of write with its mean and max per ticket, and the tickets an
hour one token carries at the mean. The sandbox's and the proxy's write budgets are raised,
so that pacing never delays a ticket: only the count matters here.

Before issue 18 a plain ticket cost 7 writes (the close, the "answered" label, 👀 and 🚀
apart), a step 8 and a reviewed ticket 9: 71, 62 and 55 tickets an hour.

Target: a plain ticket and a step each cost at most 4 writes at the max (125 tickets an hour
per token). Exits 1 otherwise. Run: ``python -m bench.write_cost`` (``--tickets``, default
20 per case).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from auth.comment import text_digest
from bench.processes import ServerProcess, proxy_process
from bench.sandboxes import BOT, EDITOR, REPO, BenchGitHub, route_of, start_bench_github
from embedded_github import RecordedRequest

TICKETS = 20
TARGET_WRITES = 4  # per plain ticket and per step, at the max
HOURLY_LIMIT = 500
POLL_INTERVAL = 0.2
SETTLE_WITHIN = 60.0
WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
SHELL = [
    {
        "type": "function",
        "function": {
            "name": "execute_shell",
            "description": "Run a shell command.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    }
]
DANGEROUS = '```tool_call\n{"name": "execute_shell", "arguments": {"command": "rm -rf build"}}\n```'


def write_kind(request: RecordedRequest) -> str | None:
    """Name what one recorded write did on GitHub; None for a read."""
    if request.method not in WRITE_METHODS:
        return None
    route = route_of(request)
    if route.endswith("/reactions"):
        return "reaction added"
    if route.endswith("/lock"):
        return "issue locked"
    if route == f"POST /repos/{REPO}/issues":
        return (
            "issue created (labels in its body)" if "labels" in request.fields else "issue created"
        )
    if route.endswith("/comments") and request.method == "POST":
        return "comment created"
    if "/issues/comments/" in route:
        return f"comment {'deleted' if request.method == 'DELETE' else 'edited'}"
    if route.endswith("/labels") or "/labels/" in route:
        return f"labels {'added' if request.method == 'POST' else 'set or removed'}"
    if request.method == "PATCH" and "/issues/" in route:
        # One PATCH may change the state and the labels together.
        changed = sorted(set(request.fields) - {"state_reason"})
        return f"issue edited ({', '.join(changed)})"
    return route


def bot_writes(requests: Iterable[RecordedRequest]) -> Counter[str]:
    """Count the proxy token's successful writes by kind."""
    kinds = (write_kind(r) for r in requests if r.login == BOT and 200 <= r.status < 300)
    return Counter(kind for kind in kinds if kind is not None)


@dataclass
class Case:
    """One kind of ticket and the writes each of its tickets cost."""

    name: str
    tickets: list[Counter[str]]

    def totals(self) -> list[int]:
        """Return each ticket's number of writes."""
        return [sum(ticket.values()) for ticket in self.tickets]

    def rows(self) -> list[str]:
        """Return this case's table: each kind of write, mean and max per ticket."""
        kinds = sorted({kind for ticket in self.tickets for kind in ticket})
        lines = [f"{self.name} ({len(self.tickets)} tickets)"]
        lines.append(f"  {'write':<44} | {'mean':>5} | {'max':>4}")
        lines.append("  " + "-" * 59)
        for kind in kinds:
            each = [ticket[kind] for ticket in self.tickets]
            lines.append(f"  {kind:<44} | {statistics.mean(each):>5.2f} | {max(each):>4}")
        totals = self.totals()
        mean = statistics.mean(totals)
        lines.append(f"  {'all writes':<44} | {mean:>5.2f} | {max(totals):>4}")
        lines.append(
            f"  tickets/hour under GitHub's {HOURLY_LIMIT}/h: {HOURLY_LIMIT / mean:.0f} at the "
            f"mean, {HOURLY_LIMIT // max(totals)} at the max"
        )
        return lines


class Desk:
    """The proxy, the sandbox and one HTTP session: asks, answers and waits for the writes."""

    def __init__(self, http: aiohttp.ClientSession, github: BenchGitHub, proxy: ServerProcess):
        """Bind the running parts."""
        self.http = http
        self.github = github
        self.proxy = proxy
        self._serial = 0

    async def issue(self, number: int) -> dict[str, Any]:
        """Return issue ``number`` as the editor sees it over the REST API."""
        async with self.http.get(
            f"{self.github.running.api_url}/repos/{REPO}/issues/{number}",
            headers={"Authorization": f"token {self.github.token(EDITOR)}"},
        ) as resp:
            return dict(await resp.json())

    async def queue_depth(self) -> float:
        """Return the proxy's write queue depth from its metrics."""
        async with self.http.get(self.proxy.url + "/metrics") as resp:
            text = await resp.text()
        for line in text.splitlines():
            if line.startswith("ticketproxy_write_queue_depth "):
                return float(line.split()[1])
        raise RuntimeError("the proxy's /metrics has no ticketproxy_write_queue_depth")

    async def until(self, what: str, check: Callable[[], Awaitable[bool]]) -> None:
        """Wait until ``check`` holds, up to SETTLE_WITHIN seconds."""
        deadline = time.monotonic() + SETTLE_WITHIN
        while not await check():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not happen within {SETTLE_WITHIN:g} s")
            await asyncio.sleep(0.05)

    async def settled(self, number: int) -> None:
        """Wait until issue ``number`` is closed and no write is left in the proxy's queue."""

        async def done() -> bool:
            closed = (await self.issue(number))["state"] == "closed"
            return closed and await self.queue_depth() == 0

        await self.until(f"closing issue #{number}", done)

    async def ticket(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[Any] | None = None,
        answer: str | None = None,
        reviewed: bool = False,
    ) -> tuple[Counter[str], list[dict[str, Any]]]:
        """Ask, answer (and approve), and return the writes and the conversation so far."""
        self._serial += 1
        since = len(self.github.sandbox.requests)
        text = answer or f"Answer {self._serial}: done."
        body: dict[str, Any] = {"model": "gpt-4o", "messages": messages}
        if tools:
            body["tools"] = tools
        async with self.http.post(self.proxy.url + "/v1/chat/completions", json=body) as resp:
            if resp.status != 200:
                raise RuntimeError(f"the proxy answered {resp.status}: {await resp.text()}")
            number = int(resp.headers["x-ticketproxy-ticket"].split("#")[0].rsplit("/", 1)[1])
            ref = resp.headers["x-ticketproxy-ref"]
            await self.github.answer(self.http, number, text, ticket=ref)
            if reviewed:

                async def held() -> bool:
                    labels = (await self.issue(number))["labels"]
                    return "needs-review" in {label["name"] for label in labels}

                await self.until(f"holding the answer on #{number}", held)
                await self.github.approve(self.http, number, text_digest(text), ticket=ref)
            completion = json.loads(await resp.read())
        message = completion["choices"][0]["message"]
        if not reviewed and message["content"] != text:
            raise RuntimeError(f"#{number}: the completion says {message!r}, not the answer")
        if reviewed and not message.get("tool_calls"):
            raise RuntimeError(f"#{number}: the approved command was not released: {message!r}")
        await self.settled(number)
        writes = bot_writes(self.github.sandbox.requests[since:])
        return writes, [*messages, {"role": "assistant", "content": message["content"]}]


async def measure(desk: Desk, tickets: int) -> list[Case]:
    """Answer ``tickets`` tickets of each case, one at a time, and return their writes."""
    plain, step, reviewed = (
        Case("plain ticket", []),
        Case("step of a run", []),
        Case("reviewed and approved command", []),
    )
    for index in range(tickets):
        writes, _ = await desk.ticket([{"role": "user", "content": f"Plain question {index}"}])
        plain.tickets.append(writes)
    for index in range(tickets):
        _, run = await desk.ticket([{"role": "user", "content": f"Run {index}: first step"}])
        run.append({"role": "user", "content": f"Run {index}: the next step"})
        writes, _ = await desk.ticket(run)
        step.tickets.append(writes)
    for index in range(tickets):
        prompt = [{"role": "user", "content": f"Clean up build folder {index}."}]
        writes, _ = await desk.ticket(prompt, tools=SHELL, answer=DANGEROUS, reviewed=True)
        reviewed.tickets.append(writes)
    return [plain, step, reviewed]


async def run(tickets: int) -> int:
    """Measure every case, print the tables and return the exit status."""
    with tempfile.TemporaryDirectory(prefix="ticketproxy-bench-") as tmp:
        workdir = Path(tmp)
        github = await start_bench_github(
            workdir, creations_per_minute=100_000, creations_per_hour=1_000_000
        )
        settings = {
            "poll_interval": str(POLL_INTERVAL),
            "writes_per_minute": "100000",
            "writes_per_hour": "1000000",
        }
        proxy = proxy_process(github.proxy_environ(workdir / "data", **settings), workdir=workdir)
        try:
            await proxy.start()
            timeout = aiohttp.ClientTimeout(total=SETTLE_WITHIN)
            async with aiohttp.ClientSession(timeout=timeout) as http:
                cases = await measure(Desk(http, github, proxy), tickets)
        finally:
            await proxy.stop()
            await github.stop()
    print(
        "GitHub writes (POST, PATCH, PUT, DELETE) by ticketproxy's token per answered ticket, "
        "from the request until its issue is closed and the write queue is empty"
    )
    for case in cases:
        print()
        print("\n".join(case.rows()))
    print()
    missed = [case for case in cases[:2] if max(case.totals()) > TARGET_WRITES]
    for case in missed:
        print(
            f"FAIL: a {case.name} cost up to {max(case.totals())} writes (target {TARGET_WRITES})",
            file=sys.stderr,
        )
    if missed:
        return 1
    print(
        f"OK: a plain ticket and a step of a run each cost at most {TARGET_WRITES} writes "
        f"({HOURLY_LIMIT // TARGET_WRITES} tickets an hour per token)"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.write_cost", description=__doc__)
    parser.add_argument("--tickets", type=int, default=TICKETS, help="tickets per case (20)")
    args = parser.parse_args(argv)
    return asyncio.run(run(args.tickets))


if __name__ == "__main__":
    sys.exit(main())
