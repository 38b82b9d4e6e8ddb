"""Task sources: disjoint splits, stable lookup, content-hash split assignment."""

from collections import Counter

import pytest

from agentenvs.core import ListTaskSource, UnknownTaskError, split_of_content


def test_list_source_lookup_and_errors():
    source = ListTaskSource({"train": [("t0", "a"), ("t1", "b")], "test": [("x0", "c")]})
    assert source.size("train") == 2 and source.task_id("test", 0) == "x0"
    assert source.load("t1") == "b"
    assert source.task_ids("train") == ["t0", "t1"]
    with pytest.raises(UnknownTaskError):
        source.load("nope")
    with pytest.raises(ValueError, match="unknown split"):
        source.size("valid")


def test_list_source_refuses_shared_ids():
    with pytest.raises(ValueError, match="appears twice"):
        ListTaskSource({"train": [("t0", 1)], "test": [("t0", 2)]})


def test_split_of_content_is_stable_and_follows_weights():
    weights = {"train": 8, "valid": 1, "test": 1}
    counts = Counter(split_of_content(("room", i), weights) for i in range(20_000))
    assert set(counts) == {"train", "valid", "test"}
    assert abs(counts["test"] / 20_000 - 0.1) < 0.01
    assert split_of_content({"layout": [1, 2]}, weights) == split_of_content({"layout": [1, 2]}, weights)
    with pytest.raises(ValueError):
        split_of_content("x", {"train": 0})
