"""Tests for auth.keyring: loading, validating and extending the keyring file."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from auth.errors import KeyringError
from auth.jwk import b64url_encode
from auth.keyring import Keyring, KeyringEntry, add_key_to_keyring
from auth.keys import generate_signing_key
from auth.roles import Role
from tests.helpers.signing_team import Team, keyring_jwk


def _one_entry(**change: Any) -> dict[str, Any]:
    jwk = keyring_jwk(generate_signing_key(login="alice"), [Role.EDITOR], user_id=1001)
    return {"keys": [jwk | change]}


def test_team_keyring_finds_each_key_by_kid(team: Team) -> None:
    """Every key in the keyring is found by its kid with its login, alg and roles."""
    alice = team.keyring.get(team.alice.kid)
    bob = team.keyring.get(team.bob.kid)
    assert alice is not None
    assert bob is not None
    assert (alice.login, alice.alg, alice.roles, alice.user_id) == (
        "alice",
        "EdDSA",
        frozenset({Role.EDITOR}),
        1001,
    )
    assert (bob.login, bob.alg, bob.roles) == ("bob", "ES256", frozenset({Role.REVIEWER}))
    assert team.keyring.get(team.outsider.kid) is None
    assert len(team.keyring) == 4
    assert [e.login for e in team.keyring] == ["alice", "bob", "carol", "mallory"]


def test_logins_with_role_lists_each_holder_once_in_lower_case() -> None:
    """Two keys of one person, spelt Alice and alice, count as one reviewer."""
    keys = [
        keyring_jwk(generate_signing_key(login="Alice"), [Role.REVIEWER]),
        keyring_jwk(generate_signing_key(login="alice"), [Role.REVIEWER, Role.EDITOR]),
        keyring_jwk(generate_signing_key(login="bob"), [Role.EDITOR]),
    ]
    keyring = Keyring.from_jwks({"keys": keys})
    assert keyring.logins_with_role(Role.REVIEWER) == frozenset({"alice"})
    assert keyring.logins_with_role(Role.EDITOR) == frozenset({"alice", "bob"})


def test_keyring_round_trips_through_jwks(team: Team) -> None:
    """to_jwks writes what from_jwks reads back, entry for entry."""
    again = Keyring.from_jwks(json.loads(json.dumps(team.keyring.to_jwks())))
    assert [(e.kid, e.login, e.roles, e.user_id) for e in again] == [
        (e.kid, e.login, e.roles, e.user_id) for e in team.keyring
    ]


def test_add_key_creates_the_keyring_file_and_loads_back(tmp_path: Path) -> None:
    """The first keygen creates the keyring; the entry reads back with its roles and id."""
    path = tmp_path / "keyring.json"
    key = generate_signing_key(login="alice")
    entry = add_key_to_keyring(path, key, roles=[Role.EDITOR, Role.REVIEWER], user_id=1001)
    assert isinstance(entry, KeyringEntry)
    loaded = Keyring.load(path).get(key.kid)
    assert loaded == entry
    assert loaded.roles == frozenset({Role.EDITOR, Role.REVIEWER})
    assert "d" not in json.loads(path.read_text())["keys"][0]
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_add_key_appends_and_keeps_the_file_mode(tmp_path: Path) -> None:
    """A second key is appended after the first, and a 0640 keyring stays 0640."""
    path = tmp_path / "keyring.json"
    first = generate_signing_key(login="alice")
    second = generate_signing_key(login="bob", alg="ES256")
    add_key_to_keyring(path, first, roles=[Role.EDITOR])
    os.chmod(path, 0o640)
    add_key_to_keyring(path, second, roles=[Role.REVIEWER])
    assert [e.kid for e in Keyring.load(path)] == [first.kid, second.kid]
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keyring.json"]


def test_add_key_refuses_a_kid_already_present_and_changes_nothing(tmp_path: Path) -> None:
    """Adding the same key twice fails, so no entry's roles are silently replaced."""
    path = tmp_path / "keyring.json"
    key = generate_signing_key(login="alice")
    add_key_to_keyring(path, key, roles=[Role.EDITOR])
    before = path.read_text()
    with pytest.raises(KeyringError, match=f"kid {key.kid} is already in keyring file"):
        add_key_to_keyring(path, key, roles=[Role.EDITOR, Role.REVIEWER])
    assert path.read_text() == before


def test_add_key_refuses_a_second_user_id_for_one_login(tmp_path: Path) -> None:
    """A new key claiming another account id for the same login is refused."""
    path = tmp_path / "keyring.json"
    add_key_to_keyring(path, generate_signing_key(login="alice"), roles=[Role.EDITOR], user_id=1)
    before = path.read_text()
    with pytest.raises(KeyringError, match="has user_id 2 here but 1 on another key"):
        add_key_to_keyring(
            path, generate_signing_key(login="ALICE"), roles=[Role.EDITOR], user_id=2
        )
    assert path.read_text() == before


def test_add_key_into_a_missing_directory_names_the_path(tmp_path: Path) -> None:
    """The error names the keyring that could not be written."""
    path = tmp_path / "missing" / "keyring.json"
    with pytest.raises(KeyringError, match=r"cannot write keyring file .*keyring\.json"):
        add_key_to_keyring(path, generate_signing_key(login="alice"), roles=[Role.EDITOR])


def test_loading_a_missing_keyring_names_the_path_and_suggests_keygen(tmp_path: Path) -> None:
    """A missing keyring is an error, never an empty keyring that trusts no one silently."""
    with pytest.raises(KeyringError, match=r"no keyring file at .*nope\.json.*ticketproxy keygen"):
        Keyring.load(tmp_path / "nope.json")


