"""Tests for auth.keys and the JWK encoding beneath it (auth.jwk)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from auth.errors import JWKError, KeyFileError, SigningError
from auth.jwk import b64url_encode, public_key_from_members, thumbprint
from auth.keys import (
    SigningKey,
    generate_signing_key,
    load_signing_key,
    public_jwk,
    signing_key_from_json,
    signing_key_to_json,
    write_signing_key,
)


def _key_file_members(key: SigningKey) -> dict[str, Any]:
    members: dict[str, Any] = json.loads(signing_key_to_json(key))
    return members


def test_rfc8037_example_public_key_has_the_published_thumbprint() -> None:
    """The Ed25519 example key of RFC 8037 appendix A.3 gets the thumbprint the RFC gives."""
    alg, public_key = public_key_from_members(
        {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
    )
    assert alg == "EdDSA"
    assert thumbprint(public_key) == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"


@pytest.mark.parametrize("alg", ["EdDSA", "ES256"])
def test_generated_key_is_named_by_the_thumbprint_of_its_public_key(alg: str) -> None:
    """A new key's kid is the RFC 7638 thumbprint, so it cannot be chosen to collide."""
    key = generate_signing_key(login="alice", alg=alg)
    assert key.alg == alg
    assert key.login == "alice"
    assert key.kid == thumbprint(key.private_key.public_key())
    assert len(key.kid) == 43


def test_two_generated_keys_differ() -> None:
    """Each generated key is fresh, so two people never share a kid."""
    assert generate_signing_key(login="alice").kid != generate_signing_key(login="alice").kid


def test_public_jwk_of_an_ed25519_key_has_only_public_members() -> None:
    """The Ed25519 public JWK carries kty, crv, x, kid, alg and use, and no d."""
    key = generate_signing_key(login="alice")
    jwk = public_jwk(key)
    assert set(jwk) == {"kty", "crv", "x", "kid", "alg", "use"}
    assert (jwk["kty"], jwk["crv"], jwk["alg"], jwk["use"]) == ("OKP", "Ed25519", "EdDSA", "sig")
    assert jwk["kid"] == key.kid


def test_public_jwk_of_a_p256_key_has_both_coordinates() -> None:
    """The P-256 public JWK carries x and y, each 32 bytes, and alg ES256."""
    key = generate_signing_key(login="bob", alg="ES256")
    jwk = public_jwk(key)
    assert set(jwk) == {"kty", "crv", "x", "y", "kid", "alg", "use"}
    assert (jwk["kty"], jwk["crv"], jwk["alg"]) == ("EC", "P-256", "ES256")
    assert len(jwk["x"]) == len(jwk["y"]) == 43


def test_repr_of_a_signing_key_never_shows_the_private_key() -> None:
    """Printing or logging a key shows its kid and login but not its secret."""
    key = generate_signing_key(login="alice")
    secret = _key_file_members(key)["d"]
    shown = repr(key) + str(key)
    assert key.kid in shown
    assert "alice" in shown
    assert secret not in shown
    assert "private" not in shown


def test_generating_a_key_with_an_unsupported_algorithm_fails() -> None:
    """Only EdDSA and ES256 keys can be made; RS256 is refused by name."""
    with pytest.raises(SigningError, match="RS256"):
        generate_signing_key(login="alice", alg="RS256")


def test_generating_a_key_for_a_name_that_is_not_a_github_login_fails() -> None:
    """A key for an impossible login would never verify, so it is refused at once."""
    with pytest.raises(SigningError, match="not a GitHub login"):
        generate_signing_key(login="alice smith")


def test_signing_key_refuses_a_kid_that_is_not_its_thumbprint() -> None:
    """A SigningKey with a made-up kid cannot be built, so it cannot sign under that kid."""
    key = generate_signing_key(login="alice")
    with pytest.raises(SigningError, match="thumbprint"):
        SigningKey(kid="my-key", alg="EdDSA", login="alice", private_key=key.private_key)


def test_signing_key_refuses_an_alg_that_does_not_fit_its_key() -> None:
    """An Ed25519 key labelled ES256 is refused, so no token ever names the wrong algorithm."""
    key = generate_signing_key(login="alice")
    with pytest.raises(SigningError, match="does not match"):
        SigningKey(kid=key.kid, alg="ES256", login="alice", private_key=key.private_key)


def test_signing_key_refuses_a_curve_other_than_p256() -> None:
    """A P-384 key is not one ticketproxy signs with."""
    private_key = ec.generate_private_key(ec.SECP384R1())
    with pytest.raises(SigningError, match="secp384r1"):
        SigningKey(kid="x", alg="ES256", login="alice", private_key=private_key)


@pytest.mark.parametrize("alg", ["EdDSA", "ES256"])
def test_key_file_round_trips_with_owner_only_permissions(tmp_path: Path, alg: str) -> None:
    """A written key file reads back as the same key, and only its owner can read it."""
    key = generate_signing_key(login="alice", alg=alg)
    path = tmp_path / "alice.jwk.json"
    write_signing_key(path, key)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    loaded = load_signing_key(path)
    assert loaded == key
    assert _key_file_members(loaded)["d"] == _key_file_members(key)["d"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alice.jwk.json"]


def test_key_file_is_written_owner_only_even_with_a_permissive_umask(tmp_path: Path) -> None:
    """A umask of 0 still yields mode 0600, never a world-readable key."""
    old = os.umask(0)
    try:
        write_signing_key(tmp_path / "k.json", generate_signing_key(login="alice"))
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "k.json").stat().st_mode) == 0o600


