"""The PostgreSQL tests: skipped without PostgreSQL, failed for it under CI=true."""

from __future__ import annotations

import pytest

from tests.helpers.postgres import require_postgres_bin


def test_missing_postgresql_fails_the_tests_under_ci() -> None:
    """Under CI=true a missing initdb is a failure saying how to install it, never a skip."""
    with pytest.raises(pytest.fail.Exception, match=r"apt-get install postgresql"):
        require_postgres_bin(None, environ={"CI": "true"})


def test_missing_postgresql_skips_the_tests_locally_saying_how_to_install_it() -> None:
    """Outside CI a missing initdb skips the PostgreSQL tests with the install command."""
    with pytest.raises(pytest.skip.Exception, match=r"apt-get install postgresql"):
        require_postgres_bin(None, environ={})
