"""``oidc-keys export`` and the audit's ``--oidc-jwks FILE``: the OIDC issuer's keys kept.

The desk keeps every key of the trusted OIDC issuer it fetched (its store's
``oidc_issuer_keys``). ``export`` writes them as a JWKS document, each key with when the
desk first and last saw it; ``audit --oidc-jwks FILE`` reads such a file (or any JWKS an
operator saved) instead of fetching the issuer's keys, so a keyless answer is re-verified
offline even after the issuer rotated its key away. ``--check-issuer`` also fetches the
issuer's current keys and fails when it serves a kid of the file with other material.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from auth.keyring import Keyring
from auth.oidc import DEFAULT_ISSUER, OidcTrust
from proxy.cli.oidc_token import fetch_issuer_keys
from proxy.cli.variables import PATH_VARIABLES, only
from proxy.desk_factories import open_store
from proxy.errors import ProxyError
from proxy.settings import Settings
from ticketing.errors import IssuerKeyRefused
from ticketing.oidc_archive import (
    archive_document,
    changed_keys,
    merged_jwks,
    public_issuer_keys,
    read_jwks_document,
)

__all__ = ["audit_trust", "export_oidc_keys"]

# The store's place and the issuer whose keys are exported: nothing else is read.
STORE_VARIABLES = (*PATH_VARIABLES, "TICKETPROXY_DATABASE_URL", "TICKETPROXY_OIDC_ISSUER")
_MAX_JWKS_FILE = 1024 * 1024


def export_oidc_keys(args: argparse.Namespace, env: Mapping[str, str]) -> None:
    """Write the issuer's kept keys as a JWKS document to ``--out`` (or standard output)."""
    settings = Settings.from_env(only(env, STORE_VARIABLES))
    issuer = args.issuer or settings.oidc_issuer
    if issuer is None:
        raise ProxyError(
            "TICKETPROXY_OIDC_ISSUER is set empty (no OIDC issuer is trusted); "
            "name the issuer whose keys to export with --issuer URL"
        )
    if settings.database_url is None and not settings.store_path.exists():
        raise ProxyError(
            f"no ticket store at {settings.store_path}: set TICKETPROXY_DATA_DIR (or "
            "TICKETPROXY_DATABASE_URL) as `ticketproxy serve` has it"
        )
    store = open_store(settings)
    try:
        keys = store.issuer_keys(issuer)
    finally:
        store.close()
    text = json.dumps(archive_document(issuer, keys), indent=2) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text, encoding="utf-8")
    where = "standard output" if args.out is None else str(args.out)
    print(f"{len(keys)} key(s) of {issuer} written to {where}", file=sys.stderr)
    if not keys:
        print(
            "the desk keeps the issuer's keys it fetches to verify agents' keyless answers; "
            "none is on record yet",
            file=sys.stderr,
        )


def audit_trust(args: argparse.Namespace, keyring: Keyring) -> tuple[OidcTrust | None, list[str]]:
    """Return the issuer keys the audit checks agents' tokens with, and problems with them.

    With ``--oidc-jwks FILE``, the file's keys and no network; else the issuer's JWKS as
    published now. None when the keyring lists no OIDC agent.
    """
    if args.check_issuer and args.oidc_jwks is None:
        raise ProxyError("--check-issuer compares an archive with the issuer: add --oidc-jwks FILE")
    if not keyring.oidc_agents:
        return None, []
    if args.oidc_jwks is None:
        return fetch_issuer_keys(args.oidc_issuer or DEFAULT_ISSUER), []
    jwks, named = read_jwks_file(args.oidc_jwks)
    if args.oidc_issuer and named and named != args.oidc_issuer:
        raise ProxyError(
            f"{args.oidc_jwks} holds the keys of {named}, not of --oidc-issuer "
            f"{args.oidc_issuer}; audit with --oidc-issuer {named}, or the other issuer's file"
        )
    issuer = args.oidc_issuer or named or DEFAULT_ISSUER
    if not args.check_issuer:
        return OidcTrust(issuer, jwks), []
    current, _ = public_issuer_keys(fetch_issuer_keys(issuer).jwks)
    problems = changed_keys(jwks, {"keys": current})
    return OidcTrust(issuer, merged_jwks(jwks, {"keys": current})), problems


def read_jwks_file(path: Path) -> tuple[dict[str, object], str | None]:
    """Return a JWKS file's public keys and the issuer it names; fail saying what is wrong."""
    try:
        with path.open("rb") as file:
            raw = file.read(_MAX_JWKS_FILE + 1)
    except OSError as exc:
        raise ProxyError(f"--oidc-jwks {path} cannot be read: {exc.strerror}") from None
    if len(raw) > _MAX_JWKS_FILE:
        raise ProxyError(f"--oidc-jwks {path} is larger than a JWKS ({_MAX_JWKS_FILE} bytes)")
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        raise ProxyError(f"--oidc-jwks {path} is not JSON") from None
    try:
        return read_jwks_document(document, source=f"--oidc-jwks {path}")
    except IssuerKeyRefused as exc:
        raise ProxyError(str(exc)) from None
