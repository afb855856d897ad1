"""The A2A 1.0 agent card served at ``/.well-known/agent-card.json``: who answers, and how.

Pure: no I/O. Public (reading it needs no client key), as A2A's discovery expects; it names
the one JSON-RPC interface, its protocol version, streaming, the one skill, and the client
keys as an HTTP bearer scheme every call must present (``securityRequirements``), so the
``a2a-sdk`` client's ``AuthInterceptor`` sends ``Authorization: Bearer <key>``.
"""

from __future__ import annotations

from typing import Any

from .wire import PROTOCOL_VERSION

__all__ = ["SECURITY_SCHEME", "agent_card"]

SECURITY_SCHEME = "clientKey"


def agent_card(endpoint: str, *, version: str) -> dict[str, Any]:
    """Return the agent card for the JSON-RPC interface at ``endpoint`` (an absolute URL)."""
    return {
        "name": "ticketproxy",
        "description": (
            "A team of people answering on GitHub: each task is an issue, each message a step"
            " answered by a signed comment. Answers can ask a question back"
            " (input-required); files the team creates come back as artifacts."
        ),
        "supportedInterfaces": [
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": PROTOCOL_VERSION}
        ],
        "version": version,
        "capabilities": {
            "streaming": True,
            "pushNotifications": False,
            "extendedAgentCard": False,
        },
        "securitySchemes": {
            SECURITY_SCHEME: {
                "httpAuthSecurityScheme": {
                    "scheme": "Bearer",
                    "description": "One of the keys in this ticketproxy's TICKETPROXY_API_KEYS.",
                }
            }
        },
        "securityRequirements": [{"schemes": {SECURITY_SCHEME: {"list": []}}}],
        "defaultInputModes": ["text/plain", "application/json", "application/octet-stream"],
        "defaultOutputModes": ["text/plain", "application/octet-stream"],
        "skills": [
            {
                "id": "ask-the-team",
                "name": "Ask the team",
                "description": (
                    "Put a task to the people behind this agent. They answer with a signed"
                    " comment, may ask you a question first, and may attach files."
                ),
                "tags": ["human-in-the-loop", "github", "review"],
                "examples": ["Review this migration plan and tell me what could go wrong."],
            }
        ],
    }
