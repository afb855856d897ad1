"""Fixtures shared by the auth tests."""

from __future__ import annotations

import pytest

from tests.helpers.signing_team import Team, make_team


@pytest.fixture
def team() -> Team:
    """Return the test signers and their keyring."""
    return make_team()
