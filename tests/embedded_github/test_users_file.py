"""The users file re-read while the sandbox runs: additions count, a torn file is skipped."""

from __future__ import annotations

import os
from pathlib import Path

from embedded_github import Sandbox, SandboxConfig, SandboxUser, save_sandbox_config
from embedded_github.users_file import UsersFileWatch

BOT = SandboxUser("ticketproxy-bot", 1, "ghp_bot_token_0123456789", "admin")
CAROL = SandboxUser("carol", 1002, "ghp_carol_token_0123456789", "write")


def test_half_written_users_file_is_skipped_until_whole(tmp_path: Path) -> None:
    """A file caught half-written registers nobody; once whole, the new user can sign in."""
    path = tmp_path / "users.json"
    config = SandboxConfig(users=(BOT,), repos=("acme/agents",))
    save_sandbox_config(path, config)
    sandbox = Sandbox(config)
    try:
        watch = UsersFileWatch(sandbox, path)
        assert watch.check() == 0  # unchanged
        path.write_text('{"users": [', encoding="utf-8")
        assert watch.check() == 0
        assert sandbox.state.user_for_token(BOT.token) == BOT
        save_sandbox_config(path, SandboxConfig(users=(BOT, CAROL), repos=config.repos))
        os.utime(path, ns=(1, 1))  # a new stamp even within the same clock tick
        assert watch.check() == 1
        assert sandbox.state.user_for_token(CAROL.token) == CAROL
    finally:
        sandbox.close()
