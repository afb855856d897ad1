"""``ticketproxy sandbox add-user LOGIN --roles editor,reviewer``: one more person, no restart.

Adds the person to the embedded GitHub's users file (``DATA_DIR/sandbox-users.json``, with a
new token) and their new key to the keyring, and writes their private key beside the
demo editor's. A running ``ticketproxy serve`` registers the user within a second
(:mod:`embedded_github.users_file`) and reads the keyring afresh at every signed comment,
so the new person can sign and post at once. Prints their token and key path.
"""

from __future__ import annotations

import argparse
import secrets
from pathlib import Path

from auth.keyring import Keyring, add_key_to_keyring
from auth.keys import generate_signing_key, write_signing_key
from embedded_github import SandboxConfig, SandboxUser, load_sandbox_config, save_sandbox_config
from proxy.cli.keys import parse_roles
from proxy.embedded import SANDBOX_USERS_FILE
from proxy.errors import ProxyError
from proxy.settings import Settings

# New people get ids above every existing one, from here on (the demo editor is 1001).
_FIRST_ID = 1001


def add_user(settings: Settings, args: argparse.Namespace) -> Path:
    """Add ``args.login`` to the embedded GitHub and the keyring; return the key's path."""
    roles = parse_roles(args.roles)
    users_file = settings.data_dir / SANDBOX_USERS_FILE
    if not users_file.exists():
        raise ProxyError(
            f"there is no embedded GitHub in {settings.data_dir} ({users_file} is missing): "
            "start `ticketproxy serve` without a GitHub token once, or set TICKETPROXY_DATA_DIR "
            "to its data directory"
        )
    config = load_sandbox_config(users_file)
    if any(user.login.lower() == args.login.lower() for user in config.users):
        raise ProxyError(f"{args.login} is already a user of the embedded GitHub ({users_file})")
    user = SandboxUser(
        login=args.login,
        id=max([_FIRST_ID - 1, *(u.id for u in config.users)]) + 1,
        token=f"ghp_{secrets.token_hex(18)}",
        permission=args.permission,
    )
    # Every check before anything is written: a bad login or keyring leaves nothing behind.
    updated = SandboxConfig(users=(*config.users, user), repos=config.repos, apps=config.apps)
    keyring = settings.keyring_path
    if keyring.exists():
        Keyring.load(keyring)
    key_path = args.out or settings.data_dir / f"{args.login}.key"
    if key_path.exists():
        raise ProxyError(f"{key_path} exists; pass --out to write the new key elsewhere")
    key = generate_signing_key(login=args.login)
    # The key, then the keyring, then the users file: a stop half-way leaves no account
    # that can sign in without a key the keyring knows.
    write_signing_key(key_path, key)
    add_key_to_keyring(keyring, key, roles=roles, user_id=user.id)
    save_sandbox_config(users_file, updated)
    print(
        f"added {user.login} to the embedded GitHub (user id {user.id}, {user.permission} "
        f"access) and to the keyring {keyring} as {', '.join(roles)}"
    )
    print(f"GitHub token: {user.token}")
    print(f"private key: {key_path} (mode 0600)")
    print("a running `ticketproxy serve` takes both within a second; no restart needed")
    return key_path
