"""The lock's tasks: every three-digit code but 000, shuffled once and cut into disjoint splits."""

from __future__ import annotations

import itertools

from agentenvs.core import ListTaskSource, derive_rng

DIALS = 3
SPLIT_SIZES = {"train": 799, "valid": 100, "test": 100}


def lock_tasks() -> ListTaskSource[tuple[int, ...]]:
    """``{split: [(task_id, code), ...]}``: the 999 codes (000 opens at once) in a fixed order
    drawn from :func:`agentenvs.core.derive_rng`, so every machine gets the same splits."""
    codes = [code for code in itertools.product(range(10), repeat=DIALS) if any(code)]
    order = derive_rng("lock-tasks", DIALS).permutation(len(codes))
    splits, start = {}, 0
    for split, size in SPLIT_SIZES.items():
        chosen = [codes[i] for i in order[start : start + size]]
        splits[split] = [(f"lock-{DIALS}/{split}/{index:03d}", code) for index, code in enumerate(chosen)]
        start += size
    return ListTaskSource(splits)
