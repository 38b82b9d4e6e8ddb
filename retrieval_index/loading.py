"""Open any saved index directory by the kind its ``retriever.json`` records."""

from __future__ import annotations

import json
import os
from pathlib import Path

from retrieval_index.bm25 import BM25Retriever
from retrieval_index.corpus import Corpus
from retrieval_index.index_paths import META
from retrieval_index.types import Retriever

KINDS = ("bm25", "dense")


def index_kind(index_dir: str | os.PathLike) -> str:
    """The kind (``"bm25"`` or ``"dense"``) of the index saved in ``index_dir``, without opening it."""
    path = Path(index_dir) / META
    if not path.exists():
        raise FileNotFoundError(f"{index_dir} is not a retrieval index (no {META}; was the build cut short?)")
    kind = json.loads(path.read_text()).get("kind")
    if kind not in KINDS:
        raise ValueError(f"{path}: unknown index kind {kind!r}")
    return kind


def open_retriever(index_dir: str | os.PathLike, corpus: Corpus | None = None) -> tuple[Retriever, str]:
    """The retriever saved in ``index_dir`` and its kind (``"bm25"`` or ``"dense"``)."""
    kind = index_kind(index_dir)
    if kind == "bm25":
        return BM25Retriever.load(index_dir, corpus), kind
    from retrieval_index.dense import DenseRetriever

    return DenseRetriever.load(index_dir, corpus), kind
