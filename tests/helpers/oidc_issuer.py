"""A local OIDC issuer, shaped like GitHub Actions': its own RSA key, JWKS and token endpoint.

A real aiohttp server on 127.0.0.1, port 0: ``/.well-known/jwks`` publishes the public key,
and ``/token?audience=…`` answers ``{"value": token}`` to the bearer ``request_token``, as
``$ACTIONS_ID_TOKEN_REQUEST_URL`` does in a job with ``id-token: write``. Tests also call
:meth:`LocalIssuer.mint` to forge the tokens an attacker would send.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from auth.agents import OidcAgent
from embedded_github import SandboxConfig, SandboxUser
from proxy.cli import main
from tests.helpers.stack import Stack

REPOSITORY = "alice/ticketproxy-agent"
REPOSITORY_ID = "424242"
ACTOR_ID = "1001"
WORKFLOW_REF = f"{REPOSITORY}/.github/workflows/agent.yml@refs/heads/main"
AGENT_LOGIN = "alice-agent"


def new_rsa_key() -> rsa.RSAPrivateKey:
    """Return a fresh 2048-bit RSA key, as GitHub's issuer uses."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def alices_agent(**changes: str) -> OidcAgent:
    """Return the keyring entry that lists alice's agent workflow (``changes`` override)."""
    values = {
        "login": AGENT_LOGIN,
        "on_behalf_of": "alice",
        "repository_id": REPOSITORY_ID,
        "job_workflow_ref": WORKFLOW_REF,
        "actor_id": ACTOR_ID,
    }
    values.update(changes)
    return OidcAgent(**values)


def with_agent_account(config: SandboxConfig) -> SandboxConfig:
    """Return ``config`` with the account alice's agent workflow posts as."""
    agent = SandboxUser(AGENT_LOGIN, 1004, secrets.token_hex(20), "write", "Alice's agent")
    return SandboxConfig(users=(*config.users, agent), repos=config.repos)


def list_alices_agent(keyring_path: Path, **changes: str) -> None:
    """List alice's agent workflow in the keyring file's ``oidc_agents``."""
    keyring = json.loads(keyring_path.read_text())
    keyring["oidc_agents"] = [alices_agent(**changes).to_json()]
    keyring_path.write_text(json.dumps(keyring))


@dataclass
class LocalIssuer:
    """An OIDC issuer with one signing key; ``url`` is its ``iss``."""

    url: str = "https://token.actions.githubusercontent.com"
    key: rsa.RSAPrivateKey = field(default_factory=new_rsa_key)
    kid: str = field(default_factory=lambda: secrets.token_hex(8))
    request_token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    # Keys published besides ``key`` (a rotation), by kid.
    extra: dict[str, rsa.RSAPrivateKey] = field(default_factory=dict)
    jwks_requests: int = 0
    # While True the JWKS endpoint answers 503, as an issuer having an outage would.
    down: bool = False
    runner: web.AppRunner | None = None

    def rotate(self) -> str:
        """Sign with a new key under a new kid and stop publishing the old one; return its kid."""
        old = self.kid
        self.key, self.kid = new_rsa_key(), secrets.token_hex(8)
        return old

    async def stop(self) -> None:
        """Stop serving: the issuer's process is gone, its port refuses connections."""
        if self.runner is not None:
            runner, self.runner = self.runner, None
            await runner.cleanup()

    def jwks(self) -> dict[str, Any]:
        """Return the published JWKS: the public halves of ``key`` and ``extra``."""
        keys = []
        for kid, private in [(self.kid, self.key), *self.extra.items()]:
            jwk = RSAAlgorithm.to_jwk(private.public_key(), as_dict=True)
            keys.append({**jwk, "kid": kid, "alg": "RS256", "use": "sig"})
        return {"keys": keys}

    def claims(self, audience: str, *, now: float | None = None, **changes: Any) -> dict[str, Any]:
        """Return the claims GitHub puts in a job's token (``changes`` override, None drops)."""
        issued = int(time.time() if now is None else now)
        claims: dict[str, Any] = {
            "iss": self.url,
            "aud": audience,
            "sub": f"repo:{REPOSITORY}:ref:refs/heads/main",
            "repository": REPOSITORY,
            "repository_id": REPOSITORY_ID,
            "repository_owner": "alice",
            "repository_owner_id": ACTOR_ID,
            "actor": "alice",
            "actor_id": ACTOR_ID,
            "workflow_ref": WORKFLOW_REF,
            "job_workflow_ref": WORKFLOW_REF,
            "ref": "refs/heads/main",
            "jti": str(uuid.uuid4()),
            "iat": issued,
            "nbf": issued,
            "exp": issued + 300,
        }
        claims.update(changes)
        return {name: value for name, value in claims.items() if value is not None}

    def mint(
        self,
        audience: str,
        *,
        key: rsa.RSAPrivateKey | None = None,
        kid: str | None = None,
        now: float | None = None,
        **changes: Any,
    ) -> str:
        """Return an RS256 token for ``audience``, signed with ``key`` (default: the issuer's)."""
        return jwt.encode(
            self.claims(audience, now=now, **changes),
            key or self.key,
            algorithm="RS256",
            headers={"kid": kid or self.kid, "typ": "JWT"},
        )

    def app(self) -> web.Application:
        """Return the issuer's HTTP application."""
        app = web.Application()
        app.router.add_get("/.well-known/jwks", self._jwks)
        app.router.add_get("/token", self._token)
        return app

    async def _jwks(self, request: web.Request) -> web.Response:
        self.jwks_requests += 1
        if self.down:
            return web.json_response({"message": "unavailable"}, status=503)
        return web.json_response(self.jwks())

    async def _token(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"bearer {self.request_token}":
            return web.json_response({"message": "Bad credentials"}, status=401)
        audience = request.query.get("audience")
        if not audience:
            return web.json_response({"message": "audience is required"}, status=400)
        return web.json_response({"count": 1, "value": self.mint(audience)})

    def request_env(self) -> dict[str, str]:
        """Return the two variables a job with ``id-token: write`` gets."""
        return {
            "ACTIONS_ID_TOKEN_REQUEST_URL": f"{self.url}/token?api-version=2.0",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": self.request_token,
        }


async def agent_answers(stack: Stack, issuer: LocalIssuer, url: str, text: str) -> int:
    """Run ``ticketproxy answer --oidc`` as the agent's job would; return its exit code."""
    answer = stack.tmp / "agent-answer.txt"
    answer.write_text(text, encoding="utf-8")
    argv = ["answer", url, "--oidc", "--as", AGENT_LOGIN, "--file", str(answer)]
    env = {**issuer.request_env(), "GITHUB_TOKEN": stack.token(AGENT_LOGIN)}
    return await asyncio.to_thread(main, argv, env)


@asynccontextmanager
async def running_issuer(key: rsa.RSAPrivateKey | None = None) -> AsyncIterator[LocalIssuer]:
    """Run a local issuer on 127.0.0.1, port 0, and yield it with ``url`` set."""
    issuer = LocalIssuer(key=key or new_rsa_key())
    runner = web.AppRunner(issuer.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    issuer.url = f"http://{host}:{port}"
    issuer.runner = runner
    try:
        yield issuer
    finally:
        await issuer.stop()
