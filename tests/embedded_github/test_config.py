"""The sandbox config file: loading, saving atomically with mode 0600, and clear errors."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from embedded_github import (
    SandboxConfig,
    SandboxConfigError,
    SandboxUser,
    load_sandbox_config,
    save_sandbox_config,
)


def test_saved_config_loads_back_equal_and_is_private(tmp_path: Path) -> None:
    """A saved config reads back the same, and only its owner may read the file."""
    config = SandboxConfig(
        users=(SandboxUser("alice", 1001, "ghp_secret", "write", "Alice"),),
        repos=("acme/agents",),
    )
    path = tmp_path / "nested" / "sandbox.json"
    save_sandbox_config(path, config)
    assert load_sandbox_config(path) == config
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["sandbox.json"]


def test_user_repr_hides_the_token() -> None:
    """A user's repr (and so any log line or traceback) never shows the token."""
    shown = repr(SandboxUser("alice", 1001, "ghp_verysecret"))
    assert "ghp_verysecret" not in shown
    assert "alice" in shown


def test_missing_field_error_names_the_file_and_the_field(tmp_path: Path) -> None:
    """A user without a token is refused with the file and ``users[0]`` named."""
    path = tmp_path / "sandbox.json"
    path.write_text(json.dumps({"users": [{"login": "alice", "id": 1}], "repos": []}))
    with pytest.raises(SandboxConfigError) as raised:
        load_sandbox_config(path)
    assert str(path) in str(raised.value)
    assert "users[0]" in str(raised.value)
    assert "'token'" in str(raised.value)


def test_unknown_permission_is_refused_with_the_allowed_values(tmp_path: Path) -> None:
    """A permission other than admin, write or read is refused."""
    path = tmp_path / "sandbox.json"
    user = {"login": "alice", "id": 1, "token": "t", "permission": "owner"}
    path.write_text(json.dumps({"users": [user], "repos": ["acme/agents"]}))
    with pytest.raises(SandboxConfigError, match=r"admin, write, read"):
        load_sandbox_config(path)


def test_malformed_repo_and_duplicate_tokens_are_refused(tmp_path: Path) -> None:
    """Repos must be ``owner/name`` and two users may not share a token (never echoed)."""
    path = tmp_path / "sandbox.json"
    path.write_text(json.dumps({"users": [], "repos": ["just-a-name"]}))
    with pytest.raises(SandboxConfigError, match=r"owner/name"):
        load_sandbox_config(path)
    users = [
        {"login": "alice", "id": 1, "token": "same-token"},
        {"login": "bob", "id": 2, "token": "same-token"},
    ]
    path.write_text(json.dumps({"users": users, "repos": []}))
    with pytest.raises(SandboxConfigError) as raised:
        load_sandbox_config(path)
    assert "same-token" not in str(raised.value)


def test_invalid_json_error_names_the_file(tmp_path: Path) -> None:
    """A file that is not JSON is refused with its path in the message."""
    path = tmp_path / "sandbox.json"
    path.write_text("{users:")
    with pytest.raises(SandboxConfigError, match=r"not valid JSON") as raised:
        load_sandbox_config(path)
    assert str(path) in str(raised.value)
