"""An embedded GitHub-compatible server: the REST subset ticketproxy uses, and web pages.

A product of its own, not a part of the proxy: it is the default GitHub back end of
``make run`` (``ticketproxy serve`` with no GitHub token configured), and the GitHub every
test talks to (through PyGithub, over HTTP). It imports nothing from ``proxy``,
``ticketing`` or ``auth``, and never imports ``github``.

Modules:

- ``server``: the :class:`Sandbox`, its aiohttp application, and starting it on a port.
- ``config``: the users, Apps and repositories it hosts, and the JSON file that lists them.
- ``users_file``: that file re-read while it runs, so a person added to it signs in at once.
- ``state``: what the API and the pages share: store, users, repositories, tokens, clock.
- ``dispatch``: the API's front door, in GitHub's order, and the log of requests answered.
- ``callers``: who is calling (token, App JWT or address) and GitHub's refusals.
- ``responses``: GitHub's headers, JSON bodies, ETags, fault answers and CORS.
- ``routing``: how handlers are declared: routes, the call they get, the reply they give.
- ``routes_account``: rate limit, users, a repository, collaborator permission.
- ``routes_apps``: an App's installation and its installation tokens.
- ``routes_issues``: create, list, get, update, lock and unlock issues.
- ``routes_comments``: issue comments, per issue and repository-wide.
- ``routes_labels``: a repository's labels and the labels on an issue.
- ``routes_reactions``: reactions on issues and on issue comments.
- ``routes_actions``: workflow and repository dispatches, checked and recorded.
- ``workflows``: the workflow files a test hosts, and the dispatches accepted.
- ``account_payloads``: GitHub's JSON for users, organizations and repositories.
- ``payloads``: GitHub's JSON for issues, comments, labels, reactions; the builder of all.
- ``pagination``: ``page`` and ``per_page`` in, a ``Link`` header out.
- ``errors``: GitHub's error answers (``ApiError``) and the docs links they carry.
- ``limits``: the primary hourly budget and the secondary limit on creating content.
- ``faults``: failures a test plans: error answers, dropped connections, delays, holds.
- ``apps``: checking an App's JWT and minting installation tokens.
- ``webhooks``: signed ``issue_comment`` deliveries, in the background, as GitHub sends them.
- ``web_pages``: plain HTML pages: repositories, issues, one issue and a comment form.
- ``markdown_html``: markdown rendered as GitHub shows it, sanitised; the desk uses it too.
- ``timestamps``: GitHub's timestamps, whole UTC seconds.
- ``store``: :class:`~embedded_github.store.SandboxStore`, the SQLite store, made of:
- ``store_database``: the schema, the connection and the id sequences;
- ``store_rows``: the stored rows, as frozen dataclasses;
- ``store_repos``, ``store_issues`` (with comments), ``store_labels``, ``store_reactions``:
  the queries on each table.

Exceptions: ``SandboxConfigError`` (a ``ValueError``) names the file and field of a bad
configuration; ``errors.ApiError`` is one of GitHub's error answers, raised by handlers (and
by ``verify_app_jwt``) and written out by the dispatcher.
"""

from __future__ import annotations

from embedded_github.apps import InstallationGrant, verify_app_jwt
from embedded_github.config import (
    SandboxApp,
    SandboxConfig,
    SandboxConfigError,
    SandboxUser,
    load_sandbox_config,
    save_sandbox_config,
)
from embedded_github.dispatch import RecordedRequest
from embedded_github.markdown_html import render_markdown
from embedded_github.server import RunningSandbox, Sandbox, start_sandbox
from embedded_github.webhooks import WebhookDelivery, WebhookTarget
from embedded_github.workflows import DispatchRecord, SandboxWorkflow

__all__ = [
    "DispatchRecord",
    "InstallationGrant",
    "RecordedRequest",
    "RunningSandbox",
    "Sandbox",
    "SandboxApp",
    "SandboxConfig",
    "SandboxConfigError",
    "SandboxUser",
    "SandboxWorkflow",
    "WebhookDelivery",
    "WebhookTarget",
    "load_sandbox_config",
    "render_markdown",
    "save_sandbox_config",
    "start_sandbox",
    "verify_app_jwt",
]
