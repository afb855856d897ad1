"""GitHub App settings: the App's id, its private key (PEM, inline or a file) and the
installation, read all together or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from proxy.errors import ConfigError

_APP_ID = "TICKETPROXY_GITHUB_APP_ID"
_APP_KEY = "TICKETPROXY_GITHUB_APP_PRIVATE_KEY"
_APP_KEY_FILE = "TICKETPROXY_GITHUB_APP_PRIVATE_KEY_FILE"
_APP_INSTALLATION = "TICKETPROXY_GITHUB_APP_INSTALLATION_ID"


def read_github_app(
    environ: Mapping[str, str], *, token: str | None
) -> tuple[str | None, str | None, int | None]:
    """Read the GitHub App settings: id, private key (PEM) and installation, all or none."""
    app_id = environ.get(_APP_ID) or None
    key_text = environ.get(_APP_KEY) or None
    key_file = environ.get(_APP_KEY_FILE) or None
    installation = environ.get(_APP_INSTALLATION) or None
    if key_text is not None and key_file is not None:
        raise ConfigError(f"both {_APP_KEY} and {_APP_KEY_FILE} are set: set only one of them")
    given = {
        _APP_ID: app_id is not None,
        f"{_APP_KEY} (or {_APP_KEY_FILE})": key_text is not None or key_file is not None,
        _APP_INSTALLATION: installation is not None,
    }
    if not any(given.values()):
        return None, None, None
    missing = [name for name, present in given.items() if not present]
    if missing or app_id is None or installation is None:
        raise ConfigError(
            f"the GitHub App settings are incomplete: {', '.join(missing)} not set; a GitHub App "
            f"needs {_APP_ID}, {_APP_KEY} (or {_APP_KEY_FILE}) and {_APP_INSTALLATION}"
        )
    if token is not None:
        raise ConfigError(
            "both a GitHub token (TICKETPROXY_GITHUB_TOKEN or GITHUB_TOKEN) and a GitHub App "
            f"({_APP_ID}) are set: pick one, and unset the other"
        )
    if key_file is not None:
        try:
            key_text = Path(key_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{_APP_KEY_FILE}={key_file!r} cannot be read ({type(exc).__name__}): point it "
                "at the .pem file GitHub gave you when you generated the App's private key"
            ) from None
    source = _APP_KEY_FILE if key_file is not None else _APP_KEY
    return (
        _positive_id(app_id, _APP_ID, "the App ID on the App's settings page"),
        _rsa_private_key(key_text or "", source),
        int(
            _positive_id(
                installation,
                _APP_INSTALLATION,
                "the number at the end of the installation's settings URL",
            )
        ),
    )


def _positive_id(raw: str, name: str, where: str) -> str:
    value = raw.strip()
    if not (value.isascii() and value.isdigit()) or int(value) == 0:
        raise ConfigError(f"{name}={raw!r} is not a number: use {where}")
    return value


def _rsa_private_key(text: str, name: str) -> str:
    # Checked now, so a wrong file fails the start with the variable's name, not the first
    # GitHub call. The key itself never appears in a message.
    if "\\n" in text and "\n" not in text.strip():
        # A PEM pasted into a .env file or a CI secret often arrives with literal "\n"s.
        text = text.replace("\\n", "\n")
    try:
        key = serialization.load_pem_private_key(text.strip().encode(), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        key = None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ConfigError(
            f"{name} does not hold an unencrypted RSA private key in PEM form: use the .pem "
            "file GitHub generates for the App (an RSA key in PEM format)"
        )
    return text.strip() + "\n"
