"""GitHub Apps in the sandbox: the App's JWT, installation tokens, and their expiry."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import jwt
import pytest

from embedded_github import (
    RunningSandbox,
    SandboxApp,
    SandboxConfig,
    load_sandbox_config,
    save_sandbox_config,
)
from embedded_github.timestamps import to_epoch
from tests.helpers.embedded_github_fixtures import ManualClock
from tests.helpers.github_app import (
    APP_ID,
    INSTALLATION_ID,
    SLUG,
    desk_app,
    private_pem,
    public_pem,
)
from tests.helpers.github_openapi.validate import assert_matches_response

TOKENS_PATH = f"/app/installations/{INSTALLATION_ID}/access_tokens"


def app_jwt(now: int, *, key: str = "app", **claims: Any) -> str:
    """Return an RS256 App JWT as PyGithub makes it, with ``claims`` overriding."""
    payload: dict[str, Any] = {"iat": now - 60, "exp": now + 300, "iss": str(APP_ID)}
    payload.update(claims)
    return jwt.encode(payload, private_pem(key), algorithm="RS256")


@pytest.fixture
async def app_sandbox(
    start_github_sandbox: Callable[..., Awaitable[RunningSandbox]],
    sandbox_config: SandboxConfig,
    sandbox_clock: ManualClock,
) -> RunningSandbox:
    """Return a running sandbox, on the manual clock, with the ``ticket-desk`` App."""
    config = replace(sandbox_config, apps=(desk_app(),))
    return await start_github_sandbox(config, clock=sandbox_clock)


async def call(
    sandbox: RunningSandbox, method: str, path: str, *, auth: str, body: Any = None
) -> tuple[int, Any]:
    """Send one API request with an ``Authorization`` header; return status and JSON."""
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method, sandbox.api_url + path, json=body, headers={"Authorization": auth}
        ) as response,
    ):
        return response.status, await response.json()


def now_of(clock: ManualClock) -> int:
    """Return the clock's time in epoch seconds."""
    return to_epoch(clock())


async def test_valid_app_jwt_buys_an_installation_token_in_githubs_shape(
    app_sandbox: RunningSandbox, sandbox_clock: ManualClock
) -> None:
    """A correctly signed JWT gets a ``ghs_`` token valid for one hour, as GitHub answers."""
    now = now_of(sandbox_clock)
    status, body = await call(
        app_sandbox, "POST", TOKENS_PATH, auth=f"Bearer {app_jwt(now)}", body={"permissions": {}}
    )
    assert status == 201
    assert_matches_response(body, "POST", "/app/installations/{installation_id}/access_tokens", 201)
    assert body["token"].startswith("ghs_")
    assert body["expires_at"] == "2026-01-01T01:00:00Z"
    assert body["permissions"]["issues"] == "write"
    assert body["repository_selection"] == "all"


async def test_app_id_is_accepted_as_a_number_in_iss(
    app_sandbox: RunningSandbox, sandbox_clock: ManualClock
) -> None:
    """GitHub takes ``iss`` as the App id in a number as well as in a string."""
    now = now_of(sandbox_clock)
    claims = {"iat": now - 60, "exp": now + 300, "iss": APP_ID}
    # PyJWT only writes string issuers, so sign the claims as raw JWS.
    token = jwt.PyJWS().encode(
        json.dumps(claims).encode(), private_pem("app"), algorithm="RS256", headers={"typ": "JWT"}
    )
    status, _ = await call(app_sandbox, "POST", TOKENS_PATH, auth=f"Bearer {token}")
    assert status == 201


async def test_installation_token_acts_as_the_apps_bot_user(
    app_sandbox: RunningSandbox, sandbox_clock: ManualClock
) -> None:
    """An issue opened with the installation token is authored by ``<slug>[bot]``, a Bot."""
    _, grant = await call(
        app_sandbox, "POST", TOKENS_PATH, auth=f"Bearer {app_jwt(now_of(sandbox_clock))}"
    )
    status, issue = await call(
        app_sandbox,
        "POST",
        "/repos/acme/agents/issues",
        auth=f"token {grant['token']}",
        body={"title": "From the App"},
    )
    assert status == 201
    assert issue["user"]["login"] == "ticket-desk[bot]"
    assert issue["user"]["type"] == "Bot"
    assert issue["user"]["id"] == 9001


