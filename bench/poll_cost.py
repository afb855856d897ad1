"""Measure GitHub requests per poll against the number of pending tickets.

DESIGN.md requirement (a): finding answers costs O(1) requests per poll, however many
tickets are pending, because the desk makes one conditional, repo-wide comment listing
per poll (``GET /repos/{o}/{r}/issues/comments?since=…`` with ``If-None-Match``), never one
request per ticket.

For N = 10, 1,000 and 5,000 open tickets this starts an in-process sandbox GitHub, fills
it with N ticket issues (marker and labels, written straight into the sandbox's store so
that GitHub's 80-per-minute creation limit does not apply), opens a ticket store mapping
N tickets to them, builds a :class:`ticketing.desk.Desk` over a real
:class:`ticketing.github.client.GitHubClient`, and calls ``poll_once()``:

- idle: nothing new, so each poll should be a single free ``304``;
- with 50 new signed answers spread over random tickets: each poll should still be one
  request (one page of up to 100 comments), whatever N is.

It prints a table and exits 1 if requests per poll grow with N. Run: ``python -m bench.poll_cost``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import secrets
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from auth.keyring import Keyring, add_key_to_keyring
from auth.keys import SigningKey, generate_signing_key
from auth.roles import Role
from auth.sign import sign_comment
from embedded_github import RunningSandbox, Sandbox, SandboxConfig, SandboxUser, start_sandbox
from embedded_github.state import author_of
from ticketing.desk import LABEL, LABEL_AWAITING, Desk, DeskSettings
from ticketing.github.client import GitHubClient
from ticketing.github.times import format_github_time
from ticketing.render.ticket import request_marker
from ticketing.store.interface import TicketStore
from ticketing.store.model import PollCursor
from ticketing.store.sqlite import SQLiteTicketStore

REPO = "acme/agents"
OWNER, NAME = REPO.split("/")
SIZES = (10, 1_000, 5_000)
NEW_COMMENTS = 50
IDLE_POLLS = 3
COMMENTS_PATH = f"/repos/{REPO}/issues/comments"


@dataclass(frozen=True)
class PollRun:
    """What a group of polls cost: GitHub requests, their statuses, and wall time."""

    polls: int
    requests: int
    statuses: Counter[int]
    seconds: float

    @property
    def per_poll(self) -> float:
        """Return the mean number of GitHub requests per poll."""
        return self.requests / self.polls

    @property
    def ms_per_poll(self) -> float:
        """Return the mean wall time of one poll in milliseconds."""
        return 1000 * self.seconds / self.polls

    def shown_statuses(self) -> str:
        """Return the status codes seen, e.g. ``3x304``."""
        return " ".join(f"{count}x{status}" for status, count in sorted(self.statuses.items()))


@dataclass(frozen=True)
class Result:
    """The measurements for one N."""

    pending: int
    idle: PollRun
    busy: PollRun
    accepted: int
    setup_seconds: float


def _token() -> str:
    return "ghp_" + secrets.token_urlsafe(27)[:36]


def _config() -> SandboxConfig:
    return SandboxConfig(
        users=(
            SandboxUser("ticketproxy-bot", 1, _token(), "admin", "ticketproxy bot"),
            SandboxUser("alice", 1001, _token(), "write", "Alice Editor"),
        ),
        repos=(REPO,),
    )


def _fill_sandbox(sandbox: Sandbox, count: int, now: int) -> list[tuple[int, str]]:
    """Create ``count`` ticket issues directly in the sandbox; return (number, key) pairs."""
    state = sandbox.state
    repo = state.find_repo(OWNER, NAME)
    bot = state.find_user("ticketproxy-bot")
    assert repo is not None
    assert bot is not None
    labels = state.store.ensure_labels(repo.id, [LABEL, LABEL_AWAITING])
    issues: list[tuple[int, str]] = []
    for index in range(count):
        key = f"{index:064x}"
        issue = state.store.create_issue(
            repo,
            title=f"Agent request {index}",
            body=f"Please answer request {index}.\n\n{request_marker(key)}",
            author=author_of(bot),
            now=now,
        )
        state.store.add_issue_labels(issue.id, labels)
        issues.append((issue.number, key))
    return issues


def _fill_store(store: TicketStore, issues: Sequence[tuple[int, str]], created: datetime) -> None:
    """Open one ticket per issue, as the desk would have."""
    for number, key in issues:
        ticket = store.open_ticket(
            key,
            request_id=f"req_bench_{number}",
            created=created,
            deadline=created + timedelta(hours=1),
        )
        store.set_issue(
            ticket.id, number=number, url=f"https://github.com/{REPO}/issues/{number}", now=created
        )


def _add_answers(
    sandbox: Sandbox, issues: Sequence[tuple[int, str]], key: SigningKey, rng: random.Random
) -> None:
    """Post signed answers from alice on random tickets, directly in the sandbox."""
    state = sandbox.state
    repo = state.find_repo(OWNER, NAME)
    alice = state.find_user("alice")
    assert repo is not None
    assert alice is not None
    # With replacement: at N=10 several answers land on one ticket, and only the first wins.
    for index, (number, _) in enumerate(rng.choices(list(issues), k=NEW_COMMENTS)):
        issue = state.store.get_issue(repo.id, number)
        assert issue is not None
        body = sign_comment(
            f"Answer {index}: run `ls`.",
            ticket=f"{REPO}#{number}",
            key=key,
            now=datetime.now(UTC),
        )
        state.store.create_comment(issue, body=body, author=author_of(alice), now=state.now())


async def _polls(desk: Desk, sandbox: Sandbox, count: int) -> PollRun:
    """Poll ``count`` times and return what those polls cost."""
    seen = len(sandbox.requests)
    requests = 0
    started = time.perf_counter()
    for _ in range(count):
        requests += await desk.poll_once()
    elapsed = time.perf_counter() - started
    made = [r for r in sandbox.requests[seen:] if r.path == COMMENTS_PATH]
    statuses = Counter(r.status for r in made)
    # The desk's own count and the sandbox's log must agree, or the table would lie.
    assert requests == len(sandbox.requests) - seen == len(made), (requests, len(made))
    return PollRun(polls=count, requests=requests, statuses=statuses, seconds=elapsed)


async def measure(pending: int, *, workdir: Path, rng: random.Random) -> Result:
    """Measure idle and busy polls with ``pending`` open tickets."""
    started = time.perf_counter()
    config = _config()
    sandbox = Sandbox(config)
    running: RunningSandbox = await start_sandbox(sandbox)
    created = datetime.now(UTC).replace(microsecond=0)
    issues = _fill_sandbox(sandbox, pending, sandbox.state.now())

    alice = generate_signing_key(login="alice")
    keyring_path = workdir / f"keyring-{pending}.json"
    add_key_to_keyring(keyring_path, alice, roles=(Role.EDITOR,), user_id=1001)
    keyring = Keyring.load(keyring_path)

    store = SQLiteTicketStore(workdir / f"tickets-{pending}.sqlite3")
    _fill_store(store, issues, created)
    settings = DeskSettings(repo=REPO)
    # Start where the desk would: at the first ticket's creation, minus the overlap.
    store.set_cursor(
        PollCursor(since=format_github_time(created - settings.poll_overlap), etag=None)
    )
    bot_token = next(u.token for u in config.users if u.login == "ticketproxy-bot")
    github = GitHubClient(api_url=running.api_url, token=bot_token, repo=REPO)
    desk = Desk(
        store=store,
        github=github,
        keyring=lambda: keyring,
        settings=settings,
        bot_login="ticketproxy-bot",
    )
    try:
        assert store.count_pending() == pending
        setup_seconds = time.perf_counter() - started
        # The first poll has no ETag yet (a 200 with an empty list); later ones are 304s.
        await _polls(desk, sandbox, 1)
        idle = await _polls(desk, sandbox, IDLE_POLLS)
        _add_answers(sandbox, issues, alice, rng)
        busy = await _polls(desk, sandbox, 1)
        accepted = pending - store.count_pending()
    finally:
        await github.close()
        store.close()
        await running.stop()
        sandbox.close()
    return Result(
        pending=pending, idle=idle, busy=busy, accepted=accepted, setup_seconds=setup_seconds
    )


def render_table(results: Sequence[Result]) -> str:
    """Return the results as a fixed-width table."""
    header = (
        f"{'N pending':>9} | {'req/poll idle':>13} | {'idle statuses':>13} | "
        f"{'idle ms/poll':>12} | {'req/poll +50':>12} | {'+50 statuses':>12} | "
        f"{'+50 ms/poll':>11} | {'accepted':>8} | {'setup s':>7}"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        lines.append(
            f"{r.pending:>9,} | {r.idle.per_poll:>13.2f} | {r.idle.shown_statuses():>13} | "
            f"{r.idle.ms_per_poll:>12.1f} | {r.busy.per_poll:>12.2f} | "
            f"{r.busy.shown_statuses():>12} | {r.busy.ms_per_poll:>11.1f} | "
            f"{r.accepted:>8} | {r.setup_seconds:>7.1f}"
        )
    return "\n".join(lines)


def grows_with_n(results: Sequence[Result]) -> list[str]:
    """Return why requests per poll grow with N (empty when they do not)."""
    smallest = results[0]
    problems: list[str] = []
    for r in results[1:]:
        if r.idle.per_poll > smallest.idle.per_poll:
            problems.append(
                f"idle: {r.idle.per_poll:g} requests/poll at N={r.pending} > "
                f"{smallest.idle.per_poll:g} at N={smallest.pending}"
            )
        if r.busy.per_poll > smallest.busy.per_poll:
            problems.append(
                f"+{NEW_COMMENTS} comments: {r.busy.per_poll:g} requests/poll at "
                f"N={r.pending} > {smallest.busy.per_poll:g} at N={smallest.pending}"
            )
    return problems


async def run(sizes: Sequence[int], seed: int) -> int:
    """Measure every size, print the table, and return the exit status."""
    rng = random.Random(seed)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="ticketproxy-bench-") as tmp:
        for pending in sizes:
            results.append(await measure(pending, workdir=Path(tmp), rng=rng))
    print(
        f"GitHub requests per poll_once() ({IDLE_POLLS} idle polls after a warm-up; "
        f"then 1 poll after {NEW_COMMENTS} new signed answers on random tickets)"
    )
    print(render_table(results))
    problems = grows_with_n(results)
    for problem in problems:
        print(f"FAIL: requests per poll grow with N: {problem}", file=sys.stderr)
    if not problems:
        print("OK: requests per poll do not grow with N")
    return 1 if problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.poll_cost", description=__doc__)
    parser.add_argument(
        "--sizes",
        type=lambda text: tuple(int(n) for n in text.split(",")),
        default=SIZES,
        help="comma-separated numbers of pending tickets (default 10,1000,5000)",
    )
    parser.add_argument("--seed", type=int, default=2026, help="seed for picking tickets")
    args = parser.parse_args(argv)
    return asyncio.run(run(args.sizes, args.seed))


if __name__ == "__main__":
    sys.exit(main())
