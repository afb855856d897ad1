"""Configuration, read once at start-up from an injected mapping (normally ``os.environ``)."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from .errors import ConfigError

DEFAULT_MODELS = ("gpt-4", "gpt-4-turbo", "gpt-4o", "gpt-3.5-turbo")
DEFAULT_SANDBOX_REPO = "acme/agents"
_REPO_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


@dataclass(frozen=True)
class Settings:
    """Everything ticketproxy needs to know to serve; secrets stay out of ``repr``."""

    github_repo: str = DEFAULT_SANDBOX_REPO
    github_token: str | None = field(default=None, repr=False)
    github_api_url: str | None = None
    keyring_path: Path = Path("data/keyring.json")
    api_keys: tuple[str, ...] = field(default=(), repr=False)
    data_dir: Path = Path("data")
    poll_interval: float = 5.0
    max_wait: float = 3600.0
    heartbeat_interval: float = 15.0
    models: tuple[str, ...] = DEFAULT_MODELS
    max_body_bytes: int = 4 * 1024 * 1024
    host: str = "127.0.0.1"
    port: int = 8080
    sandbox_port: int = 8081
    lock_issues: bool = True
    # ticketproxy's own pace for content creation, below GitHub's secondary limits.
    # 10% under GitHub's 80/min and 500/h: requests queue behind each other on the way
    # out, so they reach GitHub a little bunched compared with when they were paced.
    writes_per_minute: float = 72.0
    writes_per_hour: float = 450.0
    # TOML table of model routes (people or an upstream model) and aliases; see proxy.routing.
    routes_path: Path | None = None
    # The secret of GitHub's issue_comment webhook; None turns POST /github/webhook off.
    webhook_secret: str | None = field(default=None, repr=False)
    # TOML review policy (which answers need reviewers); None means the shipped default.
    review_policy_path: Path | None = None
    # A GitHub App installation instead of a token: all three or none (see _github_app).
    github_app_id: str | None = None
    github_app_private_key: str | None = field(default=None, repr=False)
    github_app_installation_id: int | None = None
    # Redis shared by several replicas (key locks, jtis, poll lease, wake-ups); None: alone.
    # Out of repr: the URL may carry a password.
    redis_url: str | None = field(default=None, repr=False)
    # An OpenAI-compatible model that drafts a suggested answer per ticket; None: no drafts.
    # Out of repr, like the Redis URL: a URL may carry credentials.
    draft_url: str | None = field(default=None, repr=False)
    # Its key, sent as a bearer token; never logged, never in repr.
    draft_key: str | None = field(default=None, repr=False)
    # The model to ask; None asks for the ticket's own model.
    draft_model: str | None = None
    draft_timeout: float = 120.0
    # Where editors open the answer page, for the link on every ticket; None: derived from
    # host and port when they name one address (see answer_page_url).
    desk_url: str | None = None
    # Bearer token /metrics asks for; None: /metrics is open (a private network's usual).
    metrics_token: str | None = field(default=None, repr=False)

    @property
    def embedded(self) -> bool:
        """Say whether ticketproxy runs its own GitHub-compatible server (no token, no App)."""
        return self.github_token is None and self.github_app_id is None

    @property
    def store_path(self) -> Path:
        """Return where the ticket store lives."""
        return self.data_dir / "tickets.sqlite3"

    @property
    def answer_page_url(self) -> str | None:
        """Return the answer page's address that tickets link to, or None if unknown."""
        if self.desk_url is not None:
            return self.desk_url
        try:
            address = ipaddress.ip_address(self.host)
        except ValueError:
            return f"http://{self.host}:{self.port}/desk/"
        if address.is_unspecified:
            # Listening everywhere says nothing about the name editors reach it by.
            return None
        shown = f"[{address}]" if address.version == 6 else str(address)
        return f"http://{shown}:{self.port}/desk/"

    @property
    def drafting(self) -> bool:
        """Say whether an upstream model drafts suggested answers for tickets."""
        return self.draft_url is not None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Build settings from environment variables, failing with the variable's name."""
        data_dir = Path(environ.get("TICKETPROXY_DATA_DIR", "data"))
        token = environ.get("TICKETPROXY_GITHUB_TOKEN") or environ.get("GITHUB_TOKEN") or None
        repo = environ.get("TICKETPROXY_GITHUB_REPO")
        app_id, app_key, installation_id = _github_app(environ, token=token)
        if repo is None and (token is not None or app_id is not None):
            credential = "a GitHub token" if app_id is None else "a GitHub App"
            raise ConfigError(
                f"TICKETPROXY_GITHUB_REPO is not set: with {credential}, name the repository "
                "that holds the tickets, e.g. TICKETPROXY_GITHUB_REPO=acme/agent-desk"
            )
        settings = cls(
            github_repo=_repo(repo or DEFAULT_SANDBOX_REPO),
            github_token=token,
            github_api_url=_url(environ.get("TICKETPROXY_GITHUB_API_URL")),
            keyring_path=Path(environ.get("TICKETPROXY_KEYRING", str(data_dir / "keyring.json"))),
            api_keys=_keys(environ.get("TICKETPROXY_API_KEYS", "")),
            data_dir=data_dir,
            poll_interval=_number(environ, "TICKETPROXY_POLL_INTERVAL", 5.0, low=0.01),
            max_wait=_number(environ, "TICKETPROXY_MAX_WAIT", 3600.0, low=1.0),
            heartbeat_interval=_number(environ, "TICKETPROXY_HEARTBEAT_INTERVAL", 15.0, low=0.01),
            models=_models(environ.get("TICKETPROXY_MODELS")),
            max_body_bytes=int(
                _number(environ, "TICKETPROXY_MAX_BODY_BYTES", 4 << 20, low=1024, unit="bytes")
            ),
            sandbox_port=_port(
                environ.get("TICKETPROXY_SANDBOX_PORT") or "8081", "TICKETPROXY_SANDBOX_PORT"
            ),
            lock_issues=_bool(environ, "TICKETPROXY_LOCK_ISSUES", True),
            writes_per_minute=_number(
                environ, "TICKETPROXY_WRITES_PER_MINUTE", 72.0, low=1.0, unit="writes per minute"
            ),
            writes_per_hour=_number(
                environ, "TICKETPROXY_WRITES_PER_HOUR", 450.0, low=1.0, unit="writes per hour"
            ),
            routes_path=Path(environ["TICKETPROXY_ROUTES"])
            if environ.get("TICKETPROXY_ROUTES")
            else None,
            webhook_secret=_webhook_secret(environ.get("TICKETPROXY_WEBHOOK_SECRET")),
            review_policy_path=Path(environ["TICKETPROXY_REVIEW_POLICY"])
            if environ.get("TICKETPROXY_REVIEW_POLICY")
            else None,
            github_app_id=app_id,
            github_app_private_key=app_key,
            github_app_installation_id=installation_id,
            redis_url=_redis_url(environ.get("TICKETPROXY_REDIS_URL")),
            desk_url=_desk_url(environ.get("TICKETPROXY_DESK_URL")),
            metrics_token=_metrics_token(environ.get("TICKETPROXY_METRICS_TOKEN")),
        )
        settings = replace(settings, **_draft_settings(environ))
        return settings

    def with_listen(self, host: str | None, port: int | None) -> Settings:
        """Return these settings listening on ``host``/``port`` (the ``serve`` flags)."""
        return replace(
            self,
            host=self.host if host is None else host,
            port=self.port if port is None else _port(str(port), "--port"),
        )

    def check_exposure(self) -> None:
        """Refuse to listen beyond loopback without client API keys."""
        if self.api_keys or is_loopback(self.host):
            return
        raise ConfigError(
            f"refusing to listen on {self.host} without client API keys: set "
            "TICKETPROXY_API_KEYS=key1,key2 (any agent that can reach the port could otherwise "
            "open tickets), or listen on 127.0.0.1"
        )


