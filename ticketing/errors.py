"""Errors raised by the ticketing layer.

::

    TicketingError
    ├── GitHubError            GitHub refused, and waiting will not help (status)
    │   └── GitHubUnavailable  rate-limited, failing or unreachable (retry_after)
    ├── StoreError             the durable store cannot be opened or is from a newer version
    │   └── StoreUnavailable   the database is down or busy for now (retry_after)
    ├── TicketNotFound         a ticket named by a user (CLI, URL) does not exist
    ├── OidcKeysUnavailable  the trusted OIDC issuer's keys cannot be fetched now
    ├── IssuerKeyRefused     an issuer key or JWKS file that is not public keys only
    ├── DeskStopped            the desk is stopping; a waiting client retries and re-attaches
    └── WebhookError           a webhook delivery cannot be trusted or read
        ├── MissingSignature   no ``X-Hub-Signature-256`` header
        ├── BadSignature       the header does not match the body's HMAC-SHA256
        └── BadPayload         signed, but not the ``issue_comment`` payload GitHub documents

The proxy turns ``GitHubUnavailable`` and ``StoreUnavailable`` into a 429 with
``retry-after``: clients retry that, whereas AutoGPT stops the agent on a 500 or 503. Any
other ``GitHubError`` is not back-pressure, and becomes a 500 that stops the agent with the
operator's fix.
"""

from __future__ import annotations


class TicketingError(Exception):
    """Base of every error the ticketing layer raises."""


class GitHubError(TicketingError):
    """GitHub answered with an error that retrying soon will not fix."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    @property
    def misconfigured(self) -> bool:
        """Say whether GitHub refused the credentials or the repository (401, 403, 404, 410).

        410 Gone is GitHub's answer to an issue call on a repository with Issues turned off.
        """
        return not isinstance(self, GitHubUnavailable) and self.status in (401, 403, 404, 410)


class GitHubUnavailable(GitHubError):
    """GitHub is rate-limiting, failing or unreachable; try again after ``retry_after`` seconds."""

    def __init__(self, message: str, *, retry_after: float, status: int | None = None) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class StoreError(TicketingError):
    """The durable store cannot be used."""


class StoreUnavailable(StoreError):
    """The store's database is down, unreachable or too busy; retry after ``retry_after`` s."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TicketNotFound(TicketingError):
    """No ticket matches what was asked for."""


class DeskStopped(TicketingError):
    """The desk is stopping: a waiting client is told to retry and re-attach."""

    def __init__(self) -> None:
        super().__init__("ticketproxy is stopping; retry to re-attach to the ticket")


class WebhookError(TicketingError):
    """A webhook delivery cannot be trusted or read."""


class MissingSignature(WebhookError):
    """The delivery carries no ``X-Hub-Signature-256`` header."""


class BadSignature(WebhookError):
    """The delivery's signature does not match its body and the configured secret."""


class BadPayload(WebhookError):
    """The delivery is signed but is not a payload GitHub documents."""


class IssuerKeyRefused(TicketingError):
    """An OIDC issuer key (or a JWKS file) that is not a public key: never kept or trusted."""


class OidcKeysUnavailable(TicketingError):
    """The trusted OIDC issuer's JWKS cannot be fetched now; judge agents' tokens later."""