async def test_installation_token_is_refused_after_its_hour(
    app_sandbox: RunningSandbox, sandbox_clock: ManualClock
) -> None:
    """Once the sandbox clock passes ``expires_at`` the token gets 401 Bad credentials."""
    _, grant = await call(
        app_sandbox, "POST", TOKENS_PATH, auth=f"Bearer {app_jwt(now_of(sandbox_clock))}"
    )
    auth = f"token {grant['token']}"
    sandbox_clock.advance(3599)
    assert (await call(app_sandbox, "GET", "/repos/acme/agents/issues", auth=auth))[0] == 200
    sandbox_clock.advance(1)
    status, body = await call(app_sandbox, "GET", "/repos/acme/agents/issues", auth=auth)
    assert status == 401
    assert body["message"] == "Bad credentials"


async def test_repository_installation_names_the_app_and_its_installation(
    app_sandbox: RunningSandbox, sandbox_clock: ManualClock
) -> None:
    """``GET /repos/{o}/{r}/installation`` with the JWT tells the slug and installation id."""
    token = app_jwt(now_of(sandbox_clock))
    status, body = await call(
        app_sandbox, "GET", "/repos/acme/agents/installation", auth=f"Bearer {token}"
    )
    assert status == 200
    assert (body["id"], body["app_id"], body["app_slug"]) == (INSTALLATION_ID, APP_ID, SLUG)
    assert body["access_tokens_url"] == app_sandbox.api_url + TOKENS_PATH


async def test_expired_jwt_is_rejected(
    app_sandbox: RunningSandbox, sandbox_clock: ManualClock
) -> None:
    """A JWT whose ``exp`` has passed on GitHub's clock is refused with GitHub's message."""
    token = app_jwt(now_of(sandbox_clock))
    sandbox_clock.advance(301)
    status, body = await call(app_sandbox, "POST", TOKENS_PATH, auth=f"Bearer {token}")
    assert status == 401
    assert body["message"].startswith("'Expiration time' claim ('exp') must be a numeric value")


async def test_jwt_living_longer_than_ten_minutes_is_rejected(
    app_sandbox: RunningSandbox, sandbox_clock: ManualClock
) -> None:
    """``exp - iat`` above 600 s is refused as too far in the future."""
    now = now_of(sandbox_clock)
    token = app_jwt(now, iat=now - 60, exp=now + 541 + 60)
    status, body = await call(app_sandbox, "POST", TOKENS_PATH, auth=f"Bearer {token}")
    assert status == 401
    assert body["message"] == "'Expiration time' claim ('exp') is too far in the future"


async def test_jwt_issued_beyond_the_clock_skew_is_rejected(
    app_sandbox: RunningSandbox, sandbox_clock: ManualClock
) -> None:
    """An ``iat`` more than 60 s ahead of GitHub's clock is refused."""
    now = now_of(sandbox_clock)
    status, body = await call(
        app_sandbox, "POST", TOKENS_PATH, auth=f"Bearer {app_jwt(now, iat=now + 61)}"
    )
    assert status == 401
    assert body["message"].startswith("'Issued at' claim ('iat')")


async def test_jwt_with_wrong_issuer_is_rejected(
    app_sandbox: RunningSandbox, sandbox_clock: ManualClock
) -> None:
    """A JWT naming another App id in ``iss`` cannot be decoded by GitHub."""
    token = app_jwt(now_of(sandbox_clock), iss=str(APP_ID + 1))
    status, body = await call(app_sandbox, "POST", TOKENS_PATH, auth=f"Bearer {token}")
    assert status == 401
    assert body["message"] == "A JSON web token could not be decoded"


