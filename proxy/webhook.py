"""``POST /github/webhook``: GitHub's signed deliveries, verified, recorded once, handed on.

No client API key is asked for: the HMAC signature (``X-Hub-Signature-256``) under
``TICKETPROXY_WEBHOOK_SECRET`` is the authentication. Without a secret the route answers 404.
The handler only verifies, records the delivery id and hands an ``issue_comment`` event to
the desk; polling stays the source of truth, because GitHub does not redeliver a failed
delivery (https://docs.github.com/en/webhooks/using-webhooks/handling-failed-webhook-deliveries).

Answers use the proxy's error envelope, like every other route:

- 404 webhooks are off (no secret configured);
- 408 the body did not arrive within ``TICKETPROXY_BODY_TIMEOUT``;
- 413 the body is over GitHub's 25 MB cap;
- 401 the signature is missing or does not match;
- 400 the body is not a JSON object, nests past ``MAX_JSON_DEPTH`` levels, or headers
  GitHub always sends are missing;
- 200 ``{"status": "pong"}`` for ``ping``, ``{"status": "duplicate"}`` for a delivery id seen
  before, ``{"status": "processed"}`` for an ``issue_comment``;
- 202 ``{"status": "ignored", ...}`` for any other event, action or repository.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from aiohttp import web

from ticketing.clock import utc_now
from ticketing.errors import BadPayload, BadSignature, MissingSignature
from ticketing.github.webhooks import (
    COMMENT_EVENT,
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    parse_comment_event,
    validate_signature,
)
from ticketing.json_depth import too_deep

from .bodies import read_body
from .errors import InvalidRequest, NotFound, Unauthorized
from .handlers import DESK, SETTINGS
from .middleware import REQUEST_ID
from .wire.requests import nested_too_deep

log = logging.getLogger(__name__)

WEBHOOK_PATH = "/github/webhook"
# GitHub caps webhook payloads at 25 MB and drops larger ones, so nothing larger is genuine.
MAX_PAYLOAD_BYTES = 25 * 1024 * 1024


async def github_webhook(request: web.Request) -> web.Response:
    """Verify a GitHub delivery, record it once, and hand an ``issue_comment`` to the desk."""
    secret = request.app[SETTINGS].webhook_secret
    if secret is None:
        raise NotFound(
            "Webhooks are off on this ticketproxy: set TICKETPROXY_WEBHOOK_SECRET to the "
            "GitHub webhook's secret to turn them on.",
            code="webhooks_disabled",
        )
    # Read the stream ourselves: the app's client_max_size is sized for chat requests,
    # while GitHub's cap for a delivery is 25 MB.
    body = await read_body(
        request,
        limit=MAX_PAYLOAD_BYTES,
        within=request.app[SETTINGS].body_timeout,
        setting="TICKETPROXY_BODY_TIMEOUT",
        refusal=f"The webhook payload is larger than GitHub's {MAX_PAYLOAD_BYTES} byte cap.",
    )
    try:
        validate_signature(body, signature=request.headers.get(SIGNATURE_HEADER), secret=secret)
    except MissingSignature as exc:
        raise Unauthorized(str(exc), code="missing_signature") from None
    except BadSignature as exc:
        log.warning("request_id=%s webhook with a bad signature refused", request[REQUEST_ID])
        raise Unauthorized(str(exc), code="bad_signature") from None
    payload = _json_object(request, body)
    event = _required_header(request, EVENT_HEADER)
    delivery = _required_header(request, DELIVERY_HEADER)
    if event == "ping":
        return web.json_response({"status": "pong"})
    desk = request.app[DESK]
    if not desk.store.record_delivery(delivery, now=utc_now()):
        log.info("request_id=%s webhook delivery %s seen before", request[REQUEST_ID], delivery)
        return web.json_response({"status": "duplicate"})
    if event != COMMENT_EVENT:
        return web.json_response({"status": "ignored", "event": event}, status=202)
    try:
        comment_event = parse_comment_event(payload)
    except BadPayload as exc:
        raise InvalidRequest(str(exc), code="bad_payload") from None
    if comment_event is None:
        return web.json_response({"status": "ignored", "event": event}, status=202)
    if comment_event.repo.lower() != desk.settings.repo.lower():
        # An organization hook reports every repository; tickets live in one.
        log.info(
            "request_id=%s webhook delivery %s is for %s, not %s: ignored",
            request[REQUEST_ID],
            delivery,
            comment_event.repo,
            desk.settings.repo,
        )
        return web.json_response(
            {"status": "ignored", "repository": comment_event.repo}, status=202
        )
    log.info(
        "request_id=%s webhook delivery %s: comment %d %s on %s#%d",
        request[REQUEST_ID],
        delivery,
        comment_event.comment.id,
        comment_event.action,
        comment_event.repo,
        comment_event.comment.issue_number,
    )
    await desk.receive_comment_event(comment_event)
    return web.json_response({"status": "processed"})


def _json_object(request: web.Request, body: bytes) -> dict[str, Any]:
    if request.content_type == "application/x-www-form-urlencoded":
        raise InvalidRequest(
            "The webhook sends form data: set its content type to application/json on GitHub.",
            code="unsupported_content_type",
        )
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        payload = None
    except RecursionError:
        raise nested_too_deep("The webhook payload") from None
    if too_deep(payload):
        raise nested_too_deep("The webhook payload")
    if not isinstance(payload, dict):
        raise InvalidRequest("The webhook payload is not a JSON object.", code="invalid_json")
    return payload


def _required_header(request: web.Request, name: str) -> str:
    value = request.headers.get(name, "").strip()
    if not value:
        raise InvalidRequest(f"The webhook delivery has no {name} header.", code="missing_header")
    return value
