"""Tests for the signed ``delegate`` act: its fixed claim schema, its role, its addressees."""

from __future__ import annotations

from typing import Any

import jwt
import pytest

from auth.comment import render_signed_comment, text_digest
from auth.delegation import MAX_ASK_CHARS, MAX_QUESTIONS, Delegation, render_delegations
from auth.errors import SigningError
from auth.keys import SigningKey
from auth.roles import Act
from auth.sign import sign_comment
from auth.verify import Accepted, Rejected, RejectReason, Verdict, verify_comment
from tests.helpers.signing_team import NOW, TICKET, make_team

QUESTIONS = (
    Delegation("Is the index on orders.created_at still used?", to="carol"),
    Delegation("Does the new role leak secrets?", to="mallory"),
    Delegation("Anything else to know?"),
)
TEXT = render_delegations(QUESTIONS)
DELEGATING = frozenset({Act.ANSWER, Act.DELEGATE})


def _delegate(
    questions: tuple[Delegation, ...] = QUESTIONS, *, key: SigningKey | None = None, **kw: Any
) -> str:
    options: dict[str, Any] = {"ticket": TICKET, "now": NOW} | kw
    return sign_comment(
        render_delegations(questions),
        key=key or make_team().alice,
        act=Act.DELEGATE,
        delegations=questions,
        **options,
    )


def _unused(jti: str) -> bool:
    return False


def _verify(body: str, *, author: str = "alice", **options: Any) -> Verdict:
    defaults: dict[str, Any] = {"acts": DELEGATING, "ticket": TICKET, "is_jti_used": _unused}
    options = defaults | options
    return verify_comment(
        body, author_login=author, author_id=None, keyring=make_team().keyring, now=NOW, **options
    )


def _forged(delegate: object) -> str:
    """Return alice's validly signed delegation whose ``delegate`` claim is ``delegate``."""
    alice = make_team().alice
    claims = {
        "sub": "alice",
        "aud": TICKET,
        "act": "delegate",
        "sha256": text_digest(TEXT),
        "iat": int(NOW.timestamp()),
        "exp": int(NOW.timestamp()) + 600,
        "jti": "forged-delegation",
        "delegate": delegate,
    }
    token = jwt.encode(claims, alice.private_key, algorithm=alice.alg, headers={"kid": alice.kid})
    return render_signed_comment(TEXT, token)


def test_an_editors_delegation_is_accepted_with_its_sub_questions() -> None:
    """Alice's signed delegation verifies, carrying each sub-question and its addressee."""
    verdict = _verify(_delegate())
    assert isinstance(verdict, Accepted)
    assert verdict.act is Act.DELEGATE
    assert verdict.delegations == QUESTIONS
    assert verdict.digest == text_digest(TEXT)


def test_delegate_by_a_reviewer_only_key_is_refused() -> None:
    """Bob, a reviewer only, cannot split a ticket: delegating needs the editor role."""
    verdict = _verify(_delegate(key=make_team().bob), author="bob")
    assert isinstance(verdict, Rejected)
    assert verdict.reason is RejectReason.ROLE_MISSING


def test_replayed_delegate_is_refused() -> None:
    """A delegation whose jti was spent is refused as replayed."""
    verdict = _verify(_delegate(jti="spent"), is_jti_used=lambda jti: jti == "spent")
    assert isinstance(verdict, Rejected)
    assert verdict.reason is RejectReason.REPLAYED


def test_delegate_for_another_ticket_is_refused() -> None:
    """A delegation signed for one ticket does not split another."""
    verdict = _verify(_delegate(ticket="acme/agents#13"))
    assert isinstance(verdict, Rejected)
    assert verdict.reason is RejectReason.WRONG_TICKET


def test_delegate_to_a_login_not_in_the_keyring_is_refused_and_named() -> None:
    """An addressee with no key could never sign an answer: refused, naming the login."""
    questions = (Delegation("Who owns this?", to="oscar"), Delegation("And this?", to="carol"))
    verdict = _verify(_delegate(questions))
    assert isinstance(verdict, Rejected)
    assert verdict.reason is RejectReason.UNKNOWN_ADDRESSEE
    assert "oscar" in verdict.detail
    assert "carol" not in verdict.detail


def test_delegate_where_only_answers_are_taken_is_refused_as_the_wrong_act() -> None:
    """A delegation on a ticket under review (judgements only) is the wrong act."""
    verdict = _verify(_delegate(), acts=frozenset({Act.APPROVE, Act.REJECT}))
    assert isinstance(verdict, Rejected)
    assert verdict.reason is RejectReason.WRONG_ACT


def test_delegation_whose_shown_text_was_edited_is_refused() -> None:
    """The text the ticket shows is signed too: editing a sub-question's wording is caught."""
    body = _delegate().replace("still used", "dropped")
    verdict = _verify(body)
    assert isinstance(verdict, Rejected)
    assert verdict.reason is RejectReason.TEXT_MISMATCH


@pytest.mark.parametrize(
    "claim",
    [
        [],
        None,
        "ask carol",
        [{"ask": "x", "to": "carol", "cc": "bob"}],
        [{"question": "x"}],
        [{"ask": "   "}],
        [{"ask": 7}],
        [{"ask": "x", "to": "not a login!"}],
        [{"ask": "x", "to": None}],
        [{"ask": "x" * (MAX_ASK_CHARS + 1)}],
        [{"ask": f"q{i}"} for i in range(MAX_QUESTIONS + 1)],
    ],
)
def test_delegate_claim_off_its_schema_is_malformed(claim: object) -> None:
    """A delegation claim with another shape, member, type or size is refused as malformed."""
    verdict = _verify(_forged(claim))
    assert isinstance(verdict, Rejected)
    assert verdict.reason is RejectReason.MALFORMED


def test_delegate_claim_on_an_answer_is_malformed() -> None:
    """Only a delegate act carries sub-questions; an answer smuggling some is malformed."""
    alice = make_team().alice
    body = sign_comment("An answer.", ticket=TICKET, key=alice, now=NOW)
    token = body.rsplit("signature: ", 1)[1].removesuffix(" -->")
    payload = jwt.decode(token, options={"verify_signature": False})
    payload["delegate"] = [{"ask": "x"}]
    forged = jwt.encode(payload, alice.private_key, algorithm=alice.alg, headers={"kid": alice.kid})
    verdict = _verify(render_signed_comment("An answer.", forged))
    assert isinstance(verdict, Rejected)
    assert verdict.reason is RejectReason.MALFORMED


def test_signing_a_delegation_without_sub_questions_is_refused() -> None:
    """The signer is told at once that a delegation needs sub-questions, and only it."""
    alice = make_team().alice
    with pytest.raises(SigningError, match="sub-questions"):
        sign_comment("x", ticket=TICKET, key=alice, now=NOW, act=Act.DELEGATE)
    with pytest.raises(SigningError, match="sub-questions"):
        sign_comment("x", ticket=TICKET, key=alice, now=NOW, delegations=QUESTIONS)
    with pytest.raises(SigningError, match="at most"):
        _delegate((Delegation("x" * (MAX_ASK_CHARS + 1)),))
