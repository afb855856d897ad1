"""Credentials in URLs kept out of the access log, and the desk token's header and cookie."""

from __future__ import annotations

import io
import logging

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from proxy.access_log import REDACTED, AccessLog, redact_credentials
from proxy.logs import make_handler
from tests.helpers.desk_page import DESK_TOKEN, desk_url
from tests.helpers.stack import Stack


def access_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Return every access-log record as text: its message and every field it carries."""
    return [
        f"{record.getMessage()} {record.__dict__!r}"
        for record in caplog.records
        if record.name == "aiohttp.access"
    ]


async def get_status(url: str, **kwargs: object) -> int:
    """GET ``url`` and return its status."""
    async with aiohttp.ClientSession() as session, session.get(url, **kwargs) as response:  # type: ignore[arg-type]
        return response.status


async def test_desk_token_in_the_query_is_redacted_from_the_access_log(
    guarded_stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    """``?token=`` opens the desk, and the access log shows the request without the token."""
    caplog.set_level(logging.INFO, logger="aiohttp.access")
    status = await get_status(desk_url(guarded_stack, "api/tickets"), params={"token": DESK_TOKEN})
    assert status == 200
    lines = access_lines(caplog)
    assert any(f"/desk/api/tickets?token={REDACTED}" in line for line in lines), lines
    assert not [line for line in lines if DESK_TOKEN in line]


async def test_desk_token_in_a_referer_is_redacted_from_the_access_log(
    guarded_stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    """A page address carrying the token, sent as Referer, is logged redacted too."""
    caplog.set_level(logging.INFO, logger="aiohttp.access")
    referer = f"http://127.0.0.1/desk/?ticket=1&token={DESK_TOKEN}"
    status = await get_status(desk_url(guarded_stack, "desk.js"), headers={"Referer": referer})
    assert status == 200
    lines = access_lines(caplog)
    assert any(f"ticket=1&token={REDACTED}" in line for line in lines), lines
    assert not [line for line in lines if DESK_TOKEN in line]


async def test_desk_token_as_a_cookie_opens_the_desk(guarded_stack: Stack) -> None:
    """The ``ticketproxy_desk_token`` cookie is accepted like the bearer header."""
    cookie = {"Cookie": f"ticketproxy_desk_token={DESK_TOKEN}"}
    assert await get_status(desk_url(guarded_stack, "api/tickets"), headers=cookie) == 200
    wrong = {"Cookie": "ticketproxy_desk_token=not-the-token-0123456789"}
    assert await get_status(desk_url(guarded_stack, "api/tickets"), headers=wrong) == 403


async def test_bearer_header_wins_over_a_wrong_query_token(guarded_stack: Stack) -> None:
    """The header is read first: a stale ``?token=`` beside it does not lock the editor out."""
    status = await get_status(
        desk_url(guarded_stack, "api/tickets"),
        params={"token": "stale-token-0123456789"},
        headers={"Authorization": f"Bearer {DESK_TOKEN}"},
    )
    assert status == 200


def test_credential_headers_are_never_written_even_by_a_custom_format() -> None:
    """An access-log format asking for Authorization or Cookie gets ``[redacted]``."""
    stream = io.StringIO()
    logger = logging.getLogger("tests.access_log.custom")
    logger.addHandler(logging.StreamHandler(stream))
    logger.setLevel(logging.INFO)
    logger.propagate = False

    request = make_mocked_request(
        "GET",
        "/v1/models?api_key=sk-live-123456",
        headers={"Authorization": "Bearer sk-live-123456", "Cookie": "session=abc"},
    )
    log = AccessLog(logger, '"%r" %{Authorization}i %{Cookie}i %{User-Agent}i')
    log.log(request, web.Response(text="[]"), 0.01)
    assert stream.getvalue() == (
        f'"GET /v1/models?api_key={REDACTED} HTTP/1.1" {REDACTED} {REDACTED} -\n'
    )


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("GET /desk/?token=abc HTTP/1.1", f"GET /desk/?token={REDACTED} HTTP/1.1"),
        ("/x?a=1&api_key=k&b=2", f"/x?a=1&api_key={REDACTED}&b=2"),
        ("/x?access_token=k#top", f"/x?access_token={REDACTED}#top"),
        ("/x?Password=hunter2;key=v", f"/x?Password={REDACTED};key={REDACTED}"),
        ("https://user:pass@h.example/p", f"https://{REDACTED}@h.example/p"),
        ("redis://:pw@localhost:6379/0", f"redis://{REDACTED}@localhost:6379/0"),
        ("https://ghp_token@github.com/a/b", f"https://{REDACTED}@github.com/a/b"),
    ],
)
def test_credentials_in_urls_are_redacted(text: str, shown: str) -> None:
    """Query credentials and ``user:pass@`` are replaced, the rest of the URL kept."""
    assert redact_credentials(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        "GET /v1/models HTTP/1.1",
        "/desk/?ticket=12",
        "client=key-0123abcd request_id=req_1",
        "mail alice@example.com",
    ],
)
def test_text_without_credentials_is_left_alone(text: str) -> None:
    """Ordinary paths, ids and addresses are not mangled."""
    assert redact_credentials(text) == text


@pytest.mark.parametrize("form", ["text", "json"])
def test_log_lines_redact_urls_whatever_runner_logged_them(form: str) -> None:
    """ticketproxy's own log handler redacts a URL credential another logger let through."""
    stream = io.StringIO()
    handler = make_handler(form, stream=stream)
    record = logging.LogRecord(
        "aiohttp.access", logging.INFO, __file__, 1, "%s", ("GET /?token=s3cr3t-value",), None
    )
    handler.handle(record)
    assert "s3cr3t-value" not in stream.getvalue()
    assert REDACTED in stream.getvalue()
