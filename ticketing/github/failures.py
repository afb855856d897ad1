"""Turn PyGithub and transport failures into the ticketing error tree, with the fix to make.

A rate limit, a 5xx or a dropped connection becomes :class:`GitHubUnavailable` with the wait
GitHub asked for; anything else becomes :class:`GitHubError`, naming the setting to check.
"""

from __future__ import annotations

import github
from github import GithubException

from ticketing.clock import utc_now
from ticketing.errors import GitHubError, GitHubUnavailable
from ticketing.github.response_headers import header_value

# How long to wait for GitHub before retrying when it gave no hint (5xx, dropped connection).
DEFAULT_BACKOFF = 2.0

# Where each credential comes from, for error messages that name what to fix.
PAT_SETTING = "TICKETPROXY_GITHUB_TOKEN"
APP_VARIABLES = (
    "TICKETPROXY_GITHUB_APP_ID and TICKETPROXY_GITHUB_APP_PRIVATE_KEY "
    "(or TICKETPROXY_GITHUB_APP_PRIVATE_KEY_FILE)"
)
APP_INSTALLATION_VARIABLE = "TICKETPROXY_GITHUB_APP_INSTALLATION_ID"


def classify_github_failure(
    exc: BaseException, *, now: float | None = None, app: bool = False
) -> GitHubError:
    """Turn a PyGithub or transport exception into this package's error tree.

    ``app`` says ticketproxy authenticates as a GitHub App, so the messages name its settings.
    """
    now = utc_now().timestamp() if now is None else now
    if isinstance(exc, GithubException):
        return _classify_response(exc, now=now, app=app)
    if isinstance(exc, OSError):
        # requests' ConnectionError and Timeout are OSErrors.
        return GitHubUnavailable(
            f"GitHub is unreachable ({type(exc).__name__})", retry_after=DEFAULT_BACKOFF
        )
    return GitHubError(f"unexpected failure talking to GitHub: {type(exc).__name__}: {exc}")


def _classify_response(exc: GithubException, *, now: float, app: bool) -> GitHubError:
    """Classify an error answer from GitHub by its status and rate-limit headers."""
    status = exc.status
    headers = exc.headers
    data_message = exc.data.get("message") if isinstance(exc.data, dict) else None
    message = str(exc.message or data_message or f"HTTP {status}")
    retry_after = header_value(headers, "retry-after")
    remaining = header_value(headers, "x-ratelimit-remaining")
    reset = header_value(headers, "x-ratelimit-reset")
    limited = (
        isinstance(exc, github.RateLimitExceededException)
        or status == 429
        or (status == 403 and (retry_after is not None or remaining == "0"))
    )
    if limited:
        if retry_after is not None:
            wait = float(retry_after)
        elif remaining == "0" and reset is not None:
            wait = max(1.0, float(reset) - now)
        else:
            # GitHub's advice when it names no time: wait at least a minute.
            wait = 60.0
        return GitHubUnavailable(
            f"GitHub is rate-limiting ticketproxy ({status}: {message})",
            retry_after=wait,
            status=status,
        )
    if status >= 500:
        wait = float(retry_after) if retry_after is not None else DEFAULT_BACKOFF
        return GitHubUnavailable(
            f"GitHub failed ({status}: {message})", retry_after=wait, status=status
        )
    if status == 401 and app:
        return GitHubError(
            f"GitHub rejected the GitHub App's credentials (401 {message}): check that "
            f"{APP_VARIABLES} are the App's id and one of its private keys",
            status=status,
        )
    if status == 401:
        return GitHubError(
            f"GitHub rejected the token (401 Bad credentials): check {PAT_SETTING}",
            status=status,
        )
    if status == 404 and app:
        return GitHubError(
            f"GitHub answered 404: check TICKETPROXY_GITHUB_REPO and that "
            f"{APP_INSTALLATION_VARIABLE} names the App's installation on that repository",
            status=status,
        )
    if status == 404:
        return GitHubError(
            "GitHub answered 404: check TICKETPROXY_GITHUB_REPO and that the token can see "
            "the repository",
            status=status,
        )
    if status == 403:
        return GitHubError(
            f"GitHub refused ({message}): the token needs read and write access to Issues",
            status=status,
        )
    return GitHubError(f"GitHub answered {status}: {message}", status=status)