async def test_jwt_signed_with_the_wrong_key_is_rejected(
    app_sandbox: RunningSandbox, sandbox_clock: ManualClock
) -> None:
    """A JWT for the right App signed by a key GitHub does not know is refused."""
    token = app_jwt(now_of(sandbox_clock), key="stranger")
    status, body = await call(app_sandbox, "POST", TOKENS_PATH, auth=f"Bearer {token}")
    assert status == 401
    assert body["message"] == "A JSON web token could not be decoded"
    assert app_sandbox.sandbox.state.grants == ()


async def test_jwt_with_alg_none_is_rejected(
    app_sandbox: RunningSandbox, sandbox_clock: ManualClock
) -> None:
    """An unsigned JWT (``alg: none``) is refused whatever its claims say."""
    now = now_of(sandbox_clock)
    claims = {"iat": now - 60, "exp": now + 300, "iss": str(APP_ID)}
    token = jwt.encode(claims, None, algorithm="none")
    status, body = await call(app_sandbox, "POST", TOKENS_PATH, auth=f"Bearer {token}")
    assert status == 401
    assert body["message"] == "A JSON web token could not be decoded"


async def test_jwt_signed_with_hmac_over_the_public_key_is_rejected(
    app_sandbox: RunningSandbox, sandbox_clock: ManualClock
) -> None:
    """An HS256 JWT keyed with the App's public key (algorithm confusion) is refused."""
    now = now_of(sandbox_clock)
    claims = {"iat": now - 60, "exp": now + 300, "iss": str(APP_ID)}
    header = jwt.utils.base64url_encode(b'{"alg":"HS256","typ":"JWT"}').decode()
    body_part = jwt.utils.base64url_encode(json.dumps(claims).encode()).decode()
    token = f"{header}.{body_part}.c2lnbmF0dXJl"
    status, body = await call(app_sandbox, "POST", TOKENS_PATH, auth=f"Bearer {token}")
    assert status == 401
    assert body["message"] == "A JSON web token could not be decoded"


async def test_personal_token_cannot_buy_an_installation_token(
    app_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """The token endpoint wants the App's JWT: a user's token gets 401."""
    alice = next(u.token for u in sandbox_config.users if u.login == "alice")
    status, _ = await call(app_sandbox, "POST", TOKENS_PATH, auth=f"token {alice}")
    assert status == 401
    assert app_sandbox.sandbox.state.grants == ()


async def test_token_for_another_installation_is_not_found(
    app_sandbox: RunningSandbox, sandbox_clock: ManualClock
) -> None:
    """An App asking for an installation that is not its own gets 404."""
    path = f"/app/installations/{INSTALLATION_ID + 1}/access_tokens"
    status, _ = await call(
        app_sandbox, "POST", path, auth=f"Bearer {app_jwt(now_of(sandbox_clock))}"
    )
    assert status == 404


async def test_app_jwt_cannot_do_an_installations_work(
    app_sandbox: RunningSandbox, sandbox_clock: ManualClock
) -> None:
    """The JWT only buys tokens: opening an issue with it is forbidden."""
    status, _ = await call(
        app_sandbox,
        "POST",
        "/repos/acme/agents/issues",
        auth=f"Bearer {app_jwt(now_of(sandbox_clock))}",
        body={"title": "no"},
    )
    assert status == 403


def test_apps_are_saved_and_loaded_with_the_users_file(
    sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """A config with an App round-trips through the users file unchanged."""
    config = replace(sandbox_config, apps=(desk_app(),))
    path = tmp_path / "sandbox-users.json"
    save_sandbox_config(path, config)
    assert load_sandbox_config(path) == config


def test_app_whose_bot_login_is_not_slug_bot_is_refused() -> None:
    """The bot of App ``x`` is ``x[bot]``; anything else is a configuration error."""
    with pytest.raises(ValueError, match=r"must be ticket-desk\[bot\]"):
        SandboxApp(APP_ID, SLUG, public_pem("app"), INSTALLATION_ID, "ticket-desk", 9001)
