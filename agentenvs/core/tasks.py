"""Task sources: fixed, disjoint splits of tasks, addressed by stable ids.

A task source answers three questions: how many tasks a split holds, which
task id sits at a position of a split, and what task an id names. Envs pick
``index = seed % size(split)`` on ``reset(seed=seed)``, so seeds ``0..size-1``
enumerate a split in order.

Generated families (Sokoban, ...) make splits disjoint by *content*: a
generated task belongs to the split its content hash selects
(:func:`split_of_content`), and a split only keeps candidates that land in
it. Two splits therefore never hold the same world, even when two different
generator seeds produce the same one.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Generic, TypeVar

from agentenvs.core.keys import canonical_bytes

Task = TypeVar("Task")

SPLITS: tuple[str, ...] = ("train", "valid", "test")


class UnknownTaskError(ValueError):
    """A task id that the task source does not know."""


class TaskSource(ABC, Generic[Task]):
    """Splits of tasks with stable ids. Subclasses must keep splits disjoint."""

    @property
    def splits(self) -> tuple[str, ...]:
        return SPLITS

    @abstractmethod
    def size(self, split: str) -> int:
        """Number of tasks in ``split``."""

    @abstractmethod
    def task_id(self, split: str, index: int) -> str:
        """Id of the task at ``index`` (0 <= index < size) of ``split``."""

    @abstractmethod
    def load(self, task_id: str) -> Task:
        """The task named ``task_id``; raises :class:`UnknownTaskError`."""

    @property
    def skipped(self) -> Mapping[str, int]:
        """What the loader left out of its data and why: ``{reason: count}`` (empty: nothing left out).

        Official loaders count what the original's own rules skip (WebShop's
        ASIN rules, ALFWorld's ``solvable`` flag, ...), so a user can see what
        a data folder holds beyond the tasks it yields.
        """
        return {}

    def check_split(self, split: str) -> None:
        if split not in self.splits:
            raise ValueError(f"unknown split {split!r}; choose one of {list(self.splits)}")

    def task_ids(self, split: str) -> list[str]:
        """Every id of ``split`` in order (materialises the split: mind its size)."""
        return [self.task_id(split, i) for i in range(self.size(split))]


class IdListTaskSource(TaskSource[Task]):
    """Splits held as in-memory lists of ids; subclasses implement ``load``.

    Raises ``ValueError`` if an id appears twice or in two splits.
    """

    def __init__(self, ids: Mapping[str, Sequence[str]]) -> None:
        self._ids: dict[str, list[str]] = {split: list(split_ids) for split, split_ids in ids.items()}
        seen: set[str] = set()
        for split_ids in self._ids.values():
            for task_id in split_ids:
                if task_id in seen:
                    raise ValueError(f"task id {task_id!r} appears twice")
                seen.add(task_id)

    @property
    def splits(self) -> tuple[str, ...]:
        return tuple(self._ids)

    def size(self, split: str) -> int:
        self.check_split(split)
        return len(self._ids[split])

    def task_id(self, split: str, index: int) -> str:
        self.check_split(split)
        return self._ids[split][index]


class ListTaskSource(IdListTaskSource[Task]):
    """Tasks held in memory: ``{split: [(task_id, task), ...]}``."""

    def __init__(self, splits: Mapping[str, Sequence[tuple[str, Task]]]) -> None:
        super().__init__({split: [task_id for task_id, _ in entries] for split, entries in splits.items()})
        self._tasks: dict[str, Task] = {
            task_id: task for entries in splits.values() for task_id, task in entries
        }

    def load(self, task_id: str) -> Task:
        try:
            return self._tasks[task_id]
        except KeyError:
            raise UnknownTaskError(f"unknown task id {task_id!r}") from None


def split_of_content(content: object, weights: Mapping[str, int]) -> str:
    """The split a piece of content belongs to, by its canonical hash.

    ``weights`` gives each split's share in integer parts, e.g.
    ``{"train": 8, "valid": 1, "test": 1}``; the mapping order fixes which
    bucket range each split owns.
    """
    total = sum(weights.values())
    if total <= 0:
        raise ValueError("split weights must sum to a positive number")
    digest = hashlib.blake2b(canonical_bytes(content), digest_size=8).digest()
    bucket = int.from_bytes(digest, "little") % total
    for split, weight in weights.items():
        if bucket < weight:
            return split
        bucket -= weight
    raise AssertionError("unreachable: bucket beyond the weights")
