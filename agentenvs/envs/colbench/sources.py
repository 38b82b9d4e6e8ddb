"""What every ColBench task source shares: hidden facts, the split draw, built-in ids, the official files.

Both task kinds (:mod:`agentenvs.envs.colbench.backend.tasks`, functions, and
:mod:`agentenvs.envs.colbench.frontend.tasks`, web pages) and the shared dialogue
and collaborators build on this module; it imports only ``agentenvs.core``.

- :class:`Fact`: one hidden detail a question can ask about;
  :class:`CollaborationTask`: what the dialogue and the collaborators read
  of a task (both task kinds have it);
- :func:`draw_in_split`: splits disjoint by content. Candidate ``attempt``
  of ``(prefix, split, index)`` is drawn with ``derive_rng(prefix, split,
  index, attempt)``; the first whose content hash (``split_of_content``,
  weights :data:`SPLIT_WEIGHTS`) selects ``split`` is the task;
- :class:`GeneratedSource`: built-in tasks of :data:`SIZES`, id
  ``{prefix}-{split}-{index:05d}``;
- :func:`official_files`: where sweet_rl's published ``{folder}/{train,test}.jsonl``
  lie under a data directory; :class:`OfficialSource`: their tasks, line by
  line.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np

from agentenvs.core.keys import derive_rng
from agentenvs.core.tasks import IdListTaskSource, TaskSource, UnknownTaskError, split_of_content

SIZES = {"train": 10_000, "valid": 1_000, "test": 1_000}
SPLIT_WEIGHTS = {"train": 10, "valid": 1, "test": 1}
T = TypeVar("T")


@dataclass(frozen=True)
class Fact:
    """One hidden detail: the question words that select it, the expert's question, the answer."""

    key: str
    keywords: tuple[str, ...]
    question: str
    answer: str


class CollaborationTask(Protocol):
    """A task as the dialogue and the collaborators read it: the request shown, the hidden reference and
    facts (none for an official task), and the usual guess of an agent that asks nothing."""

    @property
    def task_id(self) -> str: ...
    @property
    def request(self) -> str: ...
    @property
    def reference(self) -> str: ...
    @property
    def facts(self) -> tuple[Fact, ...]: ...
    @property
    def default_answer(self) -> str: ...


def pick(rng: np.random.Generator, options: tuple | list) -> Any:
    """One of ``options``, uniformly by ``rng``, as a plain Python value (not a numpy scalar)."""
    value = options[int(rng.integers(len(options)))]
    return value.item() if isinstance(value, np.generic) else value


def draw_in_split(prefix: str, split: str, index: int, draw: Callable[[np.random.Generator], Any]) -> tuple:
    """The first candidate ``draw(rng)`` (attempts 0, 1, ... of ``(prefix, split, index)``) whose
    content hash lands in ``split``, with the RNG that drew it: splits disjoint by content."""
    for attempt in range(10_000):
        rng = derive_rng(prefix, split, index, attempt)
        content = draw(rng)
        if split_of_content(content, SPLIT_WEIGHTS) == split:
            return rng, content
    raise RuntimeError("no candidate landed in the split")  # probability ~ (11/12)^10000


class GeneratedSource(TaskSource[T]):
    """Built-in tasks of fixed split sizes (:data:`SIZES`), id ``{prefix}-{split}-{index:05d}``.

    Subclasses name their ``prefix`` and ``generate(split, index)`` the task.
    """

    prefix: ClassVar[str]

    @abstractmethod
    def generate(self, split: str, index: int) -> T:
        """The task at ``index`` of ``split``."""

    def size(self, split: str) -> int:
        self.check_split(split)
        return SIZES[split]

    def task_id(self, split: str, index: int) -> str:
        if not 0 <= index < self.size(split):
            raise IndexError(f"index {index} outside split {split!r}")
        return f"{self.prefix}-{split}-{index:05d}"

    def load(self, task_id: str) -> T:
        head, _, rest = task_id.rpartition("-")
        split = head[len(self.prefix) + 1 :] if head.startswith(self.prefix + "-") else ""
        if (
            split in SIZES
            and rest.isdigit()
            and int(rest) < SIZES[split]
            and task_id == self.task_id(split, int(rest))
        ):
            return self.generate(split, int(rest))
        raise UnknownTaskError(f"unknown task id {task_id!r}")


def official_files(data_dir: str | Path, folder: str) -> dict[str, Path]:
    """``{split: path}`` of ColBench's files under ``data_dir`` (in ``folder`` or directly there)."""
    root = Path(data_dir)
    found = {}
    for split in ("train", "test"):
        for candidate in (root / folder / f"{split}.jsonl", root / f"{split}.jsonl"):
            if candidate.is_file():
                found[split] = candidate
                break
    if not found:
        raise FileNotFoundError(f"no {folder}/train.jsonl or test.jsonl under {root}")
    return found


class OfficialSource(IdListTaskSource[T]):
    """sweet_rl's published tasks of one kind, read from ``data_dir`` (:func:`official_files` of ``folder``).

    Line n (from 0) of split s's file, unless blank, is the task
    ``{prefix}-official-{s}-{n:05d}``, made by :meth:`parse` from its JSON
    object. A line that is not JSON, or not an object with the fields
    :meth:`parse` reads, raises ``ValueError`` naming the file and line.
    """

    prefix: ClassVar[str]
    folder: ClassVar[str]
    kind: ClassVar[str]  # "backend" or "frontend", for the error message

    def __init__(self, data_dir: str | Path) -> None:
        self.files = official_files(data_dir, self.folder)
        self._tasks: dict[str, T] = {}
        ids: dict[str, list[str]] = {}
        for split, path in self.files.items():
            ids[split] = []
            with path.open(encoding="utf-8") as handle:
                for number, line in enumerate(handle):
                    if not line.strip():
                        continue
                    task_id = f"{self.prefix}-official-{split}-{number:05d}"
                    try:
                        self._tasks[task_id] = self.parse(json.loads(line), task_id)
                    except (json.JSONDecodeError, KeyError, AttributeError, TypeError) as exc:
                        raise ValueError(
                            f"{path}:{number + 1}: not a ColBench {self.kind} task ({exc!r})"
                        ) from None
                    ids[split].append(task_id)
        super().__init__(ids)

    @abstractmethod
    def parse(self, record: dict, task_id: str) -> T:
        """The task of one line's JSON object (``KeyError``/``TypeError`` where a field is missing)."""

    def load(self, task_id: str) -> T:
        try:
            return self._tasks[task_id]
        except KeyError:
            raise UnknownTaskError(f"unknown task id {task_id!r}") from None
