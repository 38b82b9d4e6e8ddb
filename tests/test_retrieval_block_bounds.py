"""Block-max bounds: the maxima they hold, how they are saved and checked, and pruned search equal to exhaustive."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval_index import bm25
from retrieval_index.bm25 import (
    BOUNDS_FILE,
    BOUNDS_META,
    REBUILD_COMMAND,
    BlockBounds,
    BM25Retriever,
    BM25Scorer,
    index_texts,
    load_model,
    save_model,
)
from retrieval_index.corpus import Corpus
from retrieval_index.ranking import top_k
from retrieval_index.types import Passage

# a skewed vocabulary: a few words in most documents, the rest rare, so lists of every length and many ties
VOCABULARY = ["alpha", "bravo", "charli", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
UNKNOWN = "zzzunknown"


def exhaustive_top_k(scorer: BM25Scorer, query: str, topk: int) -> tuple[np.ndarray, np.ndarray]:
    scores, _ = scorer.scores(query)
    hits = np.flatnonzero(scores > 0)
    return top_k(hits, scores[hits], topk)


def skewed_texts(seed: int, count: int) -> list[str]:
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(VOCABULARY) + 1) ** 1.2
    texts = [
        " ".join(rng.choice(VOCABULARY, size=int(rng.integers(1, 12)), p=weights / weights.sum()))
        for _ in range(count)
    ]
    return texts + texts[: count // 10]  # repeated documents: equal scores, ties broken by row


def naive_block_maxima(scorer: BM25Scorer, size: int) -> list[float]:
    maxima = []
    for term in range(len(scorer.indptr) - 1):
        scores = scorer.postings(term)[1].tolist()
        maxima += [max(scores[at : at + size]) for at in range(0, len(scores), size)]
    return maxima


def scorer_with_blocks(model, size: int) -> BM25Scorer:
    matrix = model.scores
    bounds = BlockBounds.compute(np.asarray(matrix["data"]), np.asarray(matrix["indptr"]), size)
    return BM25Scorer(model, cache_size=0, bounds=bounds)


@pytest.fixture(scope="module")
def model():
    return index_texts(skewed_texts(0, 300), k1=0.9, b=0.4)


@pytest.mark.parametrize("size", [1, 2, 7, 128, 10_000])
def test_bounds_are_the_largest_score_of_each_block_of_postings(model, size):
    scorer = BM25Scorer(model, cache_size=0)
    bounds = BlockBounds.compute(scorer.data, scorer.indptr, size)
    assert bounds.largest.dtype == np.float32
    assert bounds.largest.tolist() == naive_block_maxima(scorer, size)
    term = scorer.vocab[bm25.stemmer()("alpha")]
    assert len(bounds.of(term)) == -(-len(scorer.postings(term)[0]) // size)


@pytest.mark.parametrize("size", [0, -1, 1.5, 128.0, True, "128", None, 10**30 * 1.0])
def test_a_block_size_that_is_not_a_positive_integer_is_refused(model, size):
    scorer = BM25Scorer(model, cache_size=0)
    with pytest.raises(ValueError, match="block size must be a positive integer"):
        BlockBounds.compute(scorer.data, scorer.indptr, size)


def test_bounds_for_another_matrix_are_refused_by_the_scorer(model):
    other = index_texts(skewed_texts(1, 50), k1=0.9, b=0.4)
    scorer = BM25Scorer(other, cache_size=0)
    with pytest.raises(ValueError, match="do not fit"):
        BM25Scorer(model, bounds=BlockBounds.compute(scorer.data, scorer.indptr))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(1, 120),
    size=st.sampled_from([1, 2, 3, 5, 8, 64, 128]),
    seed_rows=st.sampled_from([0, 3, 10**9]),
    queries=st.lists(
        st.lists(st.sampled_from(VOCABULARY + [UNKNOWN]), max_size=8).map(" ".join), min_size=1, max_size=6
    ),
    topks=st.lists(st.integers(1, 200), min_size=1, max_size=3),
)
def test_pruned_top_k_equals_exhaustive_top_k_on_random_indexes(seed, count, size, seed_rows, queries, topks):
    """Random corpora, block sizes, queries (repeated and unknown words, empty) and k (beyond the hits)."""
    scorer = scorer_with_blocks(index_texts(skewed_texts(seed, count), k1=0.9, b=0.4), size)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bm25, "EXHAUSTIVE_WORK", 0)  # every query takes the pruned path
        patch.setattr(bm25, "SEED_ROWS", seed_rows)
        for query in queries + [""]:
            for topk in topks:
                rows, scores = scorer.search(query, topk)
                expected_rows, expected_scores = exhaustive_top_k(scorer, query, topk)
                assert rows.tolist() == expected_rows.tolist(), (query, topk)
                assert scores.dtype == np.float32
                assert scores.tobytes() == expected_scores.tobytes(), (query, topk)
