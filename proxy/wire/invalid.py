"""Refusing a malformed request field: an ``InvalidRequest`` naming the parameter."""

from __future__ import annotations

from proxy.errors import InvalidRequest


def require(condition: bool, message: str, param: str, code: str = "invalid_value") -> None:
    """Raise InvalidRequest for ``param`` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise InvalidRequest(message, param=param, code=code)
