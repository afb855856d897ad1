"""Tests for auth.sign: what a signed comment carries."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import jwt
import pytest

from auth.comment import split_signed_comment, text_digest
from auth.errors import SigningError
from auth.keys import SigningKey
from auth.roles import Act
from auth.sign import sign_comment
from tests.helpers.signing_team import NOW, TICKET, Team


def _decode(body: str, key: SigningKey) -> tuple[dict[str, Any], dict[str, Any]]:
    _, token = split_signed_comment(body)
    assert token is not None
    decoded = jwt.decode_complete(
        token,
        key.private_key.public_key(),
        algorithms=[key.alg],
        options={"verify_exp": False, "verify_iat": False, "verify_aud": False},
    )
    return decoded["header"], decoded["payload"]


@pytest.mark.parametrize("signer", ["alice", "bob"])
def test_signed_answer_carries_every_claim_the_design_names(team: Team, signer: str) -> None:
    """An answer's token names signer, ticket, act, text hash, window and a random jti."""
    key: SigningKey = getattr(team, signer)
    body = _sign(team, key=key, text="Run `ls`.\r\n")
    header, claims = _decode(body, key)
    assert header == {"alg": key.alg, "kid": key.kid, "typ": "JWT"}
    assert claims["sub"] == key.login
    assert claims["aud"] == TICKET
    assert claims["act"] == "answer"
    assert claims["sha256"] == text_digest("Run `ls`.")
    assert claims["iat"] == int(NOW.timestamp())
    assert claims["exp"] == claims["iat"] + 3600
    assert len(claims["jti"]) >= 20
    assert body.startswith("Run `ls`.\n\n<!-- ticketproxy-signature: ")


def test_each_signature_gets_a_fresh_jti(team: Team) -> None:
    """Two signatures of the same text never share a jti, so neither replays the other."""
    first = _decode(_sign(team, text="same"), team.alice)[1]["jti"]
    second = _decode(_sign(team, text="same"), team.alice)[1]["jti"]
    assert first != second


def test_explicit_jti_and_ttl_are_used(team: Team) -> None:
    """A caller-chosen jti and lifetime appear in the token as given."""
    body = _sign(team, jti="fixed-id", ttl=timedelta(minutes=5))
    claims = _decode(body, team.alice)[1]
    assert claims["jti"] == "fixed-id"
    assert claims["exp"] - claims["iat"] == 300


def test_approval_signs_the_digest_of_the_answer_it_judges(team: Team) -> None:
    """An approval's sha256 is the judged answer's digest, not the note's."""
    judged = text_digest("the answer")
    body = sign_comment(
        "Reviewed, fine.",
        ticket=TICKET,
        key=team.bob,
        now=NOW,
        act=Act.APPROVE,
        judged_digest=judged,
    )
    claims = _decode(body, team.bob)[1]
    assert (claims["act"], claims["sha256"]) == ("approve", judged)


@pytest.mark.parametrize("act", [Act.APPROVE, Act.REJECT])
def test_judging_without_the_judged_digest_fails(team: Team, act: Act) -> None:
    """An approval or rejection must say which answer it judges."""
    with pytest.raises(SigningError, match="judged_digest"):
        sign_comment("ok", ticket=TICKET, key=team.bob, now=NOW, act=act)


def test_judging_with_a_digest_that_is_not_hex_sha256_fails(team: Team) -> None:
    """A judged digest must be 64 lower-case hex digits."""
    with pytest.raises(SigningError, match="judged_digest"):
        sign_comment(
            "ok", ticket=TICKET, key=team.bob, now=NOW, act=Act.APPROVE, judged_digest="ABC"
        )


def test_answer_with_a_judged_digest_fails(team: Team) -> None:
    """An answer signs its own text, so a judged digest means the caller is confused."""
    with pytest.raises(SigningError, match="an answer signs its own text"):
        _sign(team, judged_digest=text_digest("x"))


def test_signing_with_a_naive_clock_fails(team: Team) -> None:
    """A naive datetime would be read in local time, so it is refused."""
    with pytest.raises(SigningError, match="aware datetime"):
        _sign(team, now=datetime(2025, 1, 1))  # noqa: DTZ001 - the naive value under test


@pytest.mark.parametrize("ttl", [timedelta(0), timedelta(seconds=-1)])
def test_signing_with_a_non_positive_lifetime_fails(team: Team, ttl: timedelta) -> None:
    """A signature that is born expired is refused."""
    with pytest.raises(SigningError, match="ttl must be positive"):
        _sign(team, ttl=ttl)


def test_signing_without_a_ticket_fails(team: Team) -> None:
    """The audience must name a ticket."""
    with pytest.raises(SigningError, match="ticket must name"):
        _sign(team, ticket="")


def test_signing_with_an_empty_jti_fails(team: Team) -> None:
    """An empty jti could not be told apart from a missing one."""
    with pytest.raises(SigningError, match="jti must be a non-empty"):
        _sign(team, jti="")


def test_signing_text_that_quotes_a_trailer_fails(team: Team) -> None:
    """Text holding a trailer would give an ambiguous comment, so it is not signed."""
    quoted = _sign(team, text="earlier answer").replace("\n", "\n> ")
    with pytest.raises(SigningError, match="cannot sign this text"):
        _sign(team, text=f"> {quoted}\n\nAgreed.")


def test_signing_text_with_a_lone_surrogate_fails(team: Team) -> None:
    """Text that is not valid Unicode has no UTF-8 digest and is refused."""
    with pytest.raises(SigningError, match="not valid Unicode"):
        _sign(team, text="bad \ud800")


def _sign(team: Team, **change: Any) -> str:
    arguments: dict[str, Any] = {"ticket": TICKET, "key": team.alice, "now": NOW} | change
    text = arguments.pop("text", "answer")
    return sign_comment(text, **arguments)
