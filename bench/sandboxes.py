"""The GitHub the benchmarks talk to: the embedded sandbox, in the benchmark's own process.

It holds the bot account the proxy posts as, the editor ``alice`` and the security reviewer
``carol``, whose signing keys are in a keyring file the proxy reads. Answers and approvals
are posted over the sandbox's REST API, as ``ticketproxy answer`` and ``approve`` would, so
that they reach the proxy by its poll or its webhook.
"""

from __future__ import annotations

import re
import secrets
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

from auth.keyring import add_key_to_keyring
from auth.keys import SigningKey, generate_signing_key
from auth.roles import Act, Role
from auth.sign import sign_comment
from embedded_github import (
    RecordedRequest,
    RunningSandbox,
    Sandbox,
    SandboxConfig,
    SandboxUser,
    start_sandbox,
)
from embedded_github.state import author_of
from ticketing.render.ticket import request_marker

REPO = "acme/agents"
BOT = "ticketproxy-bot"
EDITOR = "alice"
REVIEWER = "carol"


_NUMBER = re.compile(r"/[0-9]+(?=/|$)")


def route_of(request: RecordedRequest) -> str:
    """Name a recorded request by method and path, numbers replaced: ``PUT /repos/…/{n}/lock``."""
    return f"{request.method} {_NUMBER.sub('/{n}', request.path)}"


def requests_by_route(requests: Iterable[RecordedRequest]) -> Counter[str]:
    """Count recorded requests by :func:`route_of`."""
    return Counter(route_of(request) for request in requests)


def _token() -> str:
    return "ghp_" + secrets.token_urlsafe(27)[:36]


@dataclass
class BenchGitHub:
    """A running sandbox with a bot and an editor, and the editor's keyring."""

    running: RunningSandbox
    config: SandboxConfig
    editor_key: SigningKey
    reviewer_key: SigningKey
    keyring_path: Path

    @property
    def sandbox(self) -> Sandbox:
        """Return the sandbox itself (its state, recorded requests and webhook targets)."""
        return self.running.sandbox

    def token(self, login: str) -> str:
        """Return a sandbox user's token."""
        return next(u.token for u in self.config.users if u.login == login)

    def proxy_environ(self, data_dir: Path, **settings: str) -> dict[str, str]:
        """Return the ``TICKETPROXY_*`` variables that point a proxy at this sandbox."""
        environ = {
            "TICKETPROXY_GITHUB_TOKEN": self.token(BOT),
            "TICKETPROXY_GITHUB_API_URL": self.running.api_url,
            "TICKETPROXY_GITHUB_REPO": REPO,
            "TICKETPROXY_KEYRING": str(self.keyring_path),
            "TICKETPROXY_DATA_DIR": str(data_dir),
            "TICKETPROXY_LOG_LEVEL": "WARNING",
        }
        environ.update({f"TICKETPROXY_{name.upper()}": value for name, value in settings.items()})
        return environ

    async def answer(
        self, http: aiohttp.ClientSession, number: int, text: str, *, ticket: str | None = None
    ) -> None:
        """Post ``text`` on issue ``number`` as the editor, signed with the editor's key.

        ``ticket`` is the reference signed (``owner/repo#N/2`` for a later step of a run);
        the issue itself without it.
        """
        body = sign_comment(
            text, ticket=ticket or f"{REPO}#{number}", key=self.editor_key, now=datetime.now(UTC)
        )
        await self._post(http, number, body, EDITOR)

    async def approve(
        self, http: aiohttp.ClientSession, number: int, digest: str, *, ticket: str
    ) -> None:
        """Post the reviewer's signed approval of the answer whose text digest is ``digest``."""
        body = sign_comment(
            "Reviewed: fine.",
            ticket=ticket,
            key=self.reviewer_key,
            now=datetime.now(UTC),
            act=Act.APPROVE,
            judged_digest=digest,
        )
        await self._post(http, number, body, REVIEWER)

    async def _post(self, http: aiohttp.ClientSession, number: int, body: str, login: str) -> None:
        async with http.post(
            f"{self.running.api_url}/repos/{REPO}/issues/{number}/comments",
            json={"body": body},
            headers={"Authorization": f"token {self.token(login)}"},
        ) as resp:
            if resp.status != 201:
                raise RuntimeError(f"posting as {login} failed: {resp.status} {await resp.text()}")

    def add_ticket_issue(
        self, *, title: str, marker_key: str, labels: Iterable[str]
    ) -> tuple[int, str]:
        """Open an issue as the bot straight in the sandbox's state; return number and URL.

        For setting up many tickets at once: it skips the API, its limits and its cost.
        """
        state = self.sandbox.state
        owner, name = REPO.split("/")
        repo = state.find_repo(owner, name)
        bot = state.find_user(BOT)
        assert repo is not None
        assert bot is not None
        issue = state.store.create_issue(
            repo,
            title=title,
            body=f"{title}\n\n{request_marker(marker_key)}",
            author=author_of(bot),
            now=state.now(),
        )
        state.store.add_issue_labels(issue.id, state.store.ensure_labels(repo.id, labels))
        return issue.number, f"{self.running.web_url.rstrip('/')}/{REPO}/issues/{issue.number}"

    async def stop(self) -> None:
        """Stop the sandbox server and close its store."""
        await self.running.stop()
        self.sandbox.close()


async def start_bench_github(
    workdir: Path,
    *,
    rate_limit: int = 5000,
    creations_per_minute: int = 80,
    creations_per_hour: int = 500,
    clock: Callable[[], datetime] | None = None,
) -> BenchGitHub:
    """Start a sandbox on 127.0.0.1 with these limits, and write the editor's keyring."""
    config = SandboxConfig(
        users=(
            SandboxUser(BOT, 1, _token(), "admin", "ticketproxy bot"),
            SandboxUser(EDITOR, 1001, _token(), "write", "Alice Editor"),
            SandboxUser(REVIEWER, 1002, _token(), "write", "Carol Reviewer"),
        ),
        repos=(REPO,),
    )
    sandbox = Sandbox(
        config,
        clock=clock or (lambda: datetime.now(UTC)),
        rate_limit=rate_limit,
        creations_per_minute=creations_per_minute,
        creations_per_hour=creations_per_hour,
    )
    running = await start_sandbox(sandbox)
    key = generate_signing_key(login=EDITOR)
    keyring_path = workdir / "keyring.json"
    add_key_to_keyring(keyring_path, key, roles=(Role.EDITOR,), user_id=1001)
    reviewer = generate_signing_key(login=REVIEWER)
    add_key_to_keyring(keyring_path, reviewer, roles=(Role.REVIEWER,), user_id=1002)
    return BenchGitHub(
        running=running,
        config=config,
        editor_key=key,
        reviewer_key=reviewer,
        keyring_path=keyring_path,
    )
