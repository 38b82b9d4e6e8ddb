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
from collections import OrderedDict
from collections.abc import Iterable, Sequence
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


class BM25Scorer:
    """Scores queries against a ``bm25s`` model's term-major (CSC) score matrix, with a query cache.

    Only the posting lists of the query's terms are read, so a query costs
    what its terms' lists hold, not the corpus size. Results of the last
    ``cache_size`` distinct ``(query, topk)`` pairs are kept: the copies of a
    GRPO group send the same queries again and again.
    """

    def __init__(self, model: Any, *, cache_size: int = 4096) -> None:
        matrix = model.scores
        # plain ndarray views of the memory maps: slicing a np.memmap costs a Python-level hook
        self.data, self.indices, self.indptr = (
            np.asarray(matrix[name]).view(np.ndarray) for name in ("data", "indices", "indptr")
        )
        self.num_docs = int(matrix["num_docs"])
        self.vocab: dict[str, int] = model.vocab_dict
        self.cache_size = cache_size
        self.cache_hits = 0
        self.cache_misses = 0
        self._cache: OrderedDict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._stem = stemmer()

    def term_ids(self, query: str) -> list[int]:
        """The index's term ids of a query's words (words the corpus never uses drop out)."""
        ids = []
        for word in analyze_words(query):
            found = self.vocab.get(self._stem(word))
            if found is not None:
                ids.append(found)
        return ids

    def scores(self, query: str) -> tuple[np.ndarray, list[np.ndarray]]:
        """The BM25 score of every document for ``query``, and the posting lists it read."""
        scores = np.zeros(self.num_docs, dtype=np.float32)
        postings = []
        for term in self.term_ids(query):
            start, end = self.indptr[term], self.indptr[term + 1]
            rows = self.indices[start:end]
            # a document appears once in a term's posting list, so the fancy-indexed add is exact
            scores[rows] += self.data[start:end]
            postings.append(rows)
        return scores, postings

    def search(self, query: str, topk: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows and scores of the ``topk`` best documents for ``query`` (positive scores only), best first."""
        key = (query, topk)
        cached = self._cache.get(key)
        if cached is not None:
            self.cache_hits += 1
            self._cache.move_to_end(key)
            return cached
        self.cache_misses += 1
        scores, postings = self.scores(query)
        if not postings:
            found = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32))
        else:
            if sum(len(rows) for rows in postings) * 8 < self.num_docs:
                # few touched rows: sorting them beats scanning the whole score array
                candidates = np.unique(np.concatenate(postings))
            else:
                # many: only rows at or above the k-th best score can be hits
                kth = (
                    np.partition(scores, self.num_docs - topk)[self.num_docs - topk]
                    if self.num_docs > topk
                    else 0
                )
                candidates = np.flatnonzero(scores >= kth) if kth > 0 else np.flatnonzero(scores > 0)
            candidates = candidates.astype(np.int64)
            found = top_k(candidates, scores[candidates], topk)
        for array in found:
            array.setflags(write=False)  # shared by every caller of the cache
        if self.cache_size:
            self._cache[key] = found
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return found


def index_texts(
    texts: Iterable[str], *, k1: float, b: float, total: int | None = None, show_progress: bool = False
) -> Any:
    """A ``bm25s`` model (method "lucene") over texts analysed like Lucene's English analyzer."""
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

    if show_progress:
        from tqdm.auto import tqdm

        texts = tqdm(texts, total=total, desc="BM25 tokenize", unit="passage")
    documents = [[term_id(word) for word in analyze_words(text)] for text in texts]
    model = bm25s.BM25(k1=k1, b=b, method="lucene")
    model.index(Tokenized(ids=documents, vocab=stem_to_id), show_progress=show_progress)
    return model


class BM25Retriever:
    """BM25 over a :class:`Corpus`; ``retrieve`` returns the top-k passages a query.

    Pickles as the paths of its index and corpus when it was saved (the usual
    case), so envs holding one travel to worker processes cheaply.
    """

    def __init__(self, model: Any, corpus: Corpus, directory: Path | None = None) -> None:
        self.model = model
        self.corpus = corpus
        self.directory = directory
        self.scorer = BM25Scorer(model)
        self.k1 = float(model.k1)
        self.b = float(model.b)

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
        model = index_texts(
            (passage.contents for passage in corpus),
            k1=k1,
            b=b,
            total=len(corpus),
            show_progress=show_progress,
        )
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

    def retrieve(self, queries: Sequence[str], topk: int) -> list[list[RetrievedPassage]]:
        topk = validate_topk(topk)
        results = []
        for query in queries:
            rows, scores = self.scorer.search(query, topk)
            results.append(
                [
                    RetrievedPassage(passage=self.corpus[row], score=score, index=row)
                    for row, score in zip(rows.tolist(), scores.tolist())
                ]
            )
        return results

    def __repr__(self) -> str:
        return f"BM25Retriever({str(self.directory) if self.directory else '<in memory>'}, k1={self.k1}, b={self.b})"
