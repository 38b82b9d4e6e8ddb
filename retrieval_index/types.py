"""The records every retriever speaks in: a corpus passage, a hit, and the retriever protocol."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

# Search-R1's BM25 rows: what its server makes of a Lucene document's stored contents
BM25_ROW_FIELDS = frozenset({"title", "text", "contents"})


@dataclass(frozen=True)
class Passage:
    """One corpus entry, split the way FlashRAG/Search-R1 store it: ``contents = '"title"\\ntext'``.

    ``extra`` keeps the rest of the corpus file's row, as compact JSON text
    ("" when the row holds nothing else): fields besides ``id`` and
    ``contents`` (or ``title`` and ``text``), ``id`` itself where the file's
    id is not a string, and ``contents`` where it is not ``'"title"\\ntext'``
    (a title without quotes). :meth:`row` puts the row back together.
    """

    id: str
    title: str
    text: str
    extra: str = ""

    @property
    def contents(self) -> str:
        return f'"{self.title}"\n{self.text}'

    def row(self) -> dict[str, Any]:
        """The corpus row ``{"id", "contents", ...its other fields}``, as Search-R1's dense server gives
        it."""
        row: dict[str, Any] = {"id": self.id, "contents": self.contents}
        if self.extra:
            row.update(json.loads(self.extra))
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Passage:
        """A passage from a corpus row: ``{"id", "contents", ...}`` or ``{"id", "title", "text", ...}``.

        Raises ``KeyError`` or ``TypeError`` for a row that is neither.
        """
        if "contents" in row:
            contents = row["contents"]
            if not isinstance(contents, str):
                raise TypeError(f"contents must be a string, not {type(contents).__name__}")
            passage = cls.from_contents(str(row["id"]), contents)
            # contents the split does not give back exactly (no quotes around the title) stay in the row as is
            known = {"contents"} if passage.contents == contents else set()
        else:
            title, text = row["title"], row["text"]
            if not isinstance(title, str) or not isinstance(text, str):
                raise TypeError("title and text must be strings")
            passage = cls(id=str(row["id"]), title=title, text=text)
            known = {"title", "text"}
        if isinstance(row["id"], str):
            known.add("id")
        extra = {name: value for name, value in row.items() if name not in known}
        if not extra:
            return passage
        return replace(passage, extra=json.dumps(extra, separators=(",", ":")))

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
