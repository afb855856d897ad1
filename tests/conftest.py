"""Shared fixtures: the sandbox GitHub and a whole running ticketproxy."""

pytest_plugins = ["tests.sandbox_fixtures", "tests.stack"]
