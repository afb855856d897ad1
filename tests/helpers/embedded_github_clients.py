"""Clients the sandbox tests drive it with: PyGithub as ticketproxy uses it, and raw HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from github import Auth, Github

from embedded_github import RunningSandbox, SandboxConfig, SandboxUser


def user(config: SandboxConfig, login: str) -> SandboxUser:
    """Return the configured user with a login."""
    return next(candidate for candidate in config.users if candidate.login == login)


@contextmanager
def github_client(
    running: RunningSandbox, who: SandboxUser, *, lazy: bool = False, per_page: int = 30
) -> Iterator[Github]:
    """Yield a PyGithub client for a user, without PyGithub's retries or throttling."""
    # PyGithub sleeps 0.25 s between requests and 1 s between writes by default; the sandbox
    # has no reason to be spared, and the tests must stay fast.
    client = Github(
        base_url=running.api_url,
        auth=Auth.Token(who.token),
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
        lazy=lazy,
        per_page=per_page,
    )
    try:
        yield client
    finally:
        client.close()


def auth(who: SandboxUser) -> dict[str, str]:
    """Return the Authorization header for a user's token."""
    return {"Authorization": f"token {who.token}"}
