"""Tests for auth.logins: which strings are GitHub logins, and which name one account."""

from __future__ import annotations

import pytest

from auth.logins import is_valid_login, same_login


@pytest.mark.parametrize("login", ["a", "alice", "Alice-Smith", "a1-b2-c3", "x" * 39])
def test_github_shaped_logins_are_valid(login: str) -> None:
    """Letters, digits and single inner hyphens up to 39 characters make a login."""
    assert is_valid_login(login)


@pytest.mark.parametrize(
    "login", ["", "-a", "a-", "a--b", "a_b", "a.b", "x" * 40, "аlice", "alice\n", "ａlice"]
)
def test_other_strings_are_not_logins(login: str) -> None:
    """Anything GitHub would not accept as a login, look-alikes included, is refused."""
    assert not is_valid_login(login)


def test_logins_that_differ_only_in_ascii_case_are_the_same_account() -> None:
    """GitHub treats Alice and alice as one account."""
    assert same_login("Alice", "aLICE")


def test_cyrillic_lookalike_is_another_account() -> None:
    """A Cyrillic а in place of a Latin a is not the same login."""
    assert not same_login("аlice", "alice")


def test_kelvin_sign_that_lowercases_to_k_is_another_account() -> None:
    """U+212A KELVIN SIGN lower-cases to k, yet is not the login kate."""
    assert "\u212aate".lower() == "kate"
    assert not same_login("\u212aate", "kate")


def test_a_login_is_not_the_same_as_an_invalid_copy_of_itself() -> None:
    """Two equal strings that are not logins do not match each other."""
    assert not same_login("a b", "a b")
