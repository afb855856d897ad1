"""Requests a browser was tricked into sending: foreign ``Host``, foreign ``Origin``, non-JSON.

ticketproxy on loopback is a local web service that any page the editor opens can reach, so
it checks what a browser cannot forge, as Jupyter and other local servers do:

- **Host** (DNS rebinding: a page on ``evil.example`` re-points its own name at 127.0.0.1 and
  then reads the desk as if it were its own origin). A host *name* must be one this server
  is known by: its listening host, ``TICKETPROXY_DESK_URL``'s host, ``localhost``, or one of
  ``TICKETPROXY_ALLOWED_HOSTS`` (``.example.com`` takes its subdomains, ``*`` turns the check
  off). An address literal (``127.0.0.1:8080``, ``[::1]``, a pod's IP) passes: no DNS answer
  stands behind it, so it cannot be rebound. ``/healthz`` and ``/readyz`` are not checked
  (probes send whatever name they were given, and these say only "up" and "ready"), nor is
  the GitHub webhook (GitHub sends the public name it was given; the HMAC signature is its
  authentication).
- **Origin** (cross-site requests): a browser names the page that sent a request; when it
  does, it must be this server's own origin (the ``Host`` the request came to),
  ``TICKETPROXY_DESK_URL``'s, or one of ``TICKETPROXY_ALLOWED_ORIGINS``. Agents and probes
  send no ``Origin`` and pass.
- **JSON content type** on every POST but the webhook: a page may POST ``text/plain``
  cross-site without a CORS preflight, but not ``application/json``, so requiring it keeps a
  page from opening tickets and spending GitHub's write budget. The openai client (and so
  LangChain and AutoGPT) sends ``application/json``.

Refusals are 403 and 415 in the route's own envelope: OpenAI's on ``/v1``, the desk's
``{"error": ...}`` on ``/desk``.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import hdrs, web
from aiohttp.helpers import parse_content_type

from .errors import APIError, Forbidden, UnsupportedMediaType
from .settings import Settings
from .webhook import WEBHOOK_PATH

log = logging.getLogger(__name__)

# Probes send whatever Host they were configured with; these two reveal nothing a page wants.
PROBE_PATHS = frozenset({"/healthz", "/readyz"})
# Names that only ever mean this machine: no outside DNS answer can stand behind them.
LOOPBACK_NAMES = frozenset({"localhost"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_NO_STORE = {"Cache-Control": "no-store"}


@dataclass(frozen=True)
class OriginPolicy:
    """Which host names and browser origins this server answers."""

    names: frozenset[str]
    suffixes: tuple[str, ...] = ()
    any_host: bool = False
    origins: frozenset[tuple[str, str, int]] = frozenset()

    @classmethod
    def from_settings(cls, settings: Settings) -> OriginPolicy:
        """Gather the names and origins from the listening host, the desk URL and the lists."""
        names = set(LOOPBACK_NAMES)
        listening, is_address = _read_host(settings.host)
        if listening is not None and not is_address:
            names.add(listening)
        origins = {_split_origin(origin) for origin in settings.allowed_origins}
        if settings.desk_url is not None:
            desk = urlsplit(settings.desk_url)
            names.add((desk.hostname or "").rstrip("."))
            origins.add(_split_origin(f"{desk.scheme}://{desk.netloc}"))
        allowed = settings.allowed_hosts
        return cls(
            names=frozenset(names | {n for n in allowed if not n.startswith((".", "*"))}),
            suffixes=tuple(n for n in allowed if n.startswith(".")),
            any_host="*" in allowed,
            origins=frozenset(o for o in origins if o is not None),
        )

    def host_refusal(self, host: str | None) -> str | None:
        """Return why a request to ``host`` (the Host header) is refused, or None."""
        if host is None or self.any_host:
            # Browsers always send Host; a client that sends none is not a rebinding page.
            return None
        name, is_address = _read_host(host)
        if name is not None and (
            is_address
            or name in self.names
            or name.endswith(self.suffixes)
            or f".{name}" in self.suffixes
        ):
            return None
        return (
            f"this ticketproxy does not answer requests addressed to the host {host!r} (a page "
            "using DNS rebinding would send one). Reach it by its own address, or add the name "
            "to TICKETPROXY_ALLOWED_HOSTS (or set TICKETPROXY_DESK_URL to it)."
        )

    def origin_refusal(self, origin: str | None, *, host: str | None) -> str | None:
        """Return why a request sent by the page ``origin`` to ``host`` is refused, or None."""
        if origin is None:
            return None
        split = _split_origin(origin)
        if split is not None and (split in self.origins or _same_origin(split, host)):
            return None
        return (
            f"requests from web pages of another origin ({origin!r}) are refused: a page you "
            "visit must not use this ticketproxy on your behalf. To let a page of yours call "
            "it, add its origin to TICKETPROXY_ALLOWED_ORIGINS."
        )


def content_type_refusal(request: web.Request) -> str | None:
    """Return why a POST body is refused for not saying it is JSON, or None."""
    if request.method != hdrs.METH_POST or request.path == WEBHOOK_PATH:
        return None
    if request.match_info.http_exception is not None:
        # An unknown route or method: the router's own 404 or 405 says more.
        return None
    sent = request.headers.get(hdrs.CONTENT_TYPE)
    if sent is not None and _media_type(sent) == "application/json":
        return None
    if request.path.startswith("/ap/") and _agent_protocol_body_allowed(request):
        return None
    return (
        f"{request.path} takes a JSON body: send `Content-Type: application/json` (this "
        f"request said {'none' if sent is None else sent!r}; a web page can send text/plain "
        "across sites, JSON it cannot)."
    )


@functools.lru_cache(maxsize=64)
def _media_type(content_type: str) -> str:
    """Return the lower-case media type of a Content-Type value, as aiohttp reads it.

    Not ``request.content_type``: aiohttp keeps what it parses on the request, several
    hundred bytes a request for as long as the request lasts, and a completion waits for
    hours. Cached: clients send a handful of values.
    """
    return parse_content_type(content_type)[0].lower()


def _agent_protocol_body_allowed(request: web.Request) -> bool:
    """Say whether an Agent Protocol POST may skip JSON: no body, or a file upload.

    The spec's step POST has an optional body (agbenchmark sends none) and its artifact
    upload is multipart. Both still need the client key in a header and a same-origin (or
    no) ``Origin``, which a cross-site form can send neither of.
    """
    if not request.body_exists:
        return True
    return request.path.endswith("/artifacts") and request.content_type == "multipart/form-data"


def refuse_foreign(policy: OriginPolicy, request: web.Request) -> web.StreamResponse | None:
    """Refuse a foreign Host, a foreign Origin or a non-JSON POST; None lets the request in.

    A refusal on the desk is returned in the desk's JSON; elsewhere it is raised, as an
    ``APIError`` for the route's front's envelope. A plain call, made before the handler by
    :mod:`proxy.front_door`, so it holds nothing while a completion waits.
    """
    host = request.headers.get(hdrs.HOST)
    reason = None
    if request.path not in PROBE_PATHS and request.path != WEBHOOK_PATH:
        reason = policy.host_refusal(host)
        if reason is not None:
            # Told to the operator too: a load balancer's unlisted name looks the same.
            log.warning(
                "refused a request addressed to %r, not a name of this server: if it is "
                "one, add it to TICKETPROXY_ALLOWED_HOSTS",
                host,
            )
    if reason is None:
        reason = policy.origin_refusal(request.headers.get(hdrs.ORIGIN), host=host)
    if reason is not None:
        return _refuse(request, Forbidden(reason, code="origin_not_allowed"))
    reason = content_type_refusal(request)
    if reason is not None:
        return _refuse(request, UnsupportedMediaType(reason, code="unsupported_content_type"))
    return None


def _refuse(request: web.Request, error: APIError) -> web.Response:
    if request.path == "/desk" or request.path.startswith("/desk/"):
        # The desk's own JSON shape, as its other refusals have.
        return web.json_response({"error": error.message}, status=error.status, headers=_NO_STORE)
    raise error


@functools.lru_cache(maxsize=256)
def _read_host(host: str) -> tuple[str | None, bool]:
    """Return the lower-case name or address in a Host value, and whether it is an address.

    Cached: every request carries a Host, and a server is reached by a handful of them.
    """
    try:
        parsed = urlsplit(f"//{host}")
        parsed.port  # noqa: B018 (a malformed port raises here)
    except ValueError:
        return None, False
    name = parsed.hostname
    if not name:
        return None, False
    name = name.rstrip(".")
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return name, False
    return name, True


def _split_origin(origin: str) -> tuple[str, str, int] | None:
    """Return an origin's (scheme, host, port), the port made explicit; None if malformed."""
    try:
        parsed = urlsplit(origin.strip())
        port = parsed.port
    except ValueError:
        return None
    scheme = parsed.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parsed.hostname:
        # Includes Origin: null, which sandboxed frames and file:// pages send.
        return None
    return scheme, parsed.hostname.rstrip("."), port or _DEFAULT_PORTS[scheme]


def _same_origin(origin: tuple[str, str, int], host: str | None) -> bool:
    """Say whether ``origin`` names the host and port the request was sent to."""
    if host is None:
        return False
    scheme, name, port = origin
    try:
        parsed = urlsplit(f"//{host}")
        host_port = parsed.port or _DEFAULT_PORTS[scheme]
    except ValueError:
        return False
    # Either scheme: behind a TLS-terminating proxy the page is https, the request plain.
    return (parsed.hostname or "").rstrip(".") == name and host_port == port
