"""The app factory: the desk's store, GitHub client and coordinator come from factories."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from auth.keyring import add_key_to_keyring
from auth.keys import generate_signing_key
from auth.roles import Role
from embedded_github import RunningSandbox, SandboxConfig
from proxy.app import create_app
from proxy.desk_factories import build_github
from proxy.handlers import DESK
from proxy.settings import Settings
from ticketing.clock import Clock, Sleep
from ticketing.coordination import Coordinator, LocalCoordinator
from ticketing.github.client import GitHubClient
from ticketing.store.sqlite import SQLiteTicketStore

REPO = "acme/agents"


def sandbox_settings(sandbox: RunningSandbox, config: SandboxConfig, tmp_path: Path) -> Settings:
    """Return settings for the bot on ``sandbox``: alice's key trusted, data under ``tmp_path``."""
    bot = next(user for user in config.users if user.login == "ticketproxy-bot")
    keyring = tmp_path / "keyring.json"
    add_key_to_keyring(
        keyring, generate_signing_key(login="alice"), roles=(Role.EDITOR,), user_id=1001
    )
    return Settings(
        github_repo=REPO,
        github_token=bot.token,
        github_api_url=sandbox.api_url,
        keyring_path=keyring,
        data_dir=tmp_path / "data",
    )


async def test_desk_is_built_from_the_factories_create_app_is_given(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """Each factory is called once with the settings, and the desk runs on what they made."""
    settings = sandbox_settings(github_sandbox, sandbox_config, tmp_path)
    calls: list[tuple[str, Settings]] = []
    store = SQLiteTicketStore(tmp_path / "injected.sqlite3")
    coordinator = LocalCoordinator()

    def store_factory(given: Settings) -> SQLiteTicketStore:
        calls.append(("store", given))
        return store

    def github_factory(given: Settings, *, clock: Clock, sleep: Sleep) -> GitHubClient:
        calls.append(("github", given))
        return build_github(given, clock=clock, sleep=sleep)

    def coordinator_factory(given: Settings) -> Coordinator:
        calls.append(("coordinator", given))
        return coordinator

    app = create_app(
        settings,
        bot_login="ticketproxy-bot",
        store_factory=store_factory,
        github_factory=github_factory,
        coordinator_factory=coordinator_factory,
    )
    assert calls == []
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        assert [name for name, _ in calls] == ["store", "coordinator", "github"]
        assert all(given is settings for _, given in calls)
        assert app[DESK].store is store
        # The default store was never opened: it would have made the data directory.
        assert not settings.data_dir.exists()
    finally:
        await runner.cleanup()


async def test_default_factories_open_sqlite_in_the_data_directory(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """Without factories the desk stores tickets in DATA_DIR/tickets.sqlite3."""
    settings = sandbox_settings(github_sandbox, sandbox_config, tmp_path)
    app = create_app(settings, bot_login="ticketproxy-bot")
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        assert isinstance(app[DESK].store, SQLiteTicketStore)
        assert settings.store_path.exists()
    finally:
        await runner.cleanup()
