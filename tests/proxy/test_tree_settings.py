"""TICKETPROXY_TREE_AFTER_STEPS: after how many steps a run's later steps open as child issues."""

from __future__ import annotations

import pytest

from proxy.errors import ConfigError
from proxy.settings import Settings


def test_trees_start_after_fifty_steps_unless_told() -> None:
    """Unset (or empty), a run's steps past 50 open as child issues."""
    assert Settings.from_env({}).tree_after_steps == 50
    assert Settings.from_env({"TICKETPROXY_TREE_AFTER_STEPS": ""}).tree_after_steps == 50


@pytest.mark.parametrize(("raw", "after"), [("10", 10), ("0", 0), ("always", 0), (" Always ", 0)])
def test_tree_threshold_is_read_as_steps_or_always(raw: str, after: int) -> None:
    """A whole number of steps is the threshold; ``always`` (or 0) opens every later step apart."""
    assert Settings.from_env({"TICKETPROXY_TREE_AFTER_STEPS": raw}).tree_after_steps == after


@pytest.mark.parametrize("raw", ["-1", "ten", "2.5", "²", "never"])
def test_malformed_tree_threshold_is_refused_naming_the_variable(raw: str) -> None:
    """A threshold that is no whole number of steps is a ConfigError naming the variable."""
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"TICKETPROXY_TREE_AFTER_STEPS": raw})
    assert "TICKETPROXY_TREE_AFTER_STEPS" in str(caught.value)
