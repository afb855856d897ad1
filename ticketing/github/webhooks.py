"""GitHub webhooks, sans I/O: check a delivery's signature and read an ``issue_comment`` event.

A delivery that cannot be trusted or read raises a ``WebhookError`` (``MissingSignature``,
``BadSignature``, ``BadPayload``), drawn with the rest of the tree in :mod:`ticketing.errors`.

GitHub signs the raw body with the webhook's secret (HMAC-SHA256, hex) and sends it as
``X-Hub-Signature-256: sha256=<hex>``:
https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
The payloads are described at
https://docs.github.com/en/webhooks/webhook-events-and-payloads#issue_comment
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ticketing.errors import BadPayload, BadSignature, MissingSignature
from ticketing.github.interface import Comment
from ticketing.github.times import parse_github_time

SIGNATURE_HEADER = "X-Hub-Signature-256"
EVENT_HEADER = "X-GitHub-Event"
DELIVERY_HEADER = "X-GitHub-Delivery"
COMMENT_EVENT = "issue_comment"

CommentAction = Literal["created", "edited", "deleted"]
_ACTIONS: tuple[CommentAction, ...] = ("created", "edited", "deleted")
# GitHub shows a deleted account as "ghost" (id 10137); its old comments keep no user.
_GHOST = ("ghost", 10137)


@dataclass(frozen=True)
class CommentEvent:
    """An issue comment was created, edited or deleted in ``repo`` (``owner/name``)."""

    action: CommentAction
    comment: Comment
    repo: str


def sign_payload(payload: bytes, *, secret: str) -> str:
    """Return the ``X-Hub-Signature-256`` value GitHub sends for this body and secret."""
    digest = hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def validate_signature(payload: bytes, *, signature: str | None, secret: str) -> None:
    """Raise unless ``signature`` is the HMAC-SHA256 of the raw ``payload`` under ``secret``."""
    if not signature:
        raise MissingSignature(
            f"the delivery has no {SIGNATURE_HEADER} header: give the GitHub webhook a secret "
            "(the value of TICKETPROXY_WEBHOOK_SECRET)"
        )
    expected = sign_payload(payload, secret=secret)
    # Non-ASCII text cannot be a hex digest, and compare_digest refuses it on str.
    if not signature.isascii() or not hmac.compare_digest(expected, signature):
        raise BadSignature(
            f"the {SIGNATURE_HEADER} header does not match the body: check that the GitHub "
            "webhook's secret equals TICKETPROXY_WEBHOOK_SECRET"
        )


def parse_comment_event(payload: Mapping[str, Any]) -> CommentEvent | None:
    """Read an ``issue_comment`` payload; return None for other events, actions or PR comments."""
    action = payload.get("action")
    comment = payload.get("comment")
    issue = payload.get("issue")
    if action not in _ACTIONS or not isinstance(comment, Mapping) or not isinstance(issue, Mapping):
        return None
    if issue.get("pull_request") is not None:
        # A comment on a pull request is never an answer: tickets are issues.
        return None
    try:
        repo = str(payload["repository"]["full_name"])
        number = int(issue["number"])
        user = comment.get("user")
        login, user_id = _GHOST if user is None else (str(user["login"]), int(user["id"]))
        parsed = Comment(
            id=int(comment["id"]),
            issue_number=number,
            body=str(comment.get("body") or ""),
            author_login=login,
            author_id=user_id,
            created_at=parse_github_time(str(comment["created_at"])),
            updated_at=parse_github_time(str(comment["updated_at"])),
            url=str(comment.get("html_url", "")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise BadPayload(
            f"the issue_comment payload is not as GitHub documents it ({type(exc).__name__}: {exc})"
        ) from exc
    return CommentEvent(action=action, comment=parsed, repo=repo)
