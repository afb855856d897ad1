"""The embedded default: a local GitHub-compatible server with a demo editor.

When no GitHub token is configured, ``ticketproxy serve`` starts the sandbox from
:mod:`embedded_github` next to the proxy, with two users (the bot ticketproxy posts as,
and a demo editor) and a keyring holding the demo editor's public key. Everything lives in
the data directory and is made once, on first start; a first start stopped half-way is
finished by the next one (:func:`ensure_demo_identity`).
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import secrets
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from auth.errors import KeyFileError, KeyringError
from auth.keyring import add_key_to_keyring
from auth.keys import SigningKey, generate_signing_key, load_signing_key, write_signing_key
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
from .startup import KEYRING_VARIABLE

BOT_LOGIN = "ticketproxy-bot"
DEMO_EDITOR = "alice"
DEMO_EDITOR_ID = 1001
# In the data directory: the embedded GitHub's users and their tokens (mode 0600).
SANDBOX_USERS_FILE = "sandbox-users.json"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DemoIdentity:
    """Who is who in the embedded sandbox."""

    config: SandboxConfig
    bot: SandboxUser
    editor: SandboxUser
    editor_key: Path


def ensure_demo_identity(settings: Settings) -> DemoIdentity:
    """Create the sandbox users, the demo editor's key pair and the keyring, once.

    Each file is written atomically, but the set of them is not: a start stopped between
    two (killed, or failing on an unwritable keyring) leaves some made and the rest not.
    The next start finishes what is missing from what is there, says so in the log, and
    never replaces or deletes a file that exists (tokens, keys and tickets stay).
    """
    data = settings.data_dir
    data.mkdir(parents=True, exist_ok=True)
    config = _sandbox_config(settings, data / SANDBOX_USERS_FILE)
    users = {user.login: user for user in config.users}
    editor_key = data / f"{DEMO_EDITOR}.key"
    _ensure_demo_key(settings, editor_key)
    return DemoIdentity(
        config=config, bot=users[BOT_LOGIN], editor=users[DEMO_EDITOR], editor_key=editor_key
    )


def _sandbox_config(settings: Settings, path: Path) -> SandboxConfig:
    if path.exists():
        config = load_sandbox_config(path)
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
        save_sandbox_config(path, config)
    if settings.github_repo not in config.repos:
        config = replace(config, repos=(*config.repos, settings.github_repo))
        save_sandbox_config(path, config)
    return config


def _ensure_demo_key(settings: Settings, editor_key: Path) -> None:
    """Make the demo editor's key and enrol it, or enrol a key an earlier start left out."""
    keyring = settings.keyring_path
    if keyring.exists():
        # The operator's keyring (or one finished earlier): never rewritten here.
        return
    if not editor_key.exists():
        key = generate_signing_key(login=DEMO_EDITOR)
        # The key first, then the keyring: a start stopped in between leaves a key that the
        # next start enrols (below), never a keyring naming a key nobody holds.
        write_signing_key(editor_key, key)
        _enrol_demo_key(keyring, key)
        return
    try:
        key = load_signing_key(editor_key)
    except KeyFileError as exc:
        raise ConfigError(
            f"an earlier start stopped before the keyring ({KEYRING_VARIABLE}={keyring}) was "
            f"written, and the demo editor's key it left cannot be read ({exc}); move "
            f"{editor_key} away and start again to make a new demo key"
        ) from None
    _enrol_demo_key(keyring, key)
    log.warning(
        "repaired the embedded set-up: an earlier start stopped after writing the demo "
        "editor's key %s but before the keyring; enrolled that key in the keyring (%s=%s)",
        editor_key,
        KEYRING_VARIABLE,
        keyring,
    )


def _enrol_demo_key(keyring: Path, key: SigningKey) -> None:
    try:
        add_key_to_keyring(keyring, key, roles=(Role.EDITOR, Role.REVIEWER), user_id=DEMO_EDITOR_ID)
    except (KeyringError, OSError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(
            f"cannot write the keyring ({KEYRING_VARIABLE}={keyring}): {detail}; make its "
            f"directory writable or point {KEYRING_VARIABLE} elsewhere, then start again: "
            "the demo editor's key is kept and enrolled then"
        ) from None


async def start_embedded_github(
    settings: Settings, identity: DemoIdentity
) -> tuple[RunningSandbox, Settings]:
    """Start the sandbox and return it with settings that point ticketproxy at it."""
    sandbox = Sandbox(identity.config, db_path=settings.data_dir / "sandbox.sqlite3")
    try:
        # Always loopback: the sandbox's page lets anyone who reaches it post as any user.
        running = await start_sandbox(
            sandbox,
            host="127.0.0.1",
            port=settings.sandbox_port,
            # `ticketproxy sandbox add-user` adds people to it while this runs.
            users_file=settings.data_dir / SANDBOX_USERS_FILE,
        )
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
