"""What ``serve`` checks as it starts: the keyring file, and GitHub's view of the settings.

Each check tells the operator the variable, the path and the fix, instead of an errno.
"""

from __future__ import annotations

import logging

from auth.errors import KeyringError
from auth.keyring import KeyringSource
from ticketing.errors import GitHubError, GitHubUnavailable
from ticketing.github.client import GitHubClient

from .errors import ConfigError
from .settings import Settings

KEYRING_VARIABLE = "TICKETPROXY_KEYRING"

log = logging.getLogger(__name__)


def open_keyring(settings: Settings) -> KeyringSource:
    """Load the keyring ``settings`` name, failing with the variable, the path and the fix."""
    path = settings.keyring_path
    where = f"{KEYRING_VARIABLE}={path}"
    if path.is_dir():
        # Docker creates a missing bind-mount source as an empty directory, so a keyring
        # path that was never mounted shows up here as a directory, not as a missing file.
        raise ConfigError(
            f"the keyring ({where}) is a directory, not a file: in Docker, a keyring path "
            "that is not mounted becomes an empty directory; mount the keyring file itself "
            "(-v /host/keyring.json:/data/keyring.json:ro), or point "
            f"{KEYRING_VARIABLE} at the file"
        )
    if not path.exists():
        raise ConfigError(
            f"no keyring file ({where}): run `ticketproxy keygen --login YOUR_LOGIN` to "
            f"create it with your public key, or point {KEYRING_VARIABLE} at an existing "
            "keyring"
        )
    try:
        return KeyringSource(path)
    except (KeyringError, OSError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"cannot use the keyring ({where}): {detail}") from None


async def check_github(github: GitHubClient) -> None:
    """Log an error naming the fix if GitHub refuses the credentials or the repository.

    The server still starts (the fix may be made on GitHub's side), but ``/readyz`` answers
    503 with the same reason until a GitHub call succeeds.
    """
    try:
        await github.check_repository()
    except GitHubUnavailable as exc:
        log.warning("could not check %s on GitHub at start-up: %s", github.repo_name, exc)
    except GitHubError as exc:
        log.error(
            "GitHub refuses ticketproxy's settings: %s. Every request will fail and /readyz "
            "answers 503 until this is fixed",
            exc,
        )
