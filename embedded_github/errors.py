"""GitHub's error answers, raised by the sandbox's handlers and rendered by its dispatcher.

``ApiError`` is the only exception: its status, message, ``errors`` list and extra headers
become the JSON body GitHub would send (``basic-error`` or ``validation-error``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

REST_DOCS = "https://docs.github.com/rest"
RATE_LIMIT_DOCS = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
SECONDARY_RATE_LIMIT_DOCS = (
    "https://docs.github.com/free-pro-team@latest/rest/overview/"
    "rate-limits-for-the-rest-api#about-secondary-rate-limits"
)
LOCKING_DOCS = "https://docs.github.com/articles/locking-conversations/"

# The message a fine-grained token gets when its user may not write to the repository.
NOT_ACCESSIBLE = "Resource not accessible by personal access token"


class ApiError(Exception):
    """An error answer, in GitHub's shape."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        documentation_url: str = REST_DOCS,
        errors: Sequence[Mapping[str, Any]] = (),
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Describe the answer: status, message, docs link, validation errors, headers."""
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message
        self.documentation_url = documentation_url
        self.errors = tuple(dict(error) for error in errors)
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        """Return the JSON body GitHub sends with this error."""
        body: dict[str, Any] = {"message": self.message}
        if self.errors:
            body["errors"] = [dict(error) for error in self.errors]
        body["documentation_url"] = self.documentation_url
        body["status"] = str(self.status)
        return body


def not_found(documentation_url: str = REST_DOCS) -> ApiError:
    """Return GitHub's 404, which it also uses to hide what a caller may not see."""
    return ApiError(404, "Not Found", documentation_url=documentation_url)


def validation_failed(documentation_url: str, *errors: Mapping[str, Any]) -> ApiError:
    """Return GitHub's 422 ``Validation Failed`` with its ``errors`` list."""
    return ApiError(422, "Validation Failed", documentation_url=documentation_url, errors=errors)


def missing_field(resource: str, field: str, documentation_url: str) -> ApiError:
    """Return the 422 for a required field that was not sent."""
    return validation_failed(
        documentation_url, {"resource": resource, "code": "missing_field", "field": field}
    )


def invalid_field(resource: str, field: str, documentation_url: str, value: Any = None) -> ApiError:
    """Return the 422 for a field whose value GitHub does not accept."""
    error: dict[str, Any] = {"resource": resource, "code": "invalid", "field": field}
    if isinstance(value, str | int) and not isinstance(value, bool):
        error["value"] = value
    return validation_failed(documentation_url, error)


def forbidden(documentation_url: str, message: str = NOT_ACCESSIBLE) -> ApiError:
    """Return GitHub's 403 for a caller without the permission an operation needs."""
    return ApiError(403, message, documentation_url=documentation_url)
