"""``ticketproxy oidc-keys export`` and ``audit --oidc-jwks``'s file, refused when wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jwt.algorithms import RSAAlgorithm

from proxy.cli import main
from proxy.cli.oidc_keys import read_jwks_file
from proxy.errors import ProxyError
from tests.helpers.oidc_issuer import LocalIssuer


def test_export_without_a_ticket_store_says_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An export pointed at no store fails naming the path, and creates no empty store."""
    data = tmp_path / "nowhere"
    assert main(["oidc-keys", "export"], {"TICKETPROXY_DATA_DIR": str(data)}) == 2
    assert f"no ticket store at {data / 'tickets.sqlite3'}" in capsys.readouterr().err
    assert not data.exists()


def test_audit_jwks_file_with_private_key_material_is_refused(tmp_path: Path) -> None:
    """A hand-saved JWKS with a private key is refused before the audit trusts anything."""
    issuer = LocalIssuer()
    leaked = tmp_path / "keys.json"
    private = {**RSAAlgorithm.to_jwk(issuer.key, as_dict=True), "kid": issuer.kid}
    leaked.write_text(json.dumps({"keys": [private]}))
    with pytest.raises(ProxyError, match="private key material") as refused:
        read_jwks_file(leaked)
    assert private["d"] not in str(refused.value)


def test_audit_jwks_file_that_is_not_json_is_refused(tmp_path: Path) -> None:
    """A file that is not JSON is named as such, not taken for an empty archive."""
    garbled = tmp_path / "keys.json"
    garbled.write_text("{keys: ")
    with pytest.raises(ProxyError, match="is not JSON"):
        read_jwks_file(garbled)


def test_check_issuer_without_an_archive_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--check-issuer alone would compare nothing: refused before any issue is fetched."""
    keyring = tmp_path / "keyring.json"
    keyring.write_text('{"keys": []}')
    argv = ["audit", "--repo", "acme/agents", "--keyring", str(keyring), "--check-issuer"]
    assert main(argv, {}) == 2
    assert "add --oidc-jwks FILE" in capsys.readouterr().err
