"""GitHub logins: which strings are logins, and when two logins name the same account."""

from __future__ import annotations

import re

# GitHub's own rule: ASCII letters, digits and single inner hyphens, at most 39 characters.
_LOGIN_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")


def is_valid_login(login: str) -> bool:
    """Return whether ``login`` is shaped like a GitHub login."""
    return _LOGIN_RE.fullmatch(login) is not None


def same_login(a: str, b: str) -> bool:
    """Return whether two strings name the same GitHub account.

    GitHub logins are case-insensitive, but only in ASCII: requiring both to be valid
    logins first keeps look-alikes out (Cyrillic ``а``, or the Kelvin sign that
    ``str.lower`` folds to ``k``).
    """
    return is_valid_login(a) and is_valid_login(b) and a.lower() == b.lower()
