"""GitHub Apps: a repository's installation, and installation access tokens.

Both operations need the App's JWT (checked by the dispatcher), not a token.
"""

from __future__ import annotations

from embedded_github.account_payloads import JsonObject, organization_id
from embedded_github.apps import APP_PERMISSIONS, UNDECODABLE
from embedded_github.config import SandboxApp
from embedded_github.errors import ApiError, not_found
from embedded_github.routing import ApiCall, Reply, Route, route
from embedded_github.timestamps import format_timestamp

_APPS_DOCS = "https://docs.github.com/rest/apps/apps"
_TOKEN_DOCS = f"{_APPS_DOCS}#create-an-installation-access-token-for-an-app"
_INSTALLATION_DOCS = f"{_APPS_DOCS}#get-a-repository-installation-for-the-authenticated-app"
_EVENTS = ("issue_comment", "issues")


def _calling_app(call: ApiCall) -> SandboxApp:
    if call.app is None:
        # GitHub's answer to a token where these operations want the App's JWT.
        raise ApiError(401, UNDECODABLE, documentation_url=call.docs)
    return call.app


def create_installation_token(call: ApiCall) -> Reply:
    """Mint an installation token for the calling App's own installation."""
    app = _calling_app(call)
    if int(call.params["installation_id"]) != app.installation_id:
        raise not_found(call.docs)
    grant = call.state.grant_installation_token(app)
    payload = {
        "token": grant.token,
        "expires_at": format_timestamp(grant.expires_at),
        "permissions": dict(APP_PERMISSIONS),
        "repository_selection": "all",
    }
    return Reply(status=201, payload=payload)


def get_repo_installation(call: ApiCall) -> Reply:
    """Return the calling App's installation on a hosted repository."""
    app = _calling_app(call)
    repo = call.repo()
    return Reply(payload=installation(call, app, owner=repo.owner))


def installation(call: ApiCall, app: SandboxApp, *, owner: str) -> JsonObject:
    """Return the ``installation`` object of an App installed on every repository of ``owner``."""
    payloads = call.payloads
    account = call.state.find_user(owner)
    if account is not None:
        owner_payload = payloads.user(account.login, account.id)
    else:
        owner_payload = payloads.user(owner, organization_id(owner), kind="Organization")
    # The installation is as old as the sandbox's notion of a day ago: stable enough.
    created = format_timestamp(call.now - 86_400)
    return {
        "id": app.installation_id,
        "account": owner_payload,
        "repository_selection": "all",
        "access_tokens_url": f"{payloads.api}/app/installations/{app.installation_id}"
        "/access_tokens",
        "repositories_url": f"{payloads.api}/installation/repositories",
        "html_url": f"{payloads.origin}/organizations/{owner}/settings/installations/"
        f"{app.installation_id}",
        "app_id": app.id,
        "app_slug": app.slug,
        "target_id": owner_payload["id"],
        "target_type": owner_payload["type"],
        "permissions": dict(APP_PERMISSIONS),
        "events": list(_EVENTS),
        "created_at": created,
        "updated_at": created,
        "single_file_name": None,
        "suspended_by": None,
        "suspended_at": None,
    }


ROUTES: tuple[Route, ...] = (
    route(
        "POST",
        "/app/installations/{installation_id}/access_tokens",
        create_installation_token,
        _TOKEN_DOCS,
        needs_auth=False,
        app_only=True,
    ),
    route(
        "GET",
        "/repos/{owner}/{repo}/installation",
        get_repo_installation,
        _INSTALLATION_DOCS,
        app_only=True,
    ),
)
