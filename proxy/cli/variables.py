"""Which environment variables each command hands to ``Settings.from_env``.

A command reads only the settings it needs, so a setting meant for another one (an editor's
own ``GITHUB_TOKEN``, a server's half-configured GitHub App) cannot stop it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping, Sequence

PREFIX = "TICKETPROXY_"

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
# The editor's own token for ``answer``, ``approve`` and ``reject``: never the server's.
EDITOR_TOKEN_VARIABLE = "TICKETPROXY_EDITOR_TOKEN"  # noqa: S105 (a variable name, not a secret)
# The client key ``mcp --url`` presents to a running ticketproxy: a client's, never a server's.
CLIENT_KEY_VARIABLE = "TICKETPROXY_CLIENT_KEY"


def only(env: Mapping[str, str], names: Sequence[str]) -> dict[str, str]:
    """Return the variables of ``env`` named in ``names``."""
    return {name: env[name] for name in names if name in env}


def without(env: Mapping[str, str], names: Sequence[str]) -> dict[str, str]:
    """Return the variables of ``env`` not named in ``names``."""
    return {name: value for name, value in env.items() if name not in names}


class ReadNames(Mapping[str, str]):
    """The environment, remembering every name looked up, set or not.

    ``Settings.from_env`` asks for each of its variables whether it is set or not, so the
    names it looked up are the names it knows: the list of known variables comes from the
    one reader, not from a second list kept by hand.
    """

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        self.names: set[str] = set()

    def __getitem__(self, name: str) -> str:
        self.names.add(name)
        return self._env[name]

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            self.names.add(name)
        return name in self._env

    def __iter__(self) -> Iterator[str]:
        return iter(self._env)

    def __len__(self) -> int:
        return len(self._env)


def unknown_variables(env: Mapping[str, str], known: set[str]) -> list[tuple[str, str | None]]:
    """Return each ``TICKETPROXY_*`` variable of ``env`` nobody reads, with the closest known."""
    known = known | {EDITOR_TOKEN_VARIABLE, CLIENT_KEY_VARIABLE}
    # Compared without the prefix every candidate shares, which would make any two look alike.
    suffixes = sorted(name[len(PREFIX) :] for name in known if name.startswith(PREFIX))
    found: list[tuple[str, str | None]] = []
    for name in sorted(env):
        if name.startswith(PREFIX) and name not in known:
            close = difflib.get_close_matches(name[len(PREFIX) :], suffixes, n=1, cutoff=0.6)
            found.append((name, PREFIX + close[0] if close else None))
    return found
