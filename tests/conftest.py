"""Shared fixtures: the sandbox GitHub and a whole running ticketproxy."""

import pytest
from hypothesis import settings

# Helpers check with plain ``assert``; have pytest explain their failures as it does in tests.
pytest.register_assert_rewrite("tests.helpers")

pytest_plugins = [
    "tests.helpers.embedded_github_fixtures",
    "tests.helpers.stack",
    "tests.helpers.agent_protocol",
    "tests.helpers.postgres",
    "tests.helpers.redis_server",
]

# Property tests check behaviour, not speed (benchmarks under bench/ do that): on a busy
# 2-core CI machine a single example can take longer than hypothesis's default 200 ms
# deadline, which would fail a correct test. No example database either: runs are
# reproducible from the printed seed and leave nothing behind in the working tree.
settings.register_profile("ticketproxy", deadline=None, database=None)
settings.load_profile("ticketproxy")
