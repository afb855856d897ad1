"""An embedded first start stopped half-way: the next start finishes the set-up, losing nothing.

Real faults where they can be made: a keyring path that cannot be written, a taken port, a
key file that cannot be read. A kill between two files of the set-up cannot be timed from
outside, so there a child ``serve`` kills itself (SIGKILL, nothing cleaned up) on reaching
that step; every later start is the real ``ticketproxy serve``.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auth.keyring import Keyring
from auth.keys import load_signing_key
from proxy.cli import main
from tests.helpers.serving import serve_env, serving

pytestmark = pytest.mark.slow

# Replaces one step of proxy.embedded's set-up with a SIGKILL of the process itself.
KILLED_AT = """
import os, signal, sys
import proxy.embedded

def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

setattr(proxy.embedded, sys.argv[1], killed)
from proxy.cli import main
from tests.helpers.serving import TICKETPROXY, serve_env, serving
sys.exit(main(["serve", "--port", "0"]))
"""


def first_start_killed_at(step: str, env: dict[str, str]) -> None:
    """Run a first ``serve`` that is killed when its set-up reaches ``step``."""
    result = subprocess.run(
        [sys.executable, "-c", KILLED_AT, step], env=env, capture_output=True, timeout=60
    )
    assert result.returncode == -signal.SIGKILL, result.stderr.decode()


def banner_line(banner: str, marker: str) -> str:
    """Return the banner's shell command containing ``marker``."""
    return next(line.strip() for line in banner.splitlines() if marker in line)


def ask_and_answer_as_the_demo_editor(banner: str, tmp_path: Path) -> str:
    """Run the banner's question, then its answer command, and return what the agent got."""
    shell = ["/bin/bash", "-c"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    asking = subprocess.Popen(
        [*shell, banner_line(banner, "OPENAI_BASE_URL=")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        # The answer command refuses an issue that does not exist yet: retry until it does.
        while True:
            answered = subprocess.run(
                [*shell, banner_line(banner, " answer ")], env=env, capture_output=True, timeout=30
            )
            if answered.returncode == 0:
                break
            assert time.monotonic() < deadline, answered.stderr.decode()
            time.sleep(0.2)
        out, err = asking.communicate(timeout=30)
    finally:
        if asking.poll() is None:
            asking.kill()
            asking.wait()
    assert asking.returncode == 0, err
    return out.strip()


def enrolled(data: Path) -> bool:
    """Say whether the data dir's keyring holds the public half of the demo editor's key."""
    kid = load_signing_key(data / "alice.key").kid
    return Keyring.load(data / "keyring.json").get(kid) is not None


def test_start_killed_after_keys_written_recovers_next_start(tmp_path: Path) -> None:
    """Killed between the demo key and the keyring, the next start enrols the key it left."""
    env = serve_env(tmp_path)
    data = tmp_path / "data"
    first_start_killed_at("add_key_to_keyring", env)
    key = (data / "alice.key").read_bytes()
    assert not (data / "keyring.json").exists()
    with serving(env, tmp_path / "serve.log") as banner:
        assert "repaired the embedded set-up" in banner
        assert enrolled(data)
        assert ask_and_answer_as_the_demo_editor(banner, tmp_path) == "Hello from a human"
    assert (data / "alice.key").read_bytes() == key


def test_start_killed_after_config_written_recovers_next_start(tmp_path: Path) -> None:
    """Killed after the users file, before any key, the next start makes the key, same users."""
    env = serve_env(tmp_path)
    data = tmp_path / "data"
    first_start_killed_at("write_signing_key", env)
    users = (data / "sandbox-users.json").read_text()
    assert not (data / "alice.key").exists()
    with serving(env, tmp_path / "serve.log") as banner:
        assert enrolled(data)
        editor_token = json.loads(users)["users"][1]["token"]
        assert f"GITHUB_TOKEN={editor_token} " in banner
    assert (data / "sandbox-users.json").read_text() == users


def test_unwritable_keyring_is_named_and_the_kept_key_is_enrolled_next_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A keyring path that cannot be written stops the start naming it; once fixed, it heals."""
    blocker = tmp_path / "keys"
    blocker.write_text("a file where the keyring's directory should be\n")
    keyring = blocker / "keyring.json"
    env = serve_env(tmp_path, TICKETPROXY_KEYRING=str(keyring))
    assert main(["serve", "--port", "0"], env) == 2
    err = capsys.readouterr().err
    assert f"TICKETPROXY_KEYRING={keyring}" in err
    assert "Not a directory" in err
    assert "Traceback" not in err
    key = (tmp_path / "data" / "alice.key").read_bytes()
    blocker.unlink()
    blocker.mkdir()
    with serving(env, tmp_path / "serve.log") as banner:
        assert "repaired the embedded set-up" in banner
    kid = load_signing_key(tmp_path / "data" / "alice.key").kid
    assert Keyring.load(keyring).get(kid) is not None
    assert (tmp_path / "data" / "alice.key").read_bytes() == key


def test_port_clash_on_first_start_leaves_a_data_dir_the_next_start_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A taken sandbox port after the set-up is written: the next start reuses it unchanged."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        env = serve_env(tmp_path, TICKETPROXY_SANDBOX_PORT=str(taken.getsockname()[1]))
        assert main(["serve", "--port", "0"], env) == 2
    assert "TICKETPROXY_SANDBOX_PORT" in capsys.readouterr().err
    data = tmp_path / "data"
    written = {path.name: path.read_bytes() for path in data.glob("*.json")}
    with serving(serve_env(tmp_path), tmp_path / "serve.log") as banner:
        assert "repaired" not in banner
        assert enrolled(data)
    assert {path.name: path.read_bytes() for path in data.glob("*.json")} == written


def test_unreadable_demo_key_left_without_a_keyring_is_named_not_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A demo key that cannot be read is never overwritten: the start names it and stops."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "alice.key").write_text("{ half a key")
    assert main(["serve", "--port", "0"], serve_env(tmp_path)) == 2
    err = capsys.readouterr().err
    assert str(data / "alice.key") in err
    assert "move" in err
    assert "Traceback" not in err
    assert (data / "alice.key").read_text() == "{ half a key"
    assert not (data / "keyring.json").exists()
