"""Which environment variables each command hands to ``Settings.from_env``.

A command reads only the settings it needs, so a setting meant for another one (an editor's
own ``GITHUB_TOKEN``, a server's half-configured GitHub App) cannot stop it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# The log's level and format: every command logs, whatever else the environment holds.
LOG_VARIABLES = ("TICKETPROXY_LOG_LEVEL", "TICKETPROXY_LOG_FORMAT")
# Where a private key goes, and which keyring it joins, depend on these variables only:
# keygen must not fail on an unrelated setting (an editor's own GITHUB_TOKEN, say).
PATH_VARIABLES = ("TICKETPROXY_DATA_DIR", "TICKETPROXY_KEYRING")
# A token or an App in the environment means "use real GitHub" to serve, but the sandbox
# has its own.
TOKEN_VARIABLES = (
    "TICKETPROXY_GITHUB_TOKEN",
    "GITHUB_TOKEN",
    "TICKETPROXY_GITHUB_APP_ID",
    "TICKETPROXY_GITHUB_APP_PRIVATE_KEY",
    "TICKETPROXY_GITHUB_APP_PRIVATE_KEY_FILE",
    "TICKETPROXY_GITHUB_APP_INSTALLATION_ID",
)


def only(env: Mapping[str, str], names: Sequence[str]) -> dict[str, str]:
    """Return the variables of ``env`` named in ``names``."""
    return {name: env[name] for name in names if name in env}


def without(env: Mapping[str, str], names: Sequence[str]) -> dict[str, str]:
    """Return the variables of ``env`` not named in ``names``."""
    return {name: value for name, value in env.items() if name not in names}
