"""Sparse retrieval: BM25 with ``bm25s`` over Lucene's English analysis, memory-mapped on disk.

The defaults are Search-R1's: pyserini's Lucene BM25 with k1 = 0.9, b = 0.4
over each passage's ``contents`` (``'"title"\\ntext'``). Scores follow
Lucene's formula (``bm25s`` method ``"lucene"``): idf = ln(1 + (N − df + 0.5)
/ (df + 0.5)), term part tf / (tf + k1 · (1 − b + b · len / avg len)); a
query word repeated counts again, as in Anserini's bag-of-words queries.
Only passages sharing a word with the query are hits.

An index directory holds ``bm25s``'s files plus ``retriever.json`` (kind,
parameters, the corpus store it was built from); :meth:`BM25Retriever.load`
maps the score matrix read-only, so processes share its pages.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_index.analysis import ANALYZER_VERSION, analyze_words, stemmer
from retrieval_index.corpus import Corpus
from retrieval_index.ranking import top_k
from retrieval_index.types import RetrievedPassage

SEARCH_R1_K1 = 0.9
SEARCH_R1_B = 0.4
INDEX_VERSION = 1
META = "retriever.json"


def validate_topk(topk: int) -> int:
    if isinstance(topk, bool) or not isinstance(topk, (int, np.integer)) or topk < 1:
        raise ValueError(f"topk must be a positive integer, got {topk!r}")
    return int(topk)


def read_meta(index_dir: str | os.PathLike, kind: str) -> dict[str, Any]:
    """The ``retriever.json`` of an index directory, checked to be of ``kind``."""
    path = Path(index_dir) / META
    if not path.exists():
        raise FileNotFoundError(f"{index_dir} is not a retrieval index (no {META}; was the build cut short?)")
    meta = json.loads(path.read_text())
    if meta.get("kind") != kind:
        raise ValueError(f"{index_dir} holds a {meta.get('kind')!r} index, not {kind!r}")
    return meta


def open_corpus_of(meta: dict[str, Any], corpus: Corpus | None, num_docs: int) -> Corpus:
    corpus = corpus if corpus is not None else Corpus.open(meta["corpus"])
    if len(corpus) != num_docs:
        raise ValueError(f"the index covers {num_docs} passages but the corpus {corpus} holds {len(corpus)}")
    return corpus


class BM25Retriever:
    """BM25 over a :class:`Corpus`; ``retrieve`` returns the top-k passages a query.

    Pickles as the paths of its index and corpus when it was saved (the usual
    case), so envs holding one travel to worker processes cheaply.
    """

    def __init__(self, model: Any, corpus: Corpus, directory: Path | None = None) -> None:
        self.model = model
        self.corpus = corpus
        self.directory = directory
        matrix = model.scores
        # plain ndarray views of the memory maps: slicing a np.memmap costs a Python-level hook
        self._data, self._indices, self._indptr = (
            np.asarray(matrix[name]).view(np.ndarray) for name in ("data", "indices", "indptr")
        )
        self.num_docs = int(matrix["num_docs"])
        self.k1 = float(model.k1)
        self.b = float(model.b)
        self._vocab: dict[str, int] = model.vocab_dict
        self._stem = stemmer()

    @classmethod
    def build(
        cls,
        corpus: Corpus,
        out_dir: str | os.PathLike | None = None,
        *,
        k1: float = SEARCH_R1_K1,
        b: float = SEARCH_R1_B,
        show_progress: bool = False,
    ) -> BM25Retriever:
        """Index every passage of ``corpus``; saved to ``out_dir`` (and reloaded memory-mapped) when given."""
        import bm25s
        from bm25s.tokenization import Tokenized

        stem = stemmer()
        word_to_id: dict[str, int] = {}
        stem_to_id: dict[str, int] = {}

        def term_id(word: str) -> int:
            found = word_to_id.get(word)
            if found is None:
                found = word_to_id[word] = stem_to_id.setdefault(stem(word), len(stem_to_id))
            return found

        passages = corpus
        if show_progress:
            from tqdm.auto import tqdm

            passages = tqdm(corpus, total=len(corpus), desc="BM25 tokenize", unit="passage")
        documents = [[term_id(word) for word in analyze_words(passage.contents)] for passage in passages]
        model = bm25s.BM25(k1=k1, b=b, method="lucene")
        model.index(Tokenized(ids=documents, vocab=stem_to_id), show_progress=show_progress)
        del documents
        if out_dir is None:
            return cls(model, corpus)
        directory = Path(out_dir)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / META).unlink(missing_ok=True)
        model.save(str(directory), show_progress=False)
        meta = {
            "kind": "bm25",
            "version": INDEX_VERSION,
            "analyzer": ANALYZER_VERSION,
            "k1": k1,
            "b": b,
            "passages": len(corpus),
            "corpus": str(corpus.directory),
        }
        (directory / META).write_text(json.dumps(meta, indent=1) + "\n")
        return cls.load(directory, corpus)

    @classmethod
    def load(cls, index_dir: str | os.PathLike, corpus: Corpus | None = None) -> BM25Retriever:
        """Open a saved index memory-mapped; ``corpus`` defaults to the store it was built from."""
        import bm25s

        meta = read_meta(index_dir, "bm25")
        if meta.get("version") != INDEX_VERSION or meta.get("analyzer") != ANALYZER_VERSION:
            raise ValueError(f"{index_dir} was built by another version; rebuild it")
        model = bm25s.BM25.load(str(index_dir), mmap=True, show_progress=False)
        return cls(model, open_corpus_of(meta, corpus, int(meta["passages"])), Path(index_dir).resolve())

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        if self.directory is not None:
            return (BM25Retriever.load, (str(self.directory), self.corpus))
        return (BM25Retriever, (self.model, self.corpus))

    def term_ids(self, query: str) -> list[int]:
        """The index's term ids of a query's words (words the corpus never uses drop out)."""
        ids = []
        for word in analyze_words(query):
            found = self._vocab.get(self._stem(word))
            if found is not None:
                ids.append(found)
        return ids

    def search(self, query: str, topk: int) -> tuple[np.ndarray, np.ndarray]:
        """Corpus rows and scores of the ``topk`` best passages for ``query``, best first."""
        scores = np.zeros(self.num_docs, dtype=np.float32)
        postings = []
        for term in self.term_ids(query):
            start, end = self._indptr[term], self._indptr[term + 1]
            rows = self._indices[start:end]
            # a passage appears once per term's posting list, so the fancy-indexed add is exact
            scores[rows] += self._data[start:end]
            postings.append(rows)
        if not postings:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        touched = sum(len(rows) for rows in postings)
        if touched * 8 < self.num_docs:
            candidates = np.unique(np.concatenate(postings))
        else:
            candidates = np.flatnonzero(scores)
        candidates = candidates.astype(np.int64)
        return top_k(candidates, scores[candidates], topk)

    def retrieve(self, queries: Sequence[str], topk: int) -> list[list[RetrievedPassage]]:
        topk = validate_topk(topk)
        results = []
        for query in queries:
            rows, scores = self.search(query, topk)
            results.append(
                [
                    RetrievedPassage(passage=self.corpus[row], score=score, index=row)
                    for row, score in zip(rows.tolist(), scores.tolist())
                ]
            )
        return results

    def __repr__(self) -> str:
        return f"BM25Retriever({str(self.directory) if self.directory else '<in memory>'}, k1={self.k1}, b={self.b})"
