"""The ``keygen`` command: make a signing key pair and add its public key to the keyring."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from auth.agents import agent_of
from auth.keyring import Keyring, add_key_to_keyring
from auth.keys import generate_signing_key, write_signing_key
from auth.roles import Role
from proxy.errors import ProxyError
from proxy.settings import Settings


def keygen(settings: Settings, args: argparse.Namespace, env: Mapping[str, str]) -> None:
    """Make a signing key pair, write the private key, and trust the public one."""
    # Check everything before the key is written, so an error leaves no orphan key file.
    roles = parse_roles(args.roles)
    if args.user_id is not None and args.user_id <= 0:
        raise ProxyError(f"--user-id {args.user_id} is not a GitHub account id (a positive number)")
    on_behalf_of = getattr(args, "on_behalf_of", None)
    if (Role.AGENT in roles) != (on_behalf_of is not None):
        raise ProxyError(
            "an agent key needs both --roles agent and --on-behalf-of LOGIN (the editor whose "
            "agent it is), and --on-behalf-of is for agent keys only"
        )
    keyring = args.keyring or settings.keyring_path
    if keyring.exists():
        Keyring.load(keyring)  # a broken keyring fails here, not after the key is on disk
    if on_behalf_of is not None:
        # An agent entry that the keyring would refuse fails here, before the key is on disk.
        agent_of(frozenset(roles), on_behalf_of, where="--roles and --on-behalf-of")
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    out = args.out or home / ".ticketproxy" / f"{args.login}.key"
    key = generate_signing_key(login=args.login, alg=args.alg)
    out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    keyring.parent.mkdir(parents=True, exist_ok=True)
    write_signing_key(out, key)
    add_key_to_keyring(keyring, key, roles=roles, user_id=args.user_id, on_behalf_of=on_behalf_of)
    print(f"private key: {out} (mode 0600; keep it on this machine)")
    print(f"public key {key.kid} for {args.login} ({', '.join(roles)}) added to {keyring}")


def parse_roles(raw: str) -> list[Role]:
    """Read ``--roles`` (``editor,reviewer``); an unknown or empty list is refused."""
    known = ", ".join(role.value for role in Role)
    names = [name.strip() for name in raw.split(",") if name.strip()]
    unknown = [name for name in names if name not in {role.value for role in Role}]
    if unknown:
        raise ProxyError(f"unknown role {', '.join(unknown)} in --roles: use {known}")
    if not names:
        raise ProxyError(f"--roles is empty: give at least one of {known}")
    return [Role(name) for name in names]
