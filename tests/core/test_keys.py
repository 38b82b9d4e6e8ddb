"""Stable keys: canonical, order-insensitive where order carries no meaning, and
identical across processes with different PYTHONHASHSEED values."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from agentenvs.core import canonical_bytes, derive_rng, derive_seed, stable_digest, text_key

SAMPLE = {
    "goal": "craft oak planks",
    "inventory": {"oak log": 2, "stick": 1},
    "opened": frozenset({"drawer 1", "fridge 1", "cabinet 3"}),
    "boxes": [(1, 2), (3, 4)],
    "grid": np.arange(12, dtype=np.uint8).reshape(3, 4),
    "flags": (True, False, None, 0.25, -0.0),
}

PROBE = (
    "import json, numpy as np\n"
    "from agentenvs.core import stable_digest, derive_seed, text_key\n"
    "sample = {'goal': 'craft oak planks', 'inventory': {'oak log': 2, 'stick': 1},"
    " 'opened': frozenset({'drawer 1', 'fridge 1', 'cabinet 3'}), 'boxes': [(1, 2), (3, 4)],"
    " 'grid': np.arange(12, dtype=np.uint8).reshape(3, 4), 'flags': (True, False, None, 0.25, -0.0)}\n"
    "print(json.dumps([stable_digest(sample), derive_seed('sokoban', 'test', 7), text_key(' a\\n b ')]))\n"
)


def run_probe(hash_seed: str) -> list:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_keys_identical_across_processes_and_hash_seeds():
    here = [stable_digest(SAMPLE), derive_seed("sokoban", "test", 7), text_key(" a\n b ")]
    assert run_probe("1") == here
    assert run_probe("12345") == here


def test_unordered_containers_ignore_order_and_ordered_ones_do_not():
    assert stable_digest({"a": 1, "b": 2}) == stable_digest({"b": 2, "a": 1})
    assert stable_digest({3, 1, 2}) == stable_digest({2, 3, 1})
    assert stable_digest([1, 2]) != stable_digest([2, 1])


def test_types_are_distinguished():
    values = [
        1,
        1.0,
        "1",
        b"1",
        True,
        [1],
        (1,),
        {1},
        None,
        np.array([1], dtype=np.int64),
        np.array([1], dtype=np.int32),
        np.array([[1]], dtype=np.int64),
    ]
    encodings = {canonical_bytes(v) for v in values}
    assert len(encodings) == len(values) - 1  # list and tuple are both sequences
    assert canonical_bytes([1]) == canonical_bytes((1,))


def test_no_ambiguous_concatenation():
    assert stable_digest(["ab", "c"]) != stable_digest(["a", "bc"])
    assert stable_digest({"a": "bc"}) != stable_digest({"ab": "c"})


def test_numpy_scalars_match_python_values():
    assert stable_digest(np.int64(5)) == stable_digest(5)
    assert stable_digest(0.0) == stable_digest(-0.0)


def test_unsupported_types_are_refused():
    with pytest.raises(TypeError):
        canonical_bytes(object())


def test_text_key_normalizes_whitespace_only():
    assert text_key("a  b\n\tc ") == text_key("a b c")
    assert text_key("a b") != text_key("A b")


def test_derived_rng_is_a_pure_function_of_its_parts():
    first = derive_rng("x", 1).integers(0, 1 << 30, size=5)
    again = derive_rng("x", 1).integers(0, 1 << 30, size=5)
    other = derive_rng("x", 2).integers(0, 1 << 30, size=5)
    assert (first == again).all() and not (first == other).all()
