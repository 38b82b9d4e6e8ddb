"""The records every retriever speaks in: a corpus passage, a hit, and the retriever protocol."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Passage:
    """One corpus entry, split the way FlashRAG/Search-R1 store it: ``contents = '"title"\\ntext'``."""

    id: str
    title: str
    text: str

    @property
    def contents(self) -> str:
        return f'"{self.title}"\n{self.text}'

    @classmethod
    def from_contents(cls, id: str, contents: str) -> Passage:
        """Split a ``contents`` string: the first line is the title (one pair of quotes around it removed)."""
        title, _, text = contents.partition("\n")
        if len(title) >= 2 and title[0] == '"' and title[-1] == '"':
            title = title[1:-1]
        return cls(id=id, title=title, text=text)


@dataclass(frozen=True)
class RetrievedPassage:
    """One hit: the passage, its score (higher is better) and its row in the corpus."""

    passage: Passage
    score: float
    index: int


@runtime_checkable
class Retriever(Protocol):
    def retrieve(self, queries: Sequence[str], topk: int) -> list[list[RetrievedPassage]]:
        """The ``topk`` best passages for each query, best first (fewer when fewer match)."""
        ...
