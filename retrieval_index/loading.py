"""Open any saved index directory by the kind its ``retriever.json`` records."""

from __future__ import annotations

import os

from retrieval_index.bm25 import BM25Retriever
from retrieval_index.corpus import Corpus
from retrieval_index.index_dir import index_kind
from retrieval_index.types import Retriever


def open_retriever(index_dir: str | os.PathLike, corpus: Corpus | None = None) -> tuple[Retriever, str]:
    """The retriever saved in ``index_dir`` and its kind (``"bm25"`` or ``"dense"``)."""
    kind = index_kind(index_dir)
    if kind == "bm25":
        return BM25Retriever.load(index_dir, corpus), kind
    from retrieval_index.dense import DenseRetriever

    return DenseRetriever.load(index_dir, corpus), kind
