"""Tests for proxy.cli.variables: which variables commands read, and the misspelt ones."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from proxy.cli import main
from proxy.cli.variables import ReadNames, unknown_variables
from proxy.settings import Settings

SECRET = "ghp_" + "S3cretS3cretS3cretS3cretS3cretS3cr"


def _serve_until_the_keyring_refusal(tmp_path: Path, **extra: str) -> int:
    # A missing keyring stops serve after the settings are read, before anything listens.
    env = {
        "TICKETPROXY_GITHUB_TOKEN": "ghp_not_used_before_the_refusal",
        "TICKETPROXY_GITHUB_REPO": "acme/agents",
        "TICKETPROXY_GITHUB_API_URL": "http://127.0.0.1:9/api/v3",
        "TICKETPROXY_DATA_DIR": str(tmp_path / "data"),
        "TICKETPROXY_KEYRING": str(tmp_path / "missing.json"),
        **extra,
    }
    return main(["serve", "--port", "0"], env)


def test_misspelt_variable_is_warned_at_start_naming_the_closest_known_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """TICKETPROXY_POL_INTERVAL is logged at WARNING, suggesting TICKETPROXY_POLL_INTERVAL."""
    with caplog.at_level(logging.WARNING):
        _serve_until_the_keyring_refusal(tmp_path, TICKETPROXY_POL_INTERVAL="1")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        "TICKETPROXY_POL_INTERVAL" in m and "did you mean TICKETPROXY_POLL_INTERVAL?" in m
        for m in warnings
    ), warnings


def test_misspelt_secret_variable_is_named_but_its_value_never_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A misspelt token variable is warned about by name only: its value stays out of the log."""
    with caplog.at_level(logging.DEBUG):
        _serve_until_the_keyring_refusal(tmp_path, TICKETPROXY_GITHUB_TOKN=SECRET)
    assert "TICKETPROXY_GITHUB_TOKN" in caplog.text
    assert "TICKETPROXY_GITHUB_TOKEN?" in caplog.text
    assert SECRET not in caplog.text


def test_correctly_spelt_variables_raise_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Every variable the one reader reads, set at once, gives no unknown-variable warning."""
    with caplog.at_level(logging.WARNING):
        _serve_until_the_keyring_refusal(
            tmp_path,
            TICKETPROXY_POLL_INTERVAL="2",
            TICKETPROXY_MAX_WAIT="60",
            TICKETPROXY_HEARTBEAT_INTERVAL="1",
            TICKETPROXY_LOCK_ISSUES="off",
            TICKETPROXY_DRAFT_TIMEOUT="30",
            TICKETPROXY_EDITOR_TOKEN="ghp_the_editors_own",
            TICKETPROXY_WRITES_PER_HOUR="100",
        )
    assert "reads no such variable" not in caplog.text


def test_known_names_come_from_what_settings_looks_up_set_or_not() -> None:
    """The reader records unset variables too, so an empty environment still knows them all."""
    read = ReadNames({})
    Settings.from_env(read)
    assert {
        "TICKETPROXY_KEYRING",
        "TICKETPROXY_DRAFT_URL",
        "TICKETPROXY_GITHUB_APP_ID",
    } <= read.names
    env = {"TICKETPROXY_KEYRIN": "k.json", "TICKETPROXY_SOMETHING_ELSE": "x", "HOME": "/h"}
    assert unknown_variables(env, read.names) == [
        ("TICKETPROXY_KEYRIN", "TICKETPROXY_KEYRING"),
        ("TICKETPROXY_SOMETHING_ELSE", None),
    ]
