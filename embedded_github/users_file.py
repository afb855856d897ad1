"""The users file, re-read while the sandbox runs: a person added to it can sign in at once.

``ticketproxy sandbox add-user`` writes the file (atomically, mode 0600); a running sandbox
started with ``users_file=`` looks at the file's size and modification time every
``interval`` seconds and, when they change, registers the users (and repositories) it
lists. Nobody is removed (a removal still needs a restart), and a file caught invalid is
logged and skipped: the users registered so far keep working until it is whole again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Protocol

from embedded_github.config import (
    SandboxConfig,
    SandboxConfigError,
    SandboxUser,
    load_sandbox_config,
)

log = logging.getLogger(__name__)


class Registry(Protocol):
    """What the watch changes: the sandbox's users and repositories."""

    @property
    def users(self) -> tuple[SandboxUser, ...]:
        """Return every registered user."""
        ...

    def add_user(self, user: SandboxUser) -> None:
        """Register a user (or replace one with the same login)."""
        ...

    def add_repo(self, full_name: str) -> None:
        """Host one more repository ``owner/name``."""
        ...


class UsersFileWatch:
    """Register the users a file gains while the sandbox runs."""

    def __init__(self, registry: Registry, path: Path, *, interval: float = 0.5) -> None:
        self._registry = registry
        self.path = path
        self._interval = interval
        self._seen = self._stamp()
        self._task: asyncio.Task[None] | None = None

    def _stamp(self) -> tuple[int, int, int] | None:
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size, stat.st_ino

    def check(self) -> int:
        """Read the file if it changed; register new or changed users; return how many."""
        stamp = self._stamp()
        if stamp is None or stamp == self._seen:
            return 0
        try:
            config = load_sandbox_config(self.path)
        except SandboxConfigError as exc:
            log.warning("users file not reloaded: %s", exc)
            return 0
        self._seen = stamp
        return self._register(config)

    def _register(self, config: SandboxConfig) -> int:
        known = {user.login.lower(): user for user in self._registry.users}
        changed = 0
        for user in config.users:
            if known.get(user.login.lower()) != user:
                try:
                    self._registry.add_user(user)
                except ValueError as exc:
                    log.warning("users file: %s not registered: %s", user.login, exc)
                    continue
                log.info("users file: registered %s", user.login)
                changed += 1
        for repo in config.repos:
            self._registry.add_repo(repo)
        return changed

    def start(self) -> None:
        """Look at the file every ``interval`` seconds, in the background."""
        self._task = asyncio.create_task(self._watch(), name="sandbox-users-file")

    async def stop(self) -> None:
        """Stop looking."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            self.check()
