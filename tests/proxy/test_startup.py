"""Tests for proxy.startup: what ``serve`` checks as it starts, told with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy.cli import main


def _real_github_env(tmp_path: Path, keyring: Path) -> dict[str, str]:
    # A closed port: the refusal must come before anything talks to GitHub.
    return {
        "TICKETPROXY_GITHUB_TOKEN": "ghp_not_used_before_the_refusal",
        "TICKETPROXY_GITHUB_REPO": "acme/agents",
        "TICKETPROXY_GITHUB_API_URL": "http://127.0.0.1:9/api/v3",
        "TICKETPROXY_DATA_DIR": str(tmp_path / "data"),
        "TICKETPROXY_KEYRING": str(keyring),
    }


def test_missing_keyring_stops_serve_naming_the_variable_the_path_and_keygen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A keyring path with no file is refused naming TICKETPROXY_KEYRING and `keygen`, no errno."""
    keyring = tmp_path / "nowhere" / "keyring.json"
    assert main(["serve", "--port", "0"], _real_github_env(tmp_path, keyring)) == 2
    err = capsys.readouterr().err
    assert f"TICKETPROXY_KEYRING={keyring}" in err
    assert "ticketproxy keygen" in err
    assert "Errno" not in err
    assert "Traceback" not in err


def test_unmounted_docker_keyring_that_became_a_directory_is_named_as_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A keyring path that is a directory (Docker's unmounted bind source) says so and why."""
    keyring = tmp_path / "keyring.json"
    keyring.mkdir()
    assert main(["serve", "--port", "0"], _real_github_env(tmp_path, keyring)) == 2
    err = capsys.readouterr().err
    assert f"TICKETPROXY_KEYRING={keyring}" in err
    assert "is a directory" in err
    assert "Docker" in err
    assert "Errno" not in err


def test_unreadable_keyring_json_is_refused_naming_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A keyring that is not JSON stops the start naming the variable and what is wrong."""
    keyring = tmp_path / "keyring.json"
    keyring.write_text("{not json", encoding="utf-8")
    assert main(["serve", "--port", "0"], _real_github_env(tmp_path, keyring)) == 2
    err = capsys.readouterr().err
    assert "TICKETPROXY_KEYRING" in err
    assert "not valid JSON" in err
