"""The proxy's exception tree: bad settings, failed drafts, and the errors clients get.

::

    ProxyError
    ├── ConfigError            a setting is missing or malformed (names the variable and the fix)
    ├── DraftFailed            the drafting model gave no usable answer (logged, never answered)
    ├── JsonRpcError           a JSON-RPC error object (A2A, MCP): proxy/json_rpc.py draws its tree
    └── APIError               answered as {"error": {"message", "type", "param", "code"}}
        ├── InvalidRequest     400 invalid_request_error
        ├── Unauthorized       401 invalid_api_key
        ├── Forbidden          403 a Host or Origin this server does not answer (a browser attack)
        ├── NotFound           404 (unknown route or model)
        ├── MethodNotAllowed   405
        ├── RequestTimeout     408: the body did not arrive in time
        ├── PayloadTooLarge    413
        ├── UnsupportedMediaType 415 a JSON endpoint sent something other than JSON
        ├── RateLimited        429 with retry-after (also GitHub back-pressure)
        ├── GitHubRefused      500: GitHub refused the ticket; retrying will not help
        └── UpstreamUnavailable 502: an upstream-routed model did not answer

Only :mod:`proxy.middleware` turns an ``APIError`` into an HTTP response, in OpenAI's error
envelope; a ``DraftFailed`` only ever reaches the log and the ticket's draft record.
"""

from __future__ import annotations

from typing import Any


class ProxyError(Exception):
    """Base of every error the proxy raises."""


class ConfigError(ProxyError):
    """A setting is missing or malformed."""


class DraftFailed(ProxyError):
    """The drafting model gave no usable answer; the message is safe to log and store."""


class APIError(ProxyError):
    """An error answered to the client in OpenAI's error envelope."""

    status = 500
    type = "server_error"
    # Close the connection after answering: the client's unread body must not be waited for.
    closes_connection = False

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code

    def envelope(self) -> dict[str, Any]:
        """Return OpenAI's error body for this error."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


class InvalidRequest(APIError):
    """The request is malformed or asks for something ticketproxy does not do."""

    status = 400
    type = "invalid_request_error"


class Unauthorized(APIError):
    """The client's API key is missing or wrong."""

    status = 401
    type = "invalid_request_error"
    # The ``WWW-Authenticate`` challenge sent with it (RFC 9110 section 11.6.1), if any.
    challenge: str | None = None


class Forbidden(APIError):
    """The request comes through a name or from a page this server does not answer."""

    status = 403
    type = "invalid_request_error"


class NotFound(APIError):
    """The route or the model does not exist."""

    status = 404
    type = "invalid_request_error"


class MethodNotAllowed(APIError):
    """The route exists but not for this method."""

    status = 405
    type = "invalid_request_error"


class RequestTimeout(APIError):
    """The request body did not arrive within TICKETPROXY_BODY_TIMEOUT."""

    status = 408
    type = "invalid_request_error"
    # The rest of the body is never read: say the connection closes (RFC 9110, 15.5.9).
    closes_connection = True


class PayloadTooLarge(APIError):
    """The body is larger than the configured limit."""

    status = 413
    type = "invalid_request_error"


class UnsupportedMediaType(APIError):
    """A JSON endpoint was sent a body that does not say it is JSON."""

    status = 415
    type = "invalid_request_error"


class RateLimited(APIError):
    """Back off and retry: the client is told when with ``retry-after``."""

    status = 429
    type = "requests"

    def __init__(self, message: str, *, retry_after: float, code: str = "rate_limit_exceeded"):
        super().__init__(message, code=code)
        self.retry_after = retry_after


class GitHubRefused(APIError):
    """GitHub refused to open the ticket for a reason only the operator can fix (500).

    Not a 429: a client retries that forever. The openai client retries a 500 twice, then
    gives up, and AutoGPT ends the agent on it, with this message for the person running it.
    """

    status = 500
    type = "server_error"


class UpstreamUnavailable(APIError):
    """The upstream model could not be reached or did not answer in time (502)."""

    # AutoGPT and the openai client retry a 502; a 503 would stop AutoGPT's agent.
    status = 502
    type = "server_error"
