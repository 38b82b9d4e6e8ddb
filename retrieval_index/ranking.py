"""Top-k selection shared by every retriever: best score first, ties to the lower corpus row."""

from __future__ import annotations

import numpy as np


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
