"""Parsers for single settings: each returns the value or raises a ConfigError naming its
variable and what to set instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from urllib.parse import urlsplit

from proxy.errors import ConfigError

DESK_TOKEN_ENV = "TICKETPROXY_DESK_TOKEN"  # noqa: S105 (a variable name, not a secret)
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS = ("text", "json")
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-.")
_REPO_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def parse_repo(value: str) -> str:
    """Return ``TICKETPROXY_GITHUB_REPO`` if it is OWNER/NAME."""
    owner, sep, name = value.partition("/")
    if not sep or not owner or not name or not set(owner + name) <= _REPO_CHARS:
        raise ConfigError(
            f"TICKETPROXY_GITHUB_REPO={value!r} is not OWNER/NAME: set it to the repository "
            "that holds the tickets, e.g. acme/agent-desk"
        )
    return value


def parse_github_api_url(value: str | None) -> str | None:
    """Return ``TICKETPROXY_GITHUB_API_URL`` without its trailing slash, or None if unset."""
    if value is None or value == "":
        return None
    if not value.startswith(("http://", "https://")):
        raise ConfigError(
            f"TICKETPROXY_GITHUB_API_URL={value!r} is not an http(s) URL: use "
            "https://api.github.com, or https://HOST/api/v3 for GitHub Enterprise"
        )
    return value.rstrip("/")


def parse_metrics_token(value: str | None) -> str | None:
    """Return ``TICKETPROXY_METRICS_TOKEN``, or None if unset; refuse a guessable one."""
    if value is None or value == "":
        return None
    if len(value) < 16 or not value.isascii() or not value.isprintable() or " " in value:
        raise ConfigError(
            "TICKETPROXY_METRICS_TOKEN must be at least 16 printable ASCII characters without"
            " spaces, e.g. "
            "the output of `python -c 'import secrets; print(secrets.token_urlsafe(24))'`"
        )
    return value


def parse_desk_url(value: str | None) -> str | None:
    """Return ``TICKETPROXY_DESK_URL`` ending in a slash, or None if unset."""
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


def parse_allowed_hosts(value: str | None) -> tuple[str, ...]:
    """Return the host names in ``TICKETPROXY_ALLOWED_HOSTS``: names, ``.suffix`` or ``*``."""
    names = tuple(n.strip().lower().rstrip(".") for n in (value or "").split(",") if n.strip())
    for name in names:
        bare = name.removeprefix(".")
        if name != "*" and (not bare or not set(bare) <= _HOST_CHARS):
            raise ConfigError(
                f"TICKETPROXY_ALLOWED_HOSTS holds {name!r}, which is not a host name: list the "
                "names clients reach this server by, without scheme or port, e.g. "
                "TICKETPROXY_ALLOWED_HOSTS=tickets.example.com,.internal.example.com"
            )
    return names


def parse_allowed_origins(value: str | None) -> tuple[str, ...]:
    """Return the origins in ``TICKETPROXY_ALLOWED_ORIGINS``, each ``scheme://host[:port]``."""
    origins = []
    for raw in (n.strip() for n in (value or "").split(",")):
        if not raw:
            continue
        parsed = urlsplit(raw)
        try:
            parsed.port  # noqa: B018 (a malformed port raises here)
        except ValueError:
            parsed = urlsplit("")
        if parsed.scheme not in {"http", "https"} or not parsed.hostname or raw != _origin(raw):
            raise ConfigError(
                f"TICKETPROXY_ALLOWED_ORIGINS holds {raw!r}, which is not an origin: give "
                "scheme://host[:port] as a browser sends it in Origin, without path or slash, "
                "e.g. https://tickets.example.com"
            )
        origins.append(raw.lower())
    return tuple(origins)


def _origin(raw: str) -> str:
    parsed = urlsplit(raw)
    return f"{parsed.scheme}://{parsed.netloc}"


def parse_redis_url(value: str | None) -> str | None:
    """Return ``TICKETPROXY_REDIS_URL``, or None if unset; never echo it in an error."""
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


def parse_database_url(value: str | None) -> str | None:
    """Return ``TICKETPROXY_DATABASE_URL``, or None if unset; never echo it in an error."""
    if value is None or value.strip() == "":
        return None
    value = value.strip()
    if not value.startswith(("postgresql://", "postgres://")):
        # The value is not echoed: it may hold a password.
        raise ConfigError(
            "TICKETPROXY_DATABASE_URL is not a PostgreSQL URL: use "
            "postgresql://USER:PASSWORD@HOST:5432/DATABASE, or leave it unset to keep the "
            "store in SQLite in TICKETPROXY_DATA_DIR"
        )
    return value


