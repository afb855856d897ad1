"""Logging set-up: text or JSON lines, each stamped with the request it was logged for."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator

import pytest

from proxy.cli import main
from proxy.errors import ConfigError
from proxy.logs import RequestIdFilter, configure_logging, current_request_id
from proxy.setting_values import log_settings
from proxy.settings import Settings
from tests.helpers.stack import Stack

PROMPT = [{"role": "user", "content": "Summarise the README."}]


@pytest.fixture
def scratch_logger() -> Iterator[logging.Logger]:
    """Yield a private logger that does not propagate, emptied afterwards."""
    logger = logging.getLogger("tests.proxy.test_logs.scratch")
    logger.propagate = False
    yield logger
    for handler in ours(logger):
        logger.removeHandler(handler)
    logger.setLevel(logging.NOTSET)


def ours(logger: logging.Logger) -> list[logging.Handler]:
    """Return the handlers ``configure_logging`` installed on ``logger``."""
    return [h for h in logger.handlers if any(isinstance(f, RequestIdFilter) for f in h.filters)]


def json_lines(stream: io.StringIO) -> list[dict[str, object]]:
    """Parse every line written to ``stream`` as JSON."""
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_lines_carry_ts_level_logger_and_message(scratch_logger: logging.Logger) -> None:
    """Each record is one JSON object with ts, level, logger and message, and no request id."""
    out = io.StringIO()
    configure_logging(
        Settings.from_env({"TICKETPROXY_LOG_FORMAT": "json"}), logger=scratch_logger, stream=out
    )
    scratch_logger.info("ticket %d opened", 7)
    [line] = json_lines(out)
    assert line["level"] == "INFO"
    assert line["logger"] == scratch_logger.name
    assert line["message"] == "ticket 7 opened"
    assert str(line["ts"]).endswith("+00:00")
    assert "request_id" not in line


def test_json_line_carries_the_request_id_of_the_request_being_served(
    scratch_logger: logging.Logger,
) -> None:
    """A record logged while the request id context variable is set names that request."""
    out = io.StringIO()
    configure_logging(
        Settings.from_env({"TICKETPROXY_LOG_FORMAT": "json"}), logger=scratch_logger, stream=out
    )
    token = current_request_id.set("req_abc")
    try:
        scratch_logger.warning("inside")
    finally:
        current_request_id.reset(token)
    scratch_logger.warning("outside")
    inside, outside = json_lines(out)
    assert inside["request_id"] == "req_abc"
    assert "request_id" not in outside


def test_multi_line_message_and_traceback_stay_on_one_json_line(
    scratch_logger: logging.Logger,
) -> None:
    """A message with newlines and an exception's traceback still make exactly one line."""
    out = io.StringIO()
    configure_logging(
        Settings.from_env({"TICKETPROXY_LOG_FORMAT": "json"}), logger=scratch_logger, stream=out
    )
    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        scratch_logger.exception("first\nsecond")
    [line] = json_lines(out)
    assert line["message"] == "first\nsecond"
    assert "ValueError: bad" in str(line["exc_info"])


def test_text_lines_append_the_request_id_only_when_the_message_lacks_it(
    scratch_logger: logging.Logger,
) -> None:
    """Text lines gain ``request_id=…`` unless the message already names the request."""
    out = io.StringIO()
    configure_logging(Settings.from_env({}), logger=scratch_logger, stream=out)
    token = current_request_id.set("req_123")
    try:
        scratch_logger.info("waiting")
        scratch_logger.info("request_id=req_123 ticket 1 opened")
    finally:
        current_request_id.reset(token)
    first, second = out.getvalue().splitlines()
    assert first.endswith(" INFO tests.proxy.test_logs.scratch waiting request_id=req_123")
    assert second.count("req_123") == 1


def test_level_setting_filters_records_below_it(scratch_logger: logging.Logger) -> None:
    """``TICKETPROXY_LOG_LEVEL=warning`` drops INFO records and keeps WARNING ones."""
    out = io.StringIO()
    configure_logging(
        Settings.from_env({"TICKETPROXY_LOG_LEVEL": "warning"}), logger=scratch_logger, stream=out
    )
    scratch_logger.info("quiet")
    scratch_logger.warning("loud")
    assert [line.rsplit(" ", 1)[-1] for line in out.getvalue().splitlines()] == ["loud"]


def test_configuring_twice_replaces_the_earlier_handler(scratch_logger: logging.Logger) -> None:
    """A second set-up swaps its own handler instead of doubling every line."""
    first, second = io.StringIO(), io.StringIO()
    configure_logging(Settings.from_env({}), logger=scratch_logger, stream=first)
    configure_logging(
        Settings.from_env({"TICKETPROXY_LOG_FORMAT": "json"}), logger=scratch_logger, stream=second
    )
    scratch_logger.info("once")
    assert len(ours(scratch_logger)) == 1
    assert first.getvalue() == ""
    assert json_lines(second)[0]["message"] == "once"


def test_root_logger_configured_by_someone_else_is_left_alone() -> None:
    """Like basicConfig, a root logger that already has a foreign handler is not touched."""
    root = logging.getLogger()
    foreign = logging.NullHandler()
    root.addHandler(foreign)
    before = list(root.handlers), root.level
    try:
        assert configure_logging(Settings.from_env({"TICKETPROXY_LOG_FORMAT": "json"})) is None
        assert (list(root.handlers), root.level) == before
    finally:
        root.removeHandler(foreign)


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        ({"TICKETPROXY_LOG_LEVEL": "loud"}, "TICKETPROXY_LOG_LEVEL"),
        ({"TICKETPROXY_LOG_FORMAT": "yaml"}, "TICKETPROXY_LOG_FORMAT"),
    ],
)
def test_bad_log_setting_is_refused_naming_its_variable(
    environ: dict[str, str], variable: str
) -> None:
    """An unknown level or format stops the start with the variable's name."""
    with pytest.raises(ConfigError, match=variable):
        log_settings(environ)


def test_cli_refuses_an_unknown_log_format_before_doing_anything(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``ticketproxy`` exits 2 and names TICKETPROXY_LOG_FORMAT when it is not text or json."""
    assert (
        main(
            ["sign", "--ticket", "a/b#1", "--key", "/nonexistent"],
            {"TICKETPROXY_LOG_FORMAT": "xml"},
        )
        == 2
    )
    assert "TICKETPROXY_LOG_FORMAT='xml' is not a log format" in capsys.readouterr().err


async def test_lines_logged_while_serving_a_completion_carry_its_x_request_id(
    stack: Stack,
) -> None:
    """The desk's log lines for a request carry the id the client got in ``x-request-id``."""
    out = io.StringIO()
    desk_logger = logging.getLogger("ticketing.desk")
    handler = configure_logging(
        Settings.from_env({"TICKETPROXY_LOG_FORMAT": "json"}), logger=desk_logger, stream=out
    )
    assert handler is not None
    try:
        client = stack.openai()
        pending = asyncio.create_task(
            client.chat.completions.with_raw_response.create(model="gpt-4o", messages=PROMPT)
        )
        await stack.wait_for_issue(1)
        await stack.answer(1, "It explains how to run ticketproxy.")
        raw = await asyncio.wait_for(pending, 10)
    finally:
        desk_logger.removeHandler(handler)
        desk_logger.setLevel(logging.NOTSET)
    request_id = raw.headers["x-request-id"]
    opened = [line for line in json_lines(out) if "opened" in str(line["message"])]
    assert opened
    assert all(line["request_id"] == request_id for line in opened)