def test_writing_a_key_never_overwrites_an_existing_file(tmp_path: Path) -> None:
    """A second keygen to the same path fails and leaves the first key intact."""
    path = tmp_path / "alice.jwk.json"
    first = generate_signing_key(login="alice")
    write_signing_key(path, first)
    with pytest.raises(KeyFileError, match="refusing to overwrite"):
        write_signing_key(path, generate_signing_key(login="alice"))
    assert load_signing_key(path) == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alice.jwk.json"]


def test_writing_a_key_into_a_missing_directory_names_the_path(tmp_path: Path) -> None:
    """The error names the file that could not be created."""
    path = tmp_path / "missing" / "k.json"
    with pytest.raises(KeyFileError, match=r"cannot create private key file .*k\.json"):
        write_signing_key(path, generate_signing_key(login="alice"))


def test_loading_a_missing_key_file_names_it_and_suggests_keygen(tmp_path: Path) -> None:
    """A missing key file says where it looked and how to make one."""
    path = tmp_path / "nope.json"
    with pytest.raises(KeyFileError, match=r"nope\.json.*ticketproxy keygen"):
        load_signing_key(path)


def test_loading_a_directory_as_a_key_file_fails_cleanly(tmp_path: Path) -> None:
    """A directory is not a key file, and the error says which path was read."""
    with pytest.raises(KeyFileError, match="cannot read private key file"):
        load_signing_key(tmp_path)


def test_key_file_with_bad_json_is_rejected_with_its_position(tmp_path: Path) -> None:
    """Broken JSON is reported with the file, line and column."""
    path = tmp_path / "k.json"
    path.write_text('{"kty": "OKP",\n  oops}')
    with pytest.raises(KeyFileError, match=r"k.json is not valid JSON \(line 2, column 3\)"):
        load_signing_key(path)


def test_key_file_holding_a_list_is_rejected() -> None:
    """A key file must hold one JSON object."""
    with pytest.raises(KeyFileError, match="one JSON object"):
        signing_key_from_json("[]")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kty": "RSA"}, 'kty "RSA" is not accepted'),
        ({"kty": "oct"}, 'kty "oct" is not accepted'),
        ({"crv": "X25519"}, "'X25519' is not supported"),
        ({"crv": "Ed448"}, "'Ed448' is not supported"),
        ({"alg": "ES256"}, "alg 'ES256' does not match"),
        ({"alg": "none"}, "alg 'none' does not match"),
        ({"use": "enc"}, '"use" must be "sig"'),
        ({"x": "AAAA"}, '"x" must encode 32 bytes'),
        ({"x": 7}, '"x" must be an unpadded base64url string'),
        ({"kid": "alice-laptop"}, "thumbprint"),
        ({"login": "al ice"}, '"login" must be the GitHub login'),
        ({"login": None}, '"login" must be the GitHub login'),
        ({"comment": "hi"}, r"unknown members \['comment'\]"),
    ],
)
def test_key_file_with_an_invalid_member_is_rejected_naming_the_problem(
    change: dict[str, Any], message: str
) -> None:
    """Each bad member of a key file is refused with a message that names it."""
    members = _key_file_members(generate_signing_key(login="alice")) | change
    with pytest.raises(KeyFileError, match=message):
        signing_key_from_json(json.dumps(members), source="alice.json")


def test_key_file_whose_public_half_does_not_match_its_private_half_is_rejected() -> None:
    """Pasting another key's x next to one's own d is caught."""
    mine = _key_file_members(generate_signing_key(login="alice"))
    theirs = _key_file_members(generate_signing_key(login="alice"))
    with pytest.raises(KeyFileError, match='do not belong to the private member "d"'):
        signing_key_from_json(json.dumps(mine | {"x": theirs["x"], "kid": theirs["kid"]}))


def test_key_file_with_a_p256_scalar_out_of_range_is_rejected() -> None:
    """A P-256 d of zero is not a private key."""
    members = _key_file_members(generate_signing_key(login="bob", alg="ES256"))
    members["d"] = b64url_encode(bytes(32))
    with pytest.raises(KeyFileError, match='"d" is not a valid P-256 private scalar'):
        signing_key_from_json(json.dumps(members))


def test_key_file_errors_never_show_the_private_scalar() -> None:
    """A rejected key file's message does not quote its secret."""
    members = _key_file_members(generate_signing_key(login="alice")) | {"kid": "wrong"}
    with pytest.raises(KeyFileError) as caught:
        signing_key_from_json(json.dumps(members))
    assert members["d"] not in str(caught.value)


@pytest.mark.parametrize(
    "x",
    [
        "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo=",  # padded
        "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo",  # standard, not url, alphabet
        "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURp",  # non-zero slack bits
    ],
)
def test_public_key_in_a_non_canonical_encoding_is_rejected(x: str) -> None:
    """One key has one spelling, so it cannot appear under two kids."""
    with pytest.raises(JWKError, match="base64url"):
        public_key_from_members({"kty": "OKP", "crv": "Ed25519", "x": x})
