"""Tests for ticketing.json_depth: nesting measured without recursion."""

from __future__ import annotations

import json
from typing import Any

from tests.helpers.autogpt_samples import SAMPLES
from ticketing.json_depth import MAX_JSON_DEPTH, json_depth, too_deep


def test_depth_counts_arrays_and_objects_the_outermost_included() -> None:
    """Scalars nest 0 levels, ``{"a": [1]}`` 2, and strings holding brackets count nothing."""
    assert json_depth(1) == 0
    assert json_depth("[[[") == 0
    assert json_depth({"a": [1]}) == 2
    assert json_depth([{}, [[]], {"a": {"b": "[[["}}]) == 3


def test_value_nested_200000_deep_is_measured_without_recursion() -> None:
    """A value far deeper than Python's recursion limit is measured, level by level."""
    value: Any = []
    for _ in range(200_000):
        value = [value]
    assert json_depth(value) == 200_001
    assert json_depth(value, stop_past=MAX_JSON_DEPTH) == MAX_JSON_DEPTH + 1


def test_limit_admits_its_own_depth_and_refuses_one_more() -> None:
    """``too_deep`` is strict: exactly MAX_JSON_DEPTH levels are allowed."""
    at_limit = json.loads("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)
    assert not too_deep(at_limit)
    assert too_deep([at_limit])


def test_recorded_autogpt_requests_stay_far_below_the_limit() -> None:
    """The limit leaves real agents' requests, tool schemas included, room to spare."""
    deepest = max(
        json_depth(json.loads(path.read_text())["body"])
        for path in SAMPLES.rglob("*.json")
        if "body" in json.loads(path.read_text())
    )
    assert 0 < deepest <= MAX_JSON_DEPTH // 4
