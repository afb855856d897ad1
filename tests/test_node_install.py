"""The Node clients' tests: skipped without their packages, failed for it under CI=true."""

from __future__ import annotations

import pytest

from tests.helpers.node_clients import require_node_packages


def test_missing_node_package_fails_the_test_under_ci() -> None:
    """Under CI=true a missing npm package is a failure naming it, never a silent pass."""
    with pytest.raises(pytest.fail.Exception, match=r"no-such-package.*make install"):
        require_node_packages("no-such-package", environ={"CI": "true"})


def test_missing_node_package_skips_the_test_outside_ci() -> None:
    """Outside CI a missing npm package skips the test, saying to run make install."""
    with pytest.raises(pytest.skip.Exception, match="make install"):
        require_node_packages("no-such-package", environ={})


def test_installed_node_packages_give_the_node_executable() -> None:
    """With the packages that package.json pins installed, the node executable is returned."""
    node = require_node_packages("openai", "ai", "@ai-sdk/openai", "zod", "@anthropic-ai/sdk")
    assert node.endswith("node")