def test_loading_a_keyring_with_bad_json_names_the_line(tmp_path: Path) -> None:
    """Broken JSON is reported with the file, line and column."""
    path = tmp_path / "keyring.json"
    path.write_text('{"keys": [\n\n  {,]}')
    with pytest.raises(KeyringError, match=r"keyring.json is not valid JSON \(line 3, column 4"):
        Keyring.load(path)


@pytest.mark.parametrize("data", [{}, {"keys": {}}, {"keys": "none"}, []])
def test_keyring_without_a_keys_list_is_rejected(data: Any) -> None:
    """A keyring must be a JWKS: an object with a keys list."""
    with pytest.raises(KeyringError, match='must be a JSON object with a "keys" list'):
        Keyring.from_jwks(data, source="kr.json")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"d": "AAAA"}, r"has private members \['d'\].*treat the key as leaked"),
        ({"kty": "RSA", "n": "AQAB", "e": "AQAB"}, 'kty "RSA" is not accepted'),
        ({"kty": "RSA"}, 'kty "RSA" is not accepted'),
        ({"kty": "oct", "k": "c2VjcmV0"}, r"private members \['k'\]"),
        ({"kty": "oct"}, 'kty "oct" is not accepted'),
        ({"alg": "HS256"}, "alg 'HS256' does not match the key type"),
        ({"alg": "ES256"}, "alg 'ES256' does not match the key type"),
        ({"crv": "Ed448"}, "crv 'Ed448' is not supported"),
        ({"use": "enc"}, '"use" must be "sig"'),
        ({"x": "AAAA"}, '"x" must encode 32 bytes, not 3'),
        ({"kid": "alice-1"}, '"kid" must be the RFC 7638 thumbprint'),
        ({"kid": None}, '"kid" must be the RFC 7638 thumbprint'),
        ({"roles": ["admin"]}, '"roles" may only hold: editor, reviewer'),
        ({"roles": []}, '"roles" must be a non-empty list'),
        ({"roles": "editor"}, '"roles" must be a non-empty list'),
        ({"roles": [["editor"]]}, '"roles" may only hold'),
        ({"user_id": "1001"}, '"user_id" must be the positive GitHub account id'),
        ({"user_id": True}, '"user_id" must be the positive GitHub account id'),
        ({"user_id": -5}, '"user_id" must be the positive GitHub account id'),
        ({"role": ["editor"]}, r"unknown members \['role'\]"),
    ],
)
def test_keyring_entry_with_an_invalid_member_is_rejected_naming_it(
    change: dict[str, Any], message: str
) -> None:
    """Each bad member is refused with a message naming the source, key index and problem."""
    with pytest.raises(KeyringError, match=message) as caught:
        Keyring.from_jwks(_one_entry(**change), source="keyring file kr.json")
    assert str(caught.value).startswith("keyring file kr.json: key 0")


@pytest.mark.parametrize(
    "login",
    ["", "-alice", "alice-", "al--ice", "al_ice", "a" * 40, "аlice", "alice ", 42, None],
)
def test_keyring_entry_whose_login_is_not_a_github_login_is_rejected(login: Any) -> None:
    """Only real GitHub login shapes are trusted, which keeps look-alike logins out."""
    with pytest.raises(KeyringError, match='"login" must be the GitHub login'):
        Keyring.from_jwks(_one_entry(login=login))


def test_keyring_names_the_kid_of_the_bad_entry() -> None:
    """The message names the index and kid, so the admin can find the entry."""
    good = keyring_jwk(generate_signing_key(login="bob"), [Role.EDITOR])
    bad = _one_entry(roles=["boss"])["keys"][0]
    with pytest.raises(KeyringError, match=rf"key 1 \(kid {bad['kid']}\)"):
        Keyring.from_jwks({"keys": [good, bad]})


def test_keyring_with_a_duplicate_kid_is_rejected() -> None:
    """The same key listed twice is refused, even with the same roles."""
    entry = _one_entry()["keys"][0]
    with pytest.raises(KeyringError, match=r"key 1 \(kid .*\) appears twice"):
        Keyring.from_jwks({"keys": [entry, entry]})


def test_keyring_entry_that_is_not_an_object_is_rejected() -> None:
    """A string in the keys list is reported by its index."""
    with pytest.raises(KeyringError, match=r"key 0 must be a JSON object"):
        Keyring.from_jwks({"keys": ["alice"]})


def test_p256_entry_whose_point_is_not_on_the_curve_is_rejected() -> None:
    """An invalid-curve public key is refused before it can verify anything."""
    jwk = keyring_jwk(generate_signing_key(login="bob", alg="ES256"), [Role.REVIEWER])
    jwk["y"] = b64url_encode((1).to_bytes(32, "big"))
    with pytest.raises(KeyringError, match="not a point on P-256"):
        Keyring.from_jwks({"keys": [jwk]})


def test_empty_keyring_is_empty() -> None:
    """An empty keys list gives a keyring that trusts nobody."""
    keyring = Keyring.from_jwks({"keys": []})
    assert len(keyring) == 0
    assert keyring.logins_with_role(Role.EDITOR) == frozenset()


def test_keyring_repr_shows_kids_and_logins(team: Team) -> None:
    """The repr lists the kid and login of each key, which are public."""
    assert f"{team.alice.kid}=alice" in repr(team.keyring)
