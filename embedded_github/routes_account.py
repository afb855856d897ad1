"""Accounts and repositories: rate limit, users, the repository, collaborator permission."""

from __future__ import annotations

from embedded_github.account_payloads import organization_id
from embedded_github.errors import ApiError, not_found
from embedded_github.routing import ApiCall, Reply, Route, route

_RATE_DOCS = (
    "https://docs.github.com/rest/rate-limit/rate-limit"
    "#get-rate-limit-status-for-the-authenticated-user"
)
_USERS_DOCS = "https://docs.github.com/rest/users/users"
_REPO_DOCS = "https://docs.github.com/rest/repos/repos#get-a-repository"
_PERMISSION_DOCS = (
    "https://docs.github.com/rest/collaborators/collaborators#get-repository-permissions-for-a-user"
)


def get_rate_limit(call: ApiCall) -> Reply:
    """Return the caller's budgets; asking does not spend any (GitHub's documented rule)."""
    core = {
        "limit": call.rate.limit,
        "used": call.rate.used,
        "remaining": call.rate.remaining,
        "reset": call.rate.reset,
    }

    def untouched(limit: int, seconds: int) -> dict[str, int]:
        return {"limit": limit, "used": 0, "remaining": limit, "reset": call.now + seconds}

    resources = {
        "core": core,
        "search": untouched(30, 60),
        "graphql": untouched(5000, 3600),
        "integration_manifest": untouched(5000, 3600),
        "source_import": untouched(100, 60),
        "code_scanning_upload": untouched(1000, 3600),
        "actions_runner_registration": untouched(10000, 3600),
        "scim": untouched(15000, 3600),
        "dependency_snapshots": untouched(100, 60),
        "code_search": untouched(10, 60),
    }
    return Reply(payload={"resources": resources, "rate": core})


def get_authenticated_user(call: ApiCall) -> Reply:
    """Return the user the token belongs to."""
    if call.viewer is None:
        raise ApiError(401, "Requires authentication", documentation_url=call.docs)
    return Reply(payload=call.payloads.authenticated_user(call.viewer, now=call.now))


def get_user(call: ApiCall) -> Reply:
    """Return a configured user, or the organization owning a hosted repository."""
    login = call.params["login"]
    user = call.state.find_user(login)
    if user is not None:
        return Reply(payload=call.payloads.user(user.login, user.id))
    for repo in call.state.repos:
        if repo.owner.lower() == login.lower():
            payload = call.payloads.user(
                repo.owner, organization_id(repo.owner), kind="Organization"
            )
            return Reply(payload=payload)
    raise not_found(call.docs)


def get_repository(call: ApiCall) -> Reply:
    """Return a hosted repository."""
    repo = call.repo()
    return Reply(payload=call.payloads.repository(repo, viewer=call.viewer, now=call.now))


def get_collaborator_permission(call: ApiCall) -> Reply:
    """Return a configured user's permission on a repository."""
    call.repo()
    user = call.state.find_user(call.params["username"])
    if user is None:
        raise not_found(call.docs)
    return Reply(payload=call.payloads.collaborator_permission(user))


ROUTES: tuple[Route, ...] = (
    route("GET", "/rate_limit", get_rate_limit, _RATE_DOCS, counts_against_limit=False),
    route("GET", "/user", get_authenticated_user, f"{_USERS_DOCS}#get-the-authenticated-user"),
    route("GET", "/users/{login}", get_user, f"{_USERS_DOCS}#get-a-user"),
    route("GET", "/repos/{owner}/{repo}", get_repository, _REPO_DOCS),
    route(
        "GET",
        "/repos/{owner}/{repo}/collaborators/{username}/permission",
        get_collaborator_permission,
        _PERMISSION_DOCS,
    ),
)
