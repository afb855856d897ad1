"""Tests for auth.keyring.KeyringSource: revocation takes effect, a torn file judges nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from auth.errors import KeyringError, KeyringUnavailable
from auth.keyring import KeyringSource, add_key_to_keyring
from auth.keys import generate_signing_key
from auth.roles import Role


def _keyring_of(path: Path, *logins: str) -> None:
    """Write a keyring file holding one editor key for each login."""
    path.unlink(missing_ok=True)
    for number, login in enumerate(logins, start=1):
        key = generate_signing_key(login=login)
        add_key_to_keyring(path, key, roles=(Role.EDITOR,), user_id=1000 + number)


def test_revocation_takes_effect_when_the_file_keeps_its_old_mtime(tmp_path: Path) -> None:
    """A keyring rewritten as ``cp -p`` or ``rsync -t`` do (old mtime kept) is still re-read."""
    path = tmp_path / "keyring.json"
    _keyring_of(path, "alice", "bob")
    source = KeyringSource(path)
    assert len(source.current()) == 2
    before = path.stat()
    revoked = json.loads(path.read_text())
    revoked["keys"] = [k for k in revoked["keys"] if k["login"] != "bob"]
    path.write_text(json.dumps(revoked))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    assert [entry.login for entry in source.current()] == ["alice"]


def test_a_half_written_keyring_is_used_neither_old_nor_new(tmp_path: Path) -> None:
    """While the file is torn, nothing is judged: neither the old keys nor none at all."""
    path = tmp_path / "keyring.json"
    _keyring_of(path, "alice")
    source = KeyringSource(path)
    whole = path.read_text()
    path.write_text(whole[: len(whole) // 2])
    with pytest.raises(KeyringUnavailable, match="cannot be used now"):
        source.current()
    assert source.problem is not None
    assert "not valid JSON" in source.problem
    path.write_text(whole)
    assert len(source.current()) == 1
    assert source.problem is None


def test_a_keyring_deleted_while_serving_is_unavailable_not_empty(tmp_path: Path) -> None:
    """A keyring file removed under a running server stops judging instead of trusting nobody."""
    path = tmp_path / "keyring.json"
    _keyring_of(path, "alice")
    source = KeyringSource(path)
    path.unlink()
    with pytest.raises(KeyringUnavailable, match="No such file"):
        source.current()


def test_a_missing_keyring_at_start_up_is_a_configuration_error_naming_keygen(
    tmp_path: Path,
) -> None:
    """At start-up a missing keyring is refused with the fix, not waited for."""
    with pytest.raises(KeyringError, match="ticketproxy keygen"):
        KeyringSource(tmp_path / "absent.json")
