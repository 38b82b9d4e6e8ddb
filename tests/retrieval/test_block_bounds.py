"""Block-max bounds: the maxima they hold, how they are saved and checked; pruned search equals exhaustive."""

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


@pytest.mark.parametrize("size", [0, -1, 1.5, 128.0, True, "128", None, 10**30 * 1.0, 10**30, 2**31])
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


@pytest.fixture
def saved(model, tmp_path):
    save_model(model, tmp_path)
    return tmp_path


def test_a_saved_model_reloads_with_the_bounds_it_was_saved_with(model, saved):
    loaded, bounds = load_model(saved)
    expected = BM25Scorer(model).bounds
    assert bounds is not None and bounds.size == expected.size
    assert bounds.largest.tobytes() == expected.largest.tobytes()
    assert json.loads((saved / BOUNDS_META).read_text())["version"] == bm25.BOUNDS_VERSION


def test_a_model_saved_without_bounds_gets_them_computed_with_the_same_results(model, saved):
    (saved / BOUNDS_META).unlink()
    (saved / BOUNDS_FILE).unlink()
    loaded, bounds = load_model(saved)
    assert bounds is None
    scorer, reference = BM25Scorer(loaded, cache_size=0), BM25Scorer(model, cache_size=0)
    assert scorer.bounds.largest.tobytes() == reference.bounds.largest.tobytes()
    for query in ["alpha bravo", "juliet india india", "delta"]:
        assert scorer.search(query, 7)[0].tolist() == reference.search(query, 7)[0].tolist()


def rewrite_meta(directory, **changes):
    path = directory / BOUNDS_META
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: (d / BOUNDS_FILE).write_bytes((d / BOUNDS_FILE).read_bytes()[:-8]),
         "unusable block bounds"),
        (lambda d: (d / BOUNDS_FILE).unlink(), "unusable block bounds"),
        (lambda d: np.save(d / BOUNDS_FILE, np.load(d / BOUNDS_FILE).astype(np.float64)),
         "unusable block bounds"),
        (lambda d: np.save(d / BOUNDS_FILE, np.load(d / BOUNDS_FILE)[::-1].copy()),
         "do not match their digest"),
        (lambda d: np.save(d / BOUNDS_FILE, np.load(d / BOUNDS_FILE) * 0), "do not match their digest"),
        (lambda d: (d / BOUNDS_META).write_text("{not json"), "is not JSON"),
        (lambda d: (d / BOUNDS_META).write_bytes(b'{"version": "\xed\xa0\x80"}'), "is not JSON"),
        (lambda d: (d / BOUNDS_META).write_text("[1]"), "block bounds format"),
        (lambda d: rewrite_meta(d, version=2), "block bounds format 2"),
        (lambda d: rewrite_meta(d, version=1.0 + 1e-9), "block bounds format"),
        (lambda d: rewrite_meta(d, block_size=64), "unusable block bounds"),
        (lambda d: rewrite_meta(d, block_size=128.0), "block size must be a positive integer"),
        (lambda d: rewrite_meta(d, block_size=10**30), "block size must be a positive integer"),
        (lambda d: rewrite_meta(d, block_size=True), "block size must be a positive integer"),
        (lambda d: rewrite_meta(d, postings=10**30), "another score matrix"),
        (lambda d: rewrite_meta(d, indptr_digest="0" * 32), "another score matrix"),
        (lambda d: rewrite_meta(d, terms=None), "another score matrix"),
    ],
    ids=[
        "short", "missing", "float64", "reordered", "zeroed", "bad-json", "lone-surrogate", "not-an-object",
        "newer-format", "float-version", "other-block-size", "float-block-size", "huge-block-size",
        "bool-block-size", "other-postings", "other-indptr", "no-terms",
    ],
)  # fmt: skip
def test_bounds_that_do_not_check_out_are_refused_naming_the_fix(saved, damage, message):
    damage(saved)
    with pytest.raises(ValueError, match=message) as raised:
        load_model(saved)
    assert "rebuild the index" in str(raised.value) and BOUNDS_META in str(raised.value)


def test_bounds_of_another_index_linked_in_are_refused(model, saved, tmp_path_factory):
    other = tmp_path_factory.mktemp("other")
    save_model(index_texts(skewed_texts(0, 301), k1=0.9, b=0.4), other)
    (saved / BOUNDS_FILE).unlink()
    (saved / BOUNDS_FILE).symlink_to(other / BOUNDS_FILE)
    with pytest.raises(ValueError, match="unusable block bounds|do not match their digest"):
        load_model(saved)


def retriever_index(tmp_path, passages: int = 40):
    texts = skewed_texts(3, passages)
    corpus = Corpus.from_passages(
        [Passage(id=f"p{row}", title="", text=text) for row, text in enumerate(texts)], tmp_path / "corpus"
    )
    BM25Retriever.build(corpus, tmp_path / "index")
    return corpus, tmp_path / "index"


def test_a_version_1_retriever_index_opens_with_bounds_computed(tmp_path):
    corpus, index = retriever_index(tmp_path)
    expected = BM25Retriever.load(index).retrieve(["alpha delta", "golf"], 5)
    (index / BOUNDS_META).unlink()
    (index / BOUNDS_FILE).unlink()
    meta = json.loads((index / "retriever.json").read_text())
    (index / "retriever.json").write_text(json.dumps({**meta, "version": 1}))
    assert BM25Retriever.load(index).retrieve(["alpha delta", "golf"], 5) == expected


@pytest.mark.parametrize("version", [2, 3, 0, "2", None])
def test_a_retriever_index_without_bounds_or_of_another_version_names_the_rebuild_command(tmp_path, version):
    corpus, index = retriever_index(tmp_path)
    (index / BOUNDS_META).unlink()
    meta = json.loads((index / "retriever.json").read_text())
    (index / "retriever.json").write_text(json.dumps({**meta, "version": version}))
    with pytest.raises(ValueError, match="lacks its block bounds|built by another version") as raised:
        BM25Retriever.load(index)
    assert REBUILD_COMMAND in str(raised.value)


@pytest.mark.parametrize(
    "query",
    [
        "\ud800 alpha",
        "alpha\u200b bravo\u200b",
        "\u202eecho\u202c golf",
        "[" * 200_000 + "alpha" + "]" * 200_000,
    ],
    ids=["lone-surrogate", "zero-width", "bidi", "nested-brackets"],
)
@pytest.mark.parametrize("topk", [1, 10**30])
def test_hostile_queries_get_the_exhaustive_answer_on_the_pruned_path(model, monkeypatch, query, topk):
    monkeypatch.setattr(bm25, "EXHAUSTIVE_WORK", 0)
    scorer = scorer_with_blocks(model, 4)
    rows, scores = scorer.search(query, topk)
    expected_rows, expected_scores = exhaustive_top_k(scorer, query, topk)
    assert rows.tolist() == expected_rows.tolist() and scores.tobytes() == expected_scores.tobytes()
