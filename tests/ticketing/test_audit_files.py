"""Tests for ticketing.audit.files: the listing read, which links are followed, the comparison."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from auth.keys import generate_signing_key
from auth.sign import sign_comment
from ticketing.audit.comments import AuditComment
from ticketing.audit.files import (
    ListedFile,
    check_file,
    created_files,
    file_ids,
    followed_link,
    listed_files,
)

PROXY = "https://tickets.example.com/desk/"
CONTENT = b"the report\n"
DIGEST = hashlib.sha256(CONTENT).hexdigest()
LINK = "https://tickets.example.com/desk/api/artifacts/task-1/file-1"
LINE = f"- in/report.txt: {len(CONTENT)} bytes, sha256 {DIGEST}, {LINK}"


def comment(body: str, author: str = "ticketproxy-bot", comment_id: int = 1) -> AuditComment:
    """Return a comment as the audit reads it."""
    when = datetime(2026, 1, 1, tzinfo=UTC)
    return AuditComment(comment_id, author, 1, body, when, when, f"https://x/#{comment_id}")


def listed(url: str = LINK, size: int = len(CONTENT), digest: str = DIGEST) -> ListedFile:
    """Return a listed file."""
    return ListedFile("in/report.txt", size, digest, url)


def test_listing_is_read_from_the_issue_body_and_the_bots_step_comments() -> None:
    """Lines in the body and in bot comments are read, each file once."""
    later = LINE.replace("file-1", "file-2").replace("in/report.txt", "notes.md")
    body = f"```text\nSummarise.\n\nFiles uploaded:\n{LINE}\n```"
    found = listed_files(
        body, [comment(f"Files uploaded:\n{later}\n{LINE}")], bot_login="ticketproxy-bot"
    )
    assert [(f.name, f.url.rsplit("/", 1)[-1]) for f in found] == [
        ("in/report.txt", "file-1"),
        ("notes.md", "file-2"),
    ]


def test_listing_line_in_someone_elses_comment_is_ignored() -> None:
    """Only the issue body and the bot's comments list uploads."""
    assert listed_files("", [comment(LINE, author="mallory")], bot_login="ticketproxy-bot") == ()


def test_file_name_shaped_like_the_fields_cannot_shift_them() -> None:
    """A name holding ``: 1 bytes, sha256 …`` still yields the line's last size and digest."""
    fake = f"x: 1 bytes, sha256 {'0' * 64}, https://evil.example/a"
    [found] = listed_files(LINE.replace("in/report.txt", fake), [], bot_login="bot")
    assert (found.size, found.sha256, found.url) == (len(CONTENT), DIGEST, LINK)


def test_same_bytes_match() -> None:
    """Bytes of the listed size and digest match."""
    assert check_file(listed(), CONTENT).line() == "file in/report.txt: digest matches"


def test_changed_bytes_are_a_digest_mismatch_naming_both_digests() -> None:
    """Different bytes are a mismatch that says what the issue says and what the file is."""
    changed = CONTENT.replace(b"the", b"THE")
    result = check_file(listed(), changed)
    assert result.result == "mismatch"
    assert result.line() == (
        f"file in/report.txt: DIGEST MISMATCH (issue says {len(CONTENT)} bytes, sha256 "
        f"{DIGEST}; file is {len(changed)} bytes, sha256 {hashlib.sha256(changed).hexdigest()})"
    )


def test_truncated_file_is_a_mismatch() -> None:
    """A shorter file is a mismatch even before its digest is compared."""
    assert check_file(listed(), CONTENT[:-1]).result == "mismatch"


def test_link_to_the_configured_ticketproxy_is_followed() -> None:
    """Same scheme, host, port and file route: followed (the default port spelt or not)."""
    assert followed_link(LINK, proxy_url=PROXY) is None
    spelt = LINK.replace("example.com/", "example.com:443/")
    assert followed_link(spelt, proxy_url=PROXY) is None


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example/desk/api/artifacts/task-1/file-1",
        "https://tickets.example.com.evil.example/desk/api/artifacts/task-1/file-1",
        "https://tickets.example.com:8443/desk/api/artifacts/task-1/file-1",
        "http://tickets.example.com/desk/api/artifacts/task-1/file-1",
        "https://tickets.example.com@evil.example/desk/api/artifacts/task-1/file-1",
        "https://user:pw@tickets.example.com/desk/api/artifacts/task-1/file-1",
    ],
)
def test_file_link_to_a_foreign_host_is_not_followed(url: str) -> None:
    """Another host, port, scheme or credentials in the link: not followed, saying where."""
    reason = followed_link(url, proxy_url=PROXY)
    assert reason is not None
    assert "not to the configured ticketproxy https://tickets.example.com" in reason


@pytest.mark.parametrize(
    "url",
    [
        "https://tickets.example.com/v1/chat/completions",
        "https://tickets.example.com/desk/api/artifacts/task-1/file-1?token=x",
        "https://tickets.example.com/desk/api/artifacts/task-1/..%2F..%2Fetc",
        "https://tickets.example.com/desk/api/artifacts/task-1/file-1/more",
        "https://tickets.example.com:99999/desk/api/artifacts/task-1/file-1",
    ],
)
def test_link_outside_the_file_route_is_not_followed(url: str) -> None:
    """Only the file route itself, without query, odd ids or a bad port, is fetched."""
    assert followed_link(url, proxy_url=PROXY) is not None


def test_path_prefix_of_the_configured_ticketproxy_is_kept() -> None:
    """Behind a path prefix, a link outside that prefix is not followed."""
    proxy = "https://example.com/tickets/desk/"
    good = "https://example.com/tickets/desk/api/artifacts/t/a"
    assert followed_link(good, proxy_url=proxy) is None
    assert followed_link("https://example.com/desk/api/artifacts/t/a", proxy_url=proxy) is not None


def test_file_ids_refuse_a_climbing_id() -> None:
    """An encoded ``../`` is no id, so an offline audit never reads outside its folder."""
    assert file_ids("/desk/api/artifacts/t/a") == ("t", "a")
    assert file_ids("/desk/api/artifacts/..%2F..%2Fsecret/a") is None


def test_created_files_are_named_from_the_signed_answer() -> None:
    """The artifact blocks of the answer comment's signed text name the created files."""
    text = "Done.\n\n```artifact path=out/poem.txt\nfoam\n```"
    key = generate_signing_key(login="alice")
    body = sign_comment(text, ticket="acme/agents#1", key=key, now=datetime.now(UTC))
    answers = [comment("unsigned", "alice", 6), comment(body, "alice", 7)]
    assert created_files(answers, 7) == ("out/poem.txt",)
    assert created_files(answers, 6) == ()
