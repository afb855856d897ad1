"""Logging set-up: plain text or JSON lines, each line about a request carrying its id.

``TICKETPROXY_LOG_FORMAT=json`` writes one JSON object per line with ``ts``, ``level``,
``logger``, ``message`` and, when the line was logged while serving a request,
``request_id`` (plus ``exc_info`` for a traceback). The id comes from a context variable
that the app's one middleware (:mod:`proxy.front_door`) sets, so every line logged by a
handler, or by a task it starts, carries the id without each call having to pass it. Either
way, credentials in URLs are redacted from every line (:func:`proxy.access_log.redact_credentials`).
"""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TextIO

from proxy.access_log import redact_credentials
from proxy.settings import Settings

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"

# The id of the request being served, if any; set by proxy.front_door.
current_request_id: ContextVar[str | None] = ContextVar("ticketproxy_request_id", default=None)


class RequestIdFilter(logging.Filter):
    """Stamp each record with the id of the request being served (``None`` outside one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Add ``record.request_id`` and let the record through."""
        if getattr(record, "request_id", None) is None:
            record.request_id = current_request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    """Format a record as one JSON line: ts, level, logger, message and request_id."""

    def format(self, record: logging.LogRecord) -> str:
        """Return the record as a single-line JSON object."""
        line: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact_credentials(record.getMessage()),
        }
        request_id = getattr(record, "request_id", None)
        if request_id is not None:
            line["request_id"] = request_id
        if record.exc_info:
            line["exc_info"] = redact_credentials(self.formatException(record.exc_info))
        elif record.exc_text:
            line["exc_info"] = redact_credentials(record.exc_text)
        if record.stack_info:
            line["stack_info"] = self.formatStack(record.stack_info)
        # ensure_ascii keeps each record on one line whatever the message holds.
        return json.dumps(line, ensure_ascii=True, default=str)


class TextFormatter(logging.Formatter):
    """The classic text line, with ``request_id=…`` appended when the message lacks it."""

    def __init__(self) -> None:
        """Use the text layout ticketproxy has always printed."""
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        """Return the text line for ``record``."""
        text = redact_credentials(super().format(record))
        request_id = getattr(record, "request_id", None)
        # Many messages already name their request; say it once.
        if request_id is not None and request_id not in record.getMessage():
            first, newline, rest = text.partition("\n")
            text = f"{first} request_id={request_id}{newline}{rest}"
        return text


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Write to whatever ``sys.stderr`` is at the time of each record (it may be replaced)."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self) -> TextIO:  # type: ignore[override]
        """Return the current standard error."""
        return sys.stderr


def make_handler(form: str, *, stream: TextIO | None = None) -> logging.Handler:
    """Return a handler writing ``form`` ("text" or "json") lines, stamped with request ids."""
    handler: logging.Handler = _StderrHandler() if stream is None else logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if form == "json" else TextFormatter())
    handler.addFilter(RequestIdFilter())
    return handler


def configure_logging(
    settings: Settings,
    *,
    logger: logging.Logger | None = None,
    stream: TextIO | None = None,
) -> logging.Handler | None:
    """Set up logging at ``settings.log_level`` in ``settings.log_format``.

    Installs one handler on ``logger`` (default: the root logger), replacing any that an
    earlier call installed, and returns it. Like ``logging.basicConfig``, it leaves a root
    logger that someone else already configured alone and returns None.
    """
    level, form = settings.log_level, settings.log_format
    target = logger if logger is not None else logging.getLogger()
    # A handler carrying our filter is one an earlier call installed.
    ours = [h for h in target.handlers if any(isinstance(f, RequestIdFilter) for f in h.filters)]
    if logger is None and len(ours) != len(target.handlers):
        return None
    for old in ours:
        target.removeHandler(old)
    handler = make_handler(form, stream=stream)
    target.addHandler(handler)
    target.setLevel(level)
    return handler