def is_loopback(host: str) -> bool:
    """Say whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _repo(value: str) -> str:
    owner, sep, name = value.partition("/")
    if not sep or not owner or not name or not set(owner + name) <= _REPO_CHARS:
        raise ConfigError(
            f"TICKETPROXY_GITHUB_REPO={value!r} is not OWNER/NAME: set it to the repository "
            "that holds the tickets, e.g. acme/agent-desk"
        )
    return value


def _url(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if not value.startswith(("http://", "https://")):
        raise ConfigError(
            f"TICKETPROXY_GITHUB_API_URL={value!r} is not an http(s) URL: use "
            "https://api.github.com, or https://HOST/api/v3 for GitHub Enterprise"
        )
    return value.rstrip("/")


def _metrics_token(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if len(value) < 16 or not value.isascii() or not value.isprintable() or " " in value:
        raise ConfigError(
            "TICKETPROXY_METRICS_TOKEN must be at least 16 printable ASCII characters without"
            " spaces, e.g. "
            "the output of `python -c 'import secrets; print(secrets.token_urlsafe(24))'`"
        )
    return value


def _desk_url(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    parsed = urlsplit(value)
    plain = not (parsed.query or parsed.fragment or "@" in parsed.netloc)
    if parsed.scheme not in {"http", "https"} or not parsed.hostname or not plain:
        raise ConfigError(
            f"TICKETPROXY_DESK_URL={value!r} is not an http(s) URL without credentials, query or"
            " fragment: give the answer page's address as editors open it, e.g."
            " https://tickets.example.com/desk/"
        )
    return value if value.endswith("/") else value + "/"


_APP_ID = "TICKETPROXY_GITHUB_APP_ID"
_APP_KEY = "TICKETPROXY_GITHUB_APP_PRIVATE_KEY"
_APP_KEY_FILE = "TICKETPROXY_GITHUB_APP_PRIVATE_KEY_FILE"
_APP_INSTALLATION = "TICKETPROXY_GITHUB_APP_INSTALLATION_ID"


def _github_app(
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


def _redis_url(value: str | None) -> str | None:
    if value is None or value.strip() == "":
        return None
    value = value.strip()
    if not value.startswith(("redis://", "rediss://", "unix://")):
        # The value is not echoed: it may hold a password.
        raise ConfigError(
            "TICKETPROXY_REDIS_URL is not a Redis URL: use redis://HOST:6379/0 (rediss:// for "
            "TLS, unix:///path/to/redis.sock), or leave it unset for a single process"
        )
    return value


_DRAFT_URL = "TICKETPROXY_DRAFT_URL"


def _draft_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """Read the drafting model's settings; drafting is off unless TICKETPROXY_DRAFT_URL is set."""
    url = (environ.get(_DRAFT_URL) or "").strip()
    key = environ.get("TICKETPROXY_DRAFT_KEY") or None
    model = (environ.get("TICKETPROXY_DRAFT_MODEL") or "").strip() or None
    timeout = _number(environ, "TICKETPROXY_DRAFT_TIMEOUT", 120.0, low=0.1)
    if not url:
        given = [
            name
            for name, value in (
                ("TICKETPROXY_DRAFT_KEY", key),
                ("TICKETPROXY_DRAFT_MODEL", model),
                ("TICKETPROXY_DRAFT_TIMEOUT", environ.get("TICKETPROXY_DRAFT_TIMEOUT")),
            )
            if value
        ]
        if given:
            raise ConfigError(
                f"{', '.join(given)} set without {_DRAFT_URL}: set {_DRAFT_URL} to the drafting "
                "model's base URL (e.g. http://127.0.0.1:11434/v1 for Ollama), or unset them"
            )
        return {}
    if not url.startswith(("http://", "https://")) or " " in url:
        # Not echoed: a URL may carry credentials.
        raise ConfigError(
            f"{_DRAFT_URL} is not an http(s) URL: give the base URL of an OpenAI-compatible "
            "server, ending in /v1 (e.g. http://127.0.0.1:11434/v1 for Ollama, "
            "http://127.0.0.1:8000/v1 for vLLM)"
        )
    url = url.rstrip("/")
    if url.endswith(("/chat/completions", "/completions")):
        raise ConfigError(
            f"{_DRAFT_URL} names an endpoint, not a base URL: drop the /chat/completions "
            "part (ticketproxy adds it), e.g. http://127.0.0.1:11434/v1"
        )
    if key is not None and (key != key.strip() or any(c in key for c in "\r\n")):
        raise ConfigError(
            "TICKETPROXY_DRAFT_KEY has surrounding whitespace or a line break: set the key "
            "alone, as the drafting server gave it"
        )
    return {"draft_url": url, "draft_key": key, "draft_model": model, "draft_timeout": timeout}


