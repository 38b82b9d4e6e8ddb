"""What every retriever shares in ranking: ``topk`` checked, top-k selection, Search-R1's BM25 parameters.

Top-k is best score first, ties to the lower corpus row. Search-R1's BM25
(pyserini's Lucene defaults) uses k1 = 0.9, b = 0.4, the defaults of both
BM25 backends (:mod:`retrieval_index.bm25`, :mod:`retrieval_index.lucene`).
"""

from __future__ import annotations

import numpy as np

SEARCH_R1_K1 = 0.9
SEARCH_R1_B = 0.4


def validate_topk(topk: int) -> int:
    """``topk`` as an int; a bool, float, string or anything below 1 is refused with ``ValueError``."""
    if isinstance(topk, bool) or not isinstance(topk, (int, np.integer)) or topk < 1:
        raise ValueError(f"topk must be a positive integer, got {topk!r}")
    return int(topk)


def top_k(rows: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best ``(rows, scores)`` pairs, best first; equal scores keep the lower row first.

    That is Lucene's order (document id breaks ties) and a stable sort's, so
    the result is the same whatever order the candidates come in.
    """
    if len(rows) > k:
        threshold = np.partition(scores, len(scores) - k)[len(scores) - k]
        above = np.flatnonzero(scores > threshold)
        tied = np.flatnonzero(scores == threshold)
        tied = tied[np.argsort(rows[tied], kind="stable")[: k - len(above)]]
        chosen = np.concatenate([above, tied])
        rows, scores = rows[chosen], scores[chosen]
    order = np.lexsort((rows, -scores))
    return rows[order], scores[order]
