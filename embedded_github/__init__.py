"""An embedded GitHub-compatible server: the REST subset ticketproxy uses, and web pages.

It is the default back end of ``ticketproxy serve`` when no GitHub token is configured, and
the GitHub every test talks to (through PyGithub, over HTTP). It never imports ``github``.
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
from embedded_github.server import RunningSandbox, Sandbox, start_sandbox
from embedded_github.webhooks import WebhookDelivery, WebhookTarget

__all__ = [
    "InstallationGrant",
    "RecordedRequest",
    "RunningSandbox",
    "Sandbox",
    "SandboxApp",
    "SandboxConfig",
    "SandboxConfigError",
    "SandboxUser",
    "WebhookDelivery",
    "WebhookTarget",
    "load_sandbox_config",
    "save_sandbox_config",
    "start_sandbox",
    "verify_app_jwt",
]
