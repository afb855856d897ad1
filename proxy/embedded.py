"""The embedded default: a local GitHub-compatible server with a demo editor.

When no GitHub token is configured, ``ticketproxy serve`` starts the sandbox from
:mod:`embedded_github` next to the proxy, with two users (the bot ticketproxy posts as,
and a demo editor) and a keyring holding the demo editor's public key. Everything lives in
the data directory and is made once, on first start.
"""

from __future__ import annotations

import errno
import ipaddress
import secrets
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from auth.keyring import add_key_to_keyring
from auth.keys import generate_signing_key, write_signing_key
from auth.roles import Role
from embedded_github import (
    RunningSandbox,
    Sandbox,
    SandboxConfig,
    SandboxUser,
    load_sandbox_config,
    save_sandbox_config,
    start_sandbox,
)

from .errors import ConfigError
from .settings import Settings

BOT_LOGIN = "ticketproxy-bot"
DEMO_EDITOR = "alice"
DEMO_EDITOR_ID = 1001


@dataclass(frozen=True)
class DemoIdentity:
    """Who is who in the embedded sandbox."""

    config: SandboxConfig
    bot: SandboxUser
    editor: SandboxUser
    editor_key: Path


def ensure_demo_identity(settings: Settings) -> DemoIdentity:
    """Create the sandbox users, the demo editor's key pair and the keyring, once."""
    data = settings.data_dir
    data.mkdir(parents=True, exist_ok=True)
    config_path = data / "sandbox-users.json"
    if config_path.exists():
        config = load_sandbox_config(config_path)
    else:
        config = SandboxConfig(
            users=(
                SandboxUser(
                    login=BOT_LOGIN, id=1, token=f"ghp_{secrets.token_hex(18)}", permission="admin"
                ),
                SandboxUser(
                    login=DEMO_EDITOR,
                    id=DEMO_EDITOR_ID,
                    token=f"ghp_{secrets.token_hex(18)}",
                    permission="write",
                ),
            ),
            repos=(settings.github_repo,),
        )
        save_sandbox_config(config_path, config)
    if settings.github_repo not in config.repos:
        config = replace(config, repos=(*config.repos, settings.github_repo))
        save_sandbox_config(config_path, config)
    users = {user.login: user for user in config.users}
    editor_key = data / f"{DEMO_EDITOR}.key"
    if not settings.keyring_path.exists() and not editor_key.exists():
        key = generate_signing_key(login=DEMO_EDITOR)
        write_signing_key(editor_key, key)
        add_key_to_keyring(
            settings.keyring_path,
            key,
            roles=(Role.EDITOR, Role.REVIEWER),
            user_id=DEMO_EDITOR_ID,
        )
    return DemoIdentity(
        config=config, bot=users[BOT_LOGIN], editor=users[DEMO_EDITOR], editor_key=editor_key
    )


async def start_embedded_github(
    settings: Settings, identity: DemoIdentity
) -> tuple[RunningSandbox, Settings]:
    """Start the sandbox and return it with settings that point ticketproxy at it."""
    sandbox = Sandbox(identity.config, db_path=settings.data_dir / "sandbox.sqlite3")
    try:
        # Always loopback: the sandbox's page lets anyone who reaches it post as any user.
        running = await start_sandbox(sandbox, host="127.0.0.1", port=settings.sandbox_port)
    except OSError as exc:
        sandbox.close()
        if exc.errno != errno.EADDRINUSE:
            raise
        raise ConfigError(
            f"the embedded GitHub cannot listen on 127.0.0.1:{settings.sandbox_port}: the port"
            " is taken (another ticketproxy serve, or another program); stop it, or set"
            " TICKETPROXY_SANDBOX_PORT to a free port"
        ) from None
    except BaseException:
        # Do not leave the SQLite file open behind the error.
        sandbox.close()
        raise
    return running, replace(
        settings, github_api_url=loopback_url(running.api_url), github_token=identity.bot.token
    )


def loopback_url(url: str) -> str:
    """Return ``url`` with an all-interfaces host (0.0.0.0, ::) replaced by loopback.

    A server bound to every interface reports the unspecified address, which is not a
    place a browser or client can connect to everywhere (Windows refuses it); the same
    server is reachable on loopback.
    """
    parts = urlsplit(url)
    host = parts.hostname
    if host is None:
        return url
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return url
    if not address.is_unspecified:
        return url
    local = "127.0.0.1" if address.version == 4 else "[::1]"
    netloc = local if parts.port is None else f"{local}:{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))
