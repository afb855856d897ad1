"""The drafting model's settings: its base URL, key, model and timeout, all off by default."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proxy.errors import ConfigError
from proxy.setting_values import read_number

_DRAFT_URL = "TICKETPROXY_DRAFT_URL"


def read_draft_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """Read the drafting model's settings; drafting is off unless TICKETPROXY_DRAFT_URL is set."""
    url = (environ.get(_DRAFT_URL) or "").strip()
    key = environ.get("TICKETPROXY_DRAFT_KEY") or None
    model = (environ.get("TICKETPROXY_DRAFT_MODEL") or "").strip() or None
    timeout = read_number(environ, "TICKETPROXY_DRAFT_TIMEOUT", 120.0, low=0.1)
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
