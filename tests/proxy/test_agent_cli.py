"""The agent's side of the command line, and the trusted issuer setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from auth.keyring import Keyring
from auth.keys import load_signing_key
from proxy.cli import main
from proxy.errors import ConfigError
from proxy.settings import Settings


def test_keygen_enrolls_an_agent_key_on_behalf_of_its_editor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Way (a): ``--roles agent --on-behalf-of alice`` enrolls alice's agent's own key."""
    keyring, out = tmp_path / "keyring.json", tmp_path / "agent.key"
    argv = ["keygen", "--login", "alice-agent", "--roles", "agent", "--on-behalf-of", "alice"]
    assert main([*argv, "--keyring", str(keyring), "--out", str(out)], {}) == 0
    entry = Keyring.load(keyring).get(load_signing_key(out).kid)
    assert entry is not None
    assert entry.on_behalf_of == "alice"


def test_keygen_of_an_agent_key_without_its_editor_is_refused_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An agent key that names no editor would be nobody's agent: refused before writing."""
    keyring, out = tmp_path / "keyring.json", tmp_path / "agent.key"
    argv = ["keygen", "--login", "alice-agent", "--roles", "agent"]
    assert main([*argv, "--keyring", str(keyring), "--out", str(out)], {}) == 2
    assert "--on-behalf-of" in capsys.readouterr().err
    assert not out.exists()
    assert not keyring.exists()


def test_keygen_of_an_agent_key_that_also_reviews_is_refused_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An agent never reviews: agent and reviewer on one key is refused before writing."""
    keyring, out = tmp_path / "keyring.json", tmp_path / "agent.key"
    argv = ["keygen", "--login", "alice-agent", "--roles", "agent,reviewer"]
    argv += ["--on-behalf-of", "alice", "--keyring", str(keyring), "--out", str(out)]
    assert main(argv, {}) == 2
    assert 'role "agent" only' in capsys.readouterr().err
    assert not out.exists()


def test_sign_oidc_outside_a_job_with_id_token_write_says_what_to_add(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the Actions request variables, --oidc names them and the permission."""
    answer = tmp_path / "a.txt"
    answer.write_text("done", encoding="utf-8")
    argv = ["sign", "--ticket", "acme/agents#1", "--oidc", "--as", "alice-agent", str(answer)]
    assert main(argv, {}) == 2
    err = capsys.readouterr().err
    assert "ACTIONS_ID_TOKEN_REQUEST_URL" in err
    assert "id-token: write" in err


def test_sign_oidc_without_the_posting_login_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--oidc needs --as: the token vouches for a workflow, the login says who posts."""
    answer = tmp_path / "a.txt"
    answer.write_text("done", encoding="utf-8")
    assert main(["sign", "--ticket", "acme/agents#1", "--oidc", str(answer)], {}) == 2
    assert "--as LOGIN" in capsys.readouterr().err


def test_sign_with_both_a_key_and_oidc_is_a_usage_error(tmp_path: Path) -> None:
    """A key and --oidc are two different signers: give one."""
    with pytest.raises(SystemExit):
        main(["sign", "--ticket", "acme/agents#1", "--oidc", "--key", str(tmp_path / "k")], {})


def test_the_trusted_oidc_issuer_defaults_to_github_actions_and_can_be_turned_off() -> None:
    """TICKETPROXY_OIDC_ISSUER: GitHub Actions' by default, empty for none, a URL otherwise."""
    assert Settings.from_env({}).oidc_issuer == "https://token.actions.githubusercontent.com"
    assert Settings.from_env({"TICKETPROXY_OIDC_ISSUER": ""}).oidc_issuer is None
    local = Settings.from_env({"TICKETPROXY_OIDC_ISSUER": "http://127.0.0.1:8099/"})
    assert local.oidc_issuer == "http://127.0.0.1:8099"


@pytest.mark.parametrize(
    "value", ["http://issuer.example", "token.actions.githubusercontent.com", "https://x/?a=1"]
)
def test_an_oidc_issuer_over_plain_http_or_malformed_stops_the_start(value: str) -> None:
    """Keys fetched over plain http from another host could be swapped: refused by name."""
    with pytest.raises(ConfigError, match="TICKETPROXY_OIDC_ISSUER"):
        Settings.from_env({"TICKETPROXY_OIDC_ISSUER": value})