def parse_api_keys(value: str) -> tuple[str, ...]:
    """Return the client API keys in ``TICKETPROXY_API_KEYS``; refuse short ones."""
    keys = tuple(k.strip() for k in value.split(",") if k.strip())
    for key in keys:
        if len(key) < 8:
            raise ConfigError(
                "TICKETPROXY_API_KEYS holds a key shorter than 8 characters: use long random "
                "keys, e.g. from `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            )
    return keys


def parse_webhook_secret(value: str | None) -> str | None:
    """Return ``TICKETPROXY_WEBHOOK_SECRET``, or None if unset; refuse a short one."""
    if value is None or value == "":
        return None
    if len(value) < 16:
        raise ConfigError(
            "TICKETPROXY_WEBHOOK_SECRET is shorter than 16 characters: use a long random secret, "
            "e.g. from `python -c 'import secrets; print(secrets.token_hex(32))'`, and give the "
            "same value to the GitHub webhook"
        )
    return value


def read_number(
    environ: Mapping[str, str], name: str, default: float, *, low: float, unit: str = "seconds"
) -> float:
    """Return the number in ``environ[name]`` (``default`` if unset), at least ``low``."""
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


# agent-protocol-client gives up on a call after 300 s; leave room for the network.
MAX_STEP_WAIT = 270.0


def read_step_wait(environ: Mapping[str, str]) -> float:
    """Return TICKETPROXY_STEP_WAIT: seconds a step's POST waits, below the clients' 300 s."""
    value = read_number(environ, "TICKETPROXY_STEP_WAIT", 60.0, low=0.0)
    if value > MAX_STEP_WAIT:
        raise ConfigError(
            f"TICKETPROXY_STEP_WAIT={value:g} is too long: Agent Protocol clients give up after "
            f"300 s, so wait at most {MAX_STEP_WAIT:g} s (the step then answers running)"
        )
    return value


def parse_port(raw: str, name: str) -> int:
    """Return ``raw`` as a TCP port, or raise ConfigError naming ``name``."""
    # isdigit() alone admits digits int() refuses (such as "²"); ASCII keeps the error ours.
    if not (raw.isascii() and raw.isdigit()) or not 0 <= int(raw) <= 65535:
        raise ConfigError(f"{name}={raw!r} is not a TCP port (0-65535)")
    return int(raw)


def parse_models(raw: str | None, *, default: tuple[str, ...]) -> tuple[str, ...]:
    """Return the model ids in ``TICKETPROXY_MODELS``, or ``default`` if unset."""
    if raw is None or raw.strip() == "":
        return default
    models = tuple(m.strip() for m in raw.split(",") if m.strip())
    if not models:
        raise ConfigError("TICKETPROXY_MODELS is empty: list model ids, e.g. gpt-4o,gpt-4-turbo")
    return models


def read_flag(environ: Mapping[str, str], name: str, default: bool) -> bool:
    """Return the boolean in ``environ[name]`` (``default`` if unset); refuse anything else."""
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean: use true or false")


def parse_desk_token(value: str | None) -> str | None:
    """Return ``TICKETPROXY_DESK_TOKEN``, or None if unset; refuse one too short to guard."""
    token = value or None
    if token is not None and len(token) < 16:
        raise ConfigError(
            f"{DESK_TOKEN_ENV} is too short to guard the desk: use at least 16 random "
            "characters, e.g. the output of `python -c 'import secrets; "
            "print(secrets.token_urlsafe(24))'`"
        )
    return token


def log_settings(environ: Mapping[str, str]) -> tuple[str, str]:
    """Return the (level, format) the environment asks for, or raise ConfigError naming it."""
    raw_level = environ.get("TICKETPROXY_LOG_LEVEL", "")
    level = raw_level.strip().upper() or "INFO"
    if level not in LOG_LEVELS:
        raise ConfigError(
            f"TICKETPROXY_LOG_LEVEL={raw_level!r} is not a log level: "
            f"use one of {', '.join(LOG_LEVELS)}"
        )
    raw_format = environ.get("TICKETPROXY_LOG_FORMAT", "")
    form = raw_format.strip().lower() or "text"
    if form not in LOG_FORMATS:
        raise ConfigError(
            f"TICKETPROXY_LOG_FORMAT={raw_format!r} is not a log format: use text or json"
        )
    return level, form


def parse_oidc_issuer(value: str | None) -> str | None:
    """Return ``TICKETPROXY_OIDC_ISSUER`` (default GitHub Actions'), or None when set empty."""
    if value is None:
        return "https://token.actions.githubusercontent.com"
    if value == "":
        return None
    parsed = urlsplit(value)
    loopback = parsed.hostname in {"127.0.0.1", "localhost", "::1"}
    if not (parsed.scheme == "https" or (parsed.scheme == "http" and loopback)) or (
        not parsed.hostname or parsed.query or parsed.fragment
    ):
        raise ConfigError(
            f"TICKETPROXY_OIDC_ISSUER={value!r} is not an https issuer URL: use "
            "https://token.actions.githubusercontent.com (GitHub Actions), or set it empty "
            "to trust no OIDC issuer; plain http is for a local test issuer only"
        )
    return value.rstrip("/")


def parse_tree_after_steps(raw: str | None, name: str = "TICKETPROXY_TREE_AFTER_STEPS") -> int:
    """Return after how many steps a run's later steps open as child issues (50 unset).

    ``always`` (or 0) opens every later step as a child issue.
    """
    if raw is None or raw.strip() == "":
        return 50
    text = raw.strip().lower()
    if text == "always":
        return 0
    if not text.isascii() or not text.isdigit():
        raise ConfigError(
            f"{name} must be a whole number of steps (0 or 'always': every later step opens"
            f" as a child issue), got {raw!r}"
        )
    return int(text)
