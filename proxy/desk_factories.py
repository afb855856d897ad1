"""The factories ``create_app`` builds the desk's parts with: ticket store, GitHub client and
coordinator, each a function of the settings.

Tests, and a store other than SQLite, pass their own to ``create_app``; these are what
production uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from proxy.settings import Settings
from ticketing.clock import Clock, Sleep
from ticketing.coordination import Coordinator, LocalCoordinator
from ticketing.github.app_auth import GitHubApp
from ticketing.github.client import GITHUB_API_URL, GitHubClient
from ticketing.github.throttle import SendLedger, WriteThrottle
from ticketing.store.interface import TicketStore
from ticketing.store.sqlite import SQLiteTicketStore

StoreFactory = Callable[[Settings], TicketStore]
CoordinatorFactory = Callable[[Settings], Coordinator]


class GitHubFactory(Protocol):
    """Build the GitHub client the desk talks through, on the app's clock and sleep."""

    def __call__(self, settings: Settings, /, *, clock: Clock, sleep: Sleep) -> GitHubClient:
        """Return a GitHub client for ``settings``."""
        ...


def open_store(settings: Settings) -> TicketStore:
    """Open the PostgreSQL store of the database URL, else SQLite in the data directory."""
    if settings.database_url is not None:
        # Imported here so that a process on SQLite never loads the PostgreSQL driver.
        from ticketing.store.postgres import PostgresTicketStore

        return PostgresTicketStore(settings.database_url)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return SQLiteTicketStore(settings.store_path)


def build_github(settings: Settings, *, clock: Clock, sleep: Sleep) -> GitHubClient:
    """Return the client for the settings' repository: a token or an App, writes paced."""
    return GitHubClient(
        api_url=settings.github_api_url or GITHUB_API_URL,
        token=settings.github_token,
        repo=settings.github_repo,
        app=github_app(settings),
        throttle=WriteThrottle(
            per_minute=settings.writes_per_minute,
            per_hour=settings.writes_per_hour,
            sleep=sleep,
            ledger=shared_write_budget(settings),
        ),
        sleep=sleep,
        clock=clock,
    )


def shared_write_budget(settings: Settings) -> SendLedger | None:
    """Return the write budget every replica shares, or None (this process's own).

    GitHub's limits are per token and replicas share one, so replicas keep one budget: in
    the database when there is one (it survives a restart of Redis, which keeps nothing on
    disk), else in Redis (SQLite replicas on one host). Alone, a process keeps its own.
    """
    # Imported where used, so that a single process never loads psycopg's or Redis's client.
    if settings.database_url is not None:
        from ticketing.postgres_write_budget import PostgresSendLedger

        return PostgresSendLedger(settings.database_url)
    if settings.redis_url is not None:
        from ticketing.redis_write_budget import RedisSendLedger

        return RedisSendLedger.from_url(settings.redis_url)
    return None


def github_app(settings: Settings) -> GitHubApp | None:
    """Return the GitHub App installation the settings name, or None (token or sandbox)."""
    if (
        settings.github_app_id is None
        or settings.github_app_private_key is None
        or settings.github_app_installation_id is None
    ):
        return None
    return GitHubApp(
        app_id=settings.github_app_id,
        installation_id=settings.github_app_installation_id,
        private_key=settings.github_app_private_key,
    )


def build_coordinator(settings: Settings) -> Coordinator:
    """Return how this process coordinates with other replicas: Redis, PostgreSQL, or alone.

    Redis, where configured, keeps the key locks, jtis, poll lease and wake-ups (SQLite
    replicas on one host need it; PostgreSQL replicas may keep that traffic off the
    database with it). With only a database URL, the database coordinates too.
    """
    # Imported where used, so that a single process never loads Redis's or psycopg's client.
    if settings.redis_url is not None:
        from ticketing.redis_coordination import RedisCoordinator

        return RedisCoordinator.from_url(settings.redis_url)
    if settings.database_url is not None:
        from ticketing.postgres_coordination import PostgresCoordinator

        return PostgresCoordinator(settings.database_url)
    return LocalCoordinator()
