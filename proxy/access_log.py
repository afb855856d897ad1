"""The access log, with credentials in URLs redacted before anything is logged.

A URL can carry a secret: the desk token as ``?token=``, an API key as ``?api_key=``, a
password as ``user:pass@host``. aiohttp's access log writes the request line and the
``Referer`` as they came, so :class:`AccessLog` redacts them (and the structured fields it
hands the log record) first; ``Authorization``, ``Cookie`` and the other credential headers
are never written at all, even by a custom format. :func:`redact_credentials` is also
applied by ticketproxy's log formatters, for a runner started without this class.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from aiohttp.web_log import AccessLogger
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse

REDACTED = "[redacted]"
# Query parameters whose name says they hold a credential (token, access_token, key,
# api_key, password, client_secret, sig, ...), up to the next separator.
_QUERY_SECRET = re.compile(
    r"(?P<name>[?&;][\w.\-\[\]]*?(?:token|key|secret|passw(?:or)?d|pwd|auth|sig|signature"
    r"|credential|session)[\w.\-\[\]]*=)(?P<value>[^&;#\s\"']*)",
    re.IGNORECASE,
)
# The user information of a URL: scheme://user:password@host (or a token as the user).
_USERINFO = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.\-]*://)[^/?#\s@\"']+@", re.IGNORECASE)
# Headers whose whole value is a credential: never written, whatever the format asks for.
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-api-key",
        "api-key",
        # The editor's own GitHub token, sent to the desk API with a signed comment.
        "x-github-token",
    }
)


def redact_credentials(text: str) -> str:
    """Return ``text`` with credentials in the URLs it holds replaced by ``[redacted]``."""
    if "=" not in text and "@" not in text:
        return text
    text = _QUERY_SECRET.sub(lambda m: m["name"] + REDACTED, text)
    return _USERINFO.sub(lambda m: m["scheme"] + REDACTED + "@", text)


class AccessLog(AccessLogger):
    """aiohttp's access log (same format), with credentials redacted from every field."""

    def _format_line(
        self, request: BaseRequest, response: StreamResponse, time: float
    ) -> Iterable[tuple[str | tuple[str, str], str]]:
        return [
            (key, _redact_field(key, value))
            for key, value in super()._format_line(request, response, time)
        ]


def _redact_field(key: str | tuple[str, str], value: Any) -> Any:
    # Values are strings, or numbers for the status and size despite aiohttp's annotation.
    if isinstance(key, tuple) and key[1].lower() in SECRET_HEADERS and value != "-":
        return REDACTED
    return redact_credentials(value) if isinstance(value, str) else value