def _keys(value: str) -> tuple[str, ...]:
    keys = tuple(k.strip() for k in value.split(",") if k.strip())
    for key in keys:
        if len(key) < 8:
            raise ConfigError(
                "TICKETPROXY_API_KEYS holds a key shorter than 8 characters: use long random "
                "keys, e.g. from `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            )
    return keys


def _webhook_secret(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if len(value) < 16:
        raise ConfigError(
            "TICKETPROXY_WEBHOOK_SECRET is shorter than 16 characters: use a long random secret, "
            "e.g. from `python -c 'import secrets; print(secrets.token_hex(32))'`, and give the "
            "same value to the GitHub webhook"
        )
    return value


def _number(
    environ: Mapping[str, str], name: str, default: float, *, low: float, unit: str = "seconds"
) -> float:
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(
            f"{name}={raw!r} is not a number: give {unit}, e.g. {name}={default:g}"
        ) from None
    if not math.isfinite(value) or value < low:
        raise ConfigError(f"{name}={raw!r} is out of range: it must be at least {low:g}")
    return value


def _port(raw: str, name: str) -> int:
    # isdigit() alone admits digits int() refuses (such as "²"); ASCII keeps the error ours.
    if not (raw.isascii() and raw.isdigit()) or not 0 <= int(raw) <= 65535:
        raise ConfigError(f"{name}={raw!r} is not a TCP port (0-65535)")
    return int(raw)


def _models(raw: str | None) -> tuple[str, ...]:
    if raw is None or raw.strip() == "":
        return DEFAULT_MODELS
    models = tuple(m.strip() for m in raw.split(",") if m.strip())
    if not models:
        raise ConfigError("TICKETPROXY_MODELS is empty: list model ids, e.g. gpt-4o,gpt-4-turbo")
    return models


def _bool(environ: Mapping[str, str], name: str, default: bool) -> bool:
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean: use true or false")
