"""What the API and the web pages share: the store, the users, the repositories, the clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from embedded_github.apps import InstallationGrant, new_installation_grant
from embedded_github.config import SandboxApp, SandboxConfig, SandboxUser
from embedded_github.store import SandboxStore
from embedded_github.store_rows import Author, CommentRow, RepoRow
from embedded_github.timestamps import to_epoch
from embedded_github.workflows import Workflows


@dataclass(frozen=True)
class CommentChange:
    """A comment was created, edited or deleted by ``actor`` (what webhooks report)."""

    action: Literal["created", "edited", "deleted"]
    comment: CommentRow
    actor: SandboxUser
    previous_body: str | None = None


class SandboxState:
    """The sandbox's users and repositories, over its SQLite store and its clock."""

    def __init__(
        self, config: SandboxConfig, *, store: SandboxStore, clock: Callable[[], datetime]
    ) -> None:
        """Register the configured users and make sure the configured repositories exist."""
        self.store = store
        self._clock = clock
        # Called after each comment change, in the request's task (webhook delivery).
        self.comment_listeners: list[Callable[[CommentChange], None]] = []
        self._by_login: dict[str, SandboxUser] = {}
        self._by_token: dict[str, SandboxUser] = {}
        for user in config.users:
            self.add_user(user)
        self.apps: dict[int, SandboxApp] = {app.id: app for app in config.apps}
        # Bots are found by login (comment authors) but have no token of their own:
        # they act only through installation tokens, which expire.
        self._bots: dict[str, SandboxUser] = {
            app.bot_login.lower(): app.bot_user(token=f"(App {app.id} has no token)")
            for app in config.apps
        }
        self._grants: dict[str, InstallationGrant] = {}
        self.repos_by_id: dict[int, RepoRow] = {repo.id: repo for repo in store.list_repos()}
        self._hosted: dict[str, RepoRow] = {}
        # Workflow files a test hosts, and the dispatches accepted (never run).
        self.workflows = Workflows()
        for full_name in config.repos:
            self.add_repo(full_name)

    def now(self) -> int:
        """Return the sandbox clock's time in whole epoch seconds."""
        return to_epoch(self._clock())

    def comment_changed(self, change: CommentChange) -> None:
        """Tell every listener that a comment changed."""
        for listener in self.comment_listeners:
            listener(change)

    def add_user(self, user: SandboxUser) -> None:
        """Register a user, replacing any earlier user with the same login."""
        previous = self._by_login.get(user.login.lower())
        if previous is not None:
            self._by_token.pop(previous.token, None)
        other = self._by_token.get(user.token)
        if other is not None and other.login.lower() != user.login.lower():
            raise ValueError(f"{user.login!r} would share a token with {other.login!r}")
        self._by_login[user.login.lower()] = user
        self._by_token[user.token] = user

    def add_repo(self, full_name: str) -> RepoRow:
        """Host a repository ``owner/name``, creating it if it is new."""
        repo = self.store.ensure_repo(full_name, now=self.now())
        self.repos_by_id[repo.id] = repo
        self._hosted[repo.full_name.lower()] = repo
        return repo

    @property
    def users(self) -> tuple[SandboxUser, ...]:
        """Return every registered user, in registration order."""
        return tuple(self._by_login.values())

    @property
    def repos(self) -> tuple[RepoRow, ...]:
        """Return every hosted repository, by name."""
        return tuple(sorted(self._hosted.values(), key=lambda repo: repo.full_name.lower()))

    def find_user(self, login: str) -> SandboxUser | None:
        """Return the user or App bot with a login (case-insensitive, as on GitHub), or None."""
        return self._by_login.get(login.lower()) or self._bots.get(login.lower())

    def user_for_token(self, token: str) -> SandboxUser | None:
        """Return the user a token belongs to, or None (also for an expired installation token)."""
        user = self._by_token.get(token)
        if user is not None:
            return user
        grant = self._grants.get(token)
        if grant is None:
            return None
        if self.now() >= grant.expires_at:
            # GitHub answers an expired installation token with 401 Bad credentials.
            del self._grants[token]
            return None
        return grant.user

    def installation_app(self, installation_id: int) -> SandboxApp | None:
        """Return the App an installation id belongs to, or None."""
        return next((a for a in self.apps.values() if a.installation_id == installation_id), None)

    def grant_installation_token(self, app: SandboxApp) -> InstallationGrant:
        """Mint an installation token for an App, valid for one hour of the sandbox clock."""
        grant = new_installation_grant(app, now=self.now())
        self._grants[grant.token] = grant
        return grant

    @property
    def grants(self) -> tuple[InstallationGrant, ...]:
        """Return the installation tokens handed out and not yet found expired, oldest first."""
        return tuple(self._grants.values())

    def find_repo(self, owner: str, name: str) -> RepoRow | None:
        """Return a hosted repository (case-insensitive), or None."""
        return self._hosted.get(f"{owner}/{name}".lower())


def author_of(user: SandboxUser) -> Author:
    """Return how a user is stored beside what they write."""
    return Author(login=user.login, id=user.id)


def can_write(user: SandboxUser | None) -> bool:
    """Return whether a user may push (write or admin permission)."""
    return user is not None and user.permission in ("admin", "write")
