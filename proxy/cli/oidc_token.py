"""A GitHub Actions job's OIDC token, requested for an agent's ephemeral key.

GitHub's documented request: ``GET $ACTIONS_ID_TOKEN_REQUEST_URL&audience=<aud>`` with
``Authorization: bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN``, answered with ``{"value": token}``;
both variables exist only in a job with ``permissions: id-token: write``. See
https://docs.github.com/en/actions/security-for-github-actions/security-hardening-your-deployments/configuring-openid-connect-in-cloud-providers
The audience is the ephemeral key's RFC 7638 thumbprint, so the token vouches for that key
and no other. Neither the request token nor the OIDC token is ever printed.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from datetime import timedelta

from auth.keys import generate_signing_key
from auth.logins import is_valid_login
from auth.oidc import OidcTrust
from auth.sign import sign_comment
from proxy.errors import ProxyError
from ticketing.clock import utc_now
from ticketing.oidc_keys import jwks_url

__all__ = [
    "REQUEST_TOKEN_VARIABLE",
    "REQUEST_URL_VARIABLE",
    "fetch_issuer_keys",
    "request_oidc_token",
    "sign_as_agent",
]

REQUEST_URL_VARIABLE = "ACTIONS_ID_TOKEN_REQUEST_URL"
REQUEST_TOKEN_VARIABLE = "ACTIONS_ID_TOKEN_REQUEST_TOKEN"  # noqa: S105 (a name, not a secret)
_MAX_RESPONSE = 64 * 1024


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: the bearer token goes to the URL GitHub gave, and nowhere else."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def request_oidc_token(env: Mapping[str, str], *, audience: str, timeout: float = 30.0) -> str:
    """Return this job's OIDC token for ``audience``, or fail saying what to fix."""
    url, bearer = env.get(REQUEST_URL_VARIABLE), env.get(REQUEST_TOKEN_VARIABLE)
    if not url or not bearer:
        raise ProxyError(
            f"--oidc needs {REQUEST_URL_VARIABLE} and {REQUEST_TOKEN_VARIABLE}, which GitHub "
            "sets only in a job with `permissions: id-token: write`; add it to the workflow"
        )
    if urllib.parse.urlsplit(url).scheme not in {"https", "http"}:
        raise ProxyError(f"{REQUEST_URL_VARIABLE} is not an http(s) URL")
    separator = "&" if "?" in url else "?"
    request = urllib.request.Request(  # noqa: S310 (the scheme is checked above)
        f"{url}{separator}audience={urllib.parse.quote(audience, safe='')}",
        headers={"Authorization": f"bearer {bearer}", "Accept": "application/json"},
    )
    refused = (
        "the OIDC token request was refused (HTTP {code}); check that the job has "
        "`permissions: id-token: write`"
    )
    document = _get_json(request, what="the OIDC token request", refused=refused, timeout=timeout)
    value = document.get("value")
    if not isinstance(value, str) or not value:
        raise ProxyError('the OIDC token request did not answer {"value": "<token>"}')
    return value


def sign_as_agent(
    text: str,
    *,
    ticket: str,
    login: str | None,
    env: Mapping[str, str],
    ttl: timedelta,
    ask: bool = False,
) -> str:
    """Return ``text`` signed for ``ticket`` by an ephemeral key this job's OIDC token names."""
    if not login or not is_valid_login(login):
        raise ProxyError("--oidc needs --as LOGIN: the account that posts the agent's comments")
    # Ephemeral: made for this one answer, never written down; the token names it.
    key = generate_signing_key(login=login)
    token = request_oidc_token(env, audience=key.kid)
    return sign_comment(
        text, ticket=ticket, key=key, now=utc_now(), ttl=ttl, ask=ask, oidc_token=token
    )


def fetch_issuer_keys(issuer: str, *, timeout: float = 30.0) -> OidcTrust:
    """Return the issuer and its published JWKS, for the audit of agents' keyless answers."""
    url = jwks_url(issuer)
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310 (https, or the operator's own test issuer)
    refused = f"the OIDC issuer's keys at {url} could not be fetched (HTTP {{code}})"
    return OidcTrust(issuer, _get_json(request, what=url, refused=refused, timeout=timeout))


def _get_json(
    request: urllib.request.Request, *, what: str, refused: str, timeout: float
) -> dict[str, object]:
    """Return the JSON object a GET answers, without following redirects."""
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=timeout) as response:
            raw = response.read(_MAX_RESPONSE + 1)
    except urllib.error.HTTPError as exc:
        raise ProxyError(refused.format(code=exc.code)) from None
    except (urllib.error.URLError, OSError) as exc:
        raise ProxyError(f"{what} failed: {exc}") from None
    try:
        document = json.loads(raw) if len(raw) <= _MAX_RESPONSE else None
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise ProxyError(f"{what} did not answer a JSON object")
    return document
