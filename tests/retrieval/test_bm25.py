"""BM25 retrieval against a brute-force numpy BM25 over the same analyzed tokens."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from retrieval_index import BM25Retriever, Corpus, Passage, Retriever
from retrieval_index.analysis import analyze_words, stemmer

WORDS = [
    "river", "bank", "money", "loan", "water", "fish", "boat", "city", "bridge", "stone", "king", "queen",
    "war", "peace", "song", "dance", "music", "film", "actor", "runner", "running", "runs", "ran", "engine",
    "car", "train", "station",
]  # fmt: skip


def generated_passages(count: int, seed: int) -> list[Passage]:
    rng = np.random.default_rng(seed)
    passages = []
    for row in range(count):
        length = int(rng.integers(0, 30))
        # a small vocabulary with a Zipf-like skew gives shared words, repeats and score ties
        weights = 1.0 / np.arange(1, len(WORDS) + 1)
        words = rng.choice(WORDS, size=length, p=weights / weights.sum())
        passages.append(Passage(id=f"doc{row}", title=str(rng.choice(WORDS)).title(), text=" ".join(words)))
    passages.append(Passage(id="dup-a", title="Twin", text="identical twin text"))
    passages.append(Passage(id="dup-b", title="Twin", text="identical twin text"))
    return passages


def brute_force(passages: list[Passage], query: str, k: int, k1: float, b: float) -> list[tuple[int, float]]:
    stem = stemmer()
    documents = [[stem(w) for w in analyze_words(p.contents)] for p in passages]
    vocabulary = sorted({term for doc in documents for term in doc})
    column = {term: j for j, term in enumerate(vocabulary)}
    tf = np.zeros((len(documents), len(vocabulary)))
    for i, doc in enumerate(documents):
        for term in doc:
            tf[i, column[term]] += 1
    lengths = tf.sum(axis=1)
    df = (tf > 0).sum(axis=0)
    idf = np.log(1 + (len(documents) - df + 0.5) / (df + 0.5))
    norm = k1 * (1 - b + b * lengths / lengths.mean())
    weights = idf * tf / (tf + norm[:, None])
    scores = np.zeros(len(documents))
    for term in (stem(w) for w in analyze_words(query)):
        if term in column:
            scores += weights[:, column[term]]
    ranked = sorted((row for row in range(len(documents)) if scores[row] > 0), key=lambda r: (-scores[r], r))
    return [(row, float(scores[row])) for row in ranked[:k]]


QUERIES = [
    "river bank",
    "running runner",
    "the king and the queen of music",
    "identical twin",
    "bridge bridge",
    "zebra",
    "",
    "Runs RAN, engine's car!",
]


@pytest.fixture(scope="module")
def corpus_and_passages(tmp_path_factory):
    passages = generated_passages(300, seed=3)
    return Corpus.from_passages(passages, tmp_path_factory.mktemp("corpus")), passages


@pytest.mark.parametrize("k1,b", [(0.9, 0.4), (1.5, 0.75)])
@pytest.mark.parametrize("topk", [1, 5, 50, 1000])
def test_topk_equals_brute_force(corpus_and_passages, tmp_path, k1, b, topk):
    corpus, passages = corpus_and_passages
    retriever = BM25Retriever.build(corpus, tmp_path / "bm25", k1=k1, b=b)
    results = retriever.retrieve(QUERIES, topk=topk)
    assert len(results) == len(QUERIES)
    for query, hits in zip(QUERIES, results, strict=False):
        expected = brute_force(passages, query, topk, k1, b)
        assert [hit.index for hit in hits] == [row for row, _ in expected], query
        np.testing.assert_allclose([hit.score for hit in hits], [s for _, s in expected], rtol=1e-5)
        assert [hit.passage for hit in hits] == [passages[row] for row, _ in expected]


def test_ties_go_to_the_lower_row(corpus_and_passages):
    hits = BM25Retriever.build(corpus_and_passages[0]).retrieve(["identical twin"], topk=2)[0]
    assert [hit.passage.id for hit in hits] == ["dup-a", "dup-b"]
    assert hits[0].score == hits[1].score


def test_defaults_are_search_r1_lucene_settings(corpus_and_passages):
    retriever = BM25Retriever.build(corpus_and_passages[0])
    assert (retriever.k1, retriever.b) == (0.9, 0.4)
    assert isinstance(retriever, Retriever)


def test_saved_index_loads_memory_mapped_and_pickles_as_paths(corpus_and_passages, tmp_path):
    corpus, _ = corpus_and_passages
    built = BM25Retriever.build(corpus, tmp_path / "bm25")
    loaded = BM25Retriever.load(tmp_path / "bm25")  # the corpus found through the index's own record
    assert isinstance(loaded.model.scores["data"], np.memmap)
    blob = pickle.dumps(loaded)
    assert len(blob) < 1000
    clone = pickle.loads(blob)
    for retriever in (loaded, clone):
        assert retriever.retrieve(QUERIES, 10) == built.retrieve(QUERIES, 10)


def test_in_memory_index_pickles_by_value(corpus_and_passages):
    retriever = BM25Retriever.build(corpus_and_passages[0])
    assert pickle.loads(pickle.dumps(retriever)).retrieve(QUERIES, 5) == retriever.retrieve(QUERIES, 5)


@pytest.mark.parametrize("topk", [0, -1, 2.5, True, "3"])
def test_bad_topk_is_refused(corpus_and_passages, topk):
    with pytest.raises(ValueError, match="topk"):
        BM25Retriever.build(corpus_and_passages[0]).retrieve(["river"], topk)


def test_index_refuses_a_corpus_of_another_size(corpus_and_passages, tmp_path):
    corpus, passages = corpus_and_passages
    BM25Retriever.build(corpus, tmp_path / "bm25")
    other = Corpus.from_passages(passages[:10], tmp_path / "other")
    with pytest.raises(ValueError, match="covers 302 passages"):
        BM25Retriever.load(tmp_path / "bm25", other)


def test_scores_follow_lucene_formula_on_a_hand_computed_case(tmp_path):
    corpus = Corpus.from_passages(
        [Passage("a", "x", "apple apple pear"), Passage("b", "y", "pear")], tmp_path / "c"
    )
    hit = BM25Retriever.build(corpus).retrieve(["apple"], 5)[0]
    # doc "a" has tokens x, apple, apple, pear (4); doc "b" has y, pear (2); average 3; apple df 1 of 2
    idf = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    expected = idf * 2 / (2 + 0.9 * (1 - 0.4 + 0.4 * 4 / 3))
    assert [h.index for h in hit] == [0]
    assert hit[0].score == pytest.approx(expected, rel=1e-6)


def test_identical_queries_are_answered_from_the_cache(corpus_and_passages):
    retriever = BM25Retriever.build(corpus_and_passages[0])
    first = retriever.retrieve(QUERIES, 5)
    assert (retriever.scorer.cache_hits, retriever.scorer.cache_misses) == (0, len(QUERIES))
    assert retriever.retrieve(QUERIES, 5) == first
    assert retriever.scorer.cache_hits == len(QUERIES)
    rows, _ = retriever.scorer.search(QUERIES[0], 5)
    with pytest.raises(ValueError):
        rows[0] = 7  # cached answers are shared, so they are read-only
    retriever.retrieve(QUERIES, 6)  # another topk is another entry
    assert retriever.scorer.cache_misses == 2 * len(QUERIES)


def test_cache_keeps_the_most_recent_queries(corpus_and_passages):
    from retrieval_index.bm25 import BM25Scorer

    scorer = BM25Scorer(BM25Retriever.build(corpus_and_passages[0]).model, cache_size=2)
    for query in ["river", "bank", "river", "king", "bank"]:
        scorer.search(query, 3)
    # river miss, bank miss, river hit, king miss (evicts bank), bank miss
    assert (scorer.cache_hits, scorer.cache_misses) == (1, 4)


def zipf_texts(count: int, seed: int, vocabulary: int = 400) -> list[str]:
    """Texts whose words follow Zipf's law, led by stop words, with some passages repeated (score ties)."""
    rng = np.random.default_rng(seed)
    words = np.array(["the", "and", "of", "a"] + [f"q{i:03d}x" for i in range(vocabulary)])
    probability = 1.0 / np.arange(1, len(words) + 1)
    texts = [
        " ".join(rng.choice(words, size=int(rng.integers(1, 40)), p=probability / probability.sum()))
        for _ in range(count)
    ]
    return texts + texts[:: max(1, count // 20)]


def zipf_queries(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    rare = [f"q{i:03d}x" for i in range(0, 400, 7)]
    common = ["q000x", "q001x", "q002x", "the", "and"]
    queries = ["", "the and of", "unknownword", "q003x q003x q003x", "q000x q001x q002x q000x"]
    for _ in range(count):
        picked = list(rng.choice(common, size=int(rng.integers(0, 4)))) + list(
            rng.choice(rare, size=int(rng.integers(0, 4)))
        )
        picked += ["unknownword"] * int(rng.integers(0, 2)) + picked[: int(rng.integers(0, 2))]
        queries.append(" ".join(rng.permutation(picked)))
    return queries


def exhaustive_top_k(scorer, query: str, topk: int) -> tuple[np.ndarray, np.ndarray]:
    from retrieval_index.ranking import top_k

    scores, _ = scorer.scores(query)
    hits = np.flatnonzero(scores > 0)
    return top_k(hits, scores[hits], topk)


@pytest.mark.parametrize("seed_rows", [0, 30, 10**9], ids=["no-short-lists", "mixed", "all-short-lists"])
def test_pruned_search_equals_exhaustive_scoring_bit_for_bit(monkeypatch, seed_rows):
    from retrieval_index import bm25
    from retrieval_index.bm25 import BlockBounds, BM25Scorer, index_texts

    monkeypatch.setattr(bm25, "SEED_ROWS", seed_rows)
    # these corpora are small enough to be scored exhaustively
    monkeypatch.setattr(bm25, "EXHAUSTIVE_WORK", 0)
    used = {}
    for seed, count in [(0, 40), (1, 300), (2, 2000)]:
        model = index_texts(zipf_texts(count, seed), k1=0.9, b=0.4)
        matrix = model.scores
        # blocks of 4 postings: these lists are short, and every list needs blocks to skip
        bounds = BlockBounds.compute(np.asarray(matrix["data"]), np.asarray(matrix["indptr"]), 4)
        scorer = BM25Scorer(model, cache_size=0, bounds=bounds)
        for query in zipf_queries(60, seed):
            for topk in (1, 3, 10, 50, 5000):
                rows, scores = scorer.search(query, topk)
                expected_rows, expected_scores = exhaustive_top_k(scorer, query, topk)
                assert rows.tolist() == expected_rows.tolist(), (query, topk)
                assert scores.dtype == np.float32
                assert scores.tobytes() == expected_scores.tobytes(), (query, topk)
        for path, times in scorer.path_counts.items():
            used[path] = used.get(path, 0) + times
    every_path = {
        "pruned",
        "all lists",
        "trimmed lists",
        "skipped blocks",
        "dropped rows",
        "seeded",
        "array lookups",
    }
    expected = {
        0: every_path,
        30: every_path,
        10**9: every_path - {"seeded"},
    }[seed_rows]
    assert set(used) == expected and min(used.values()) > 10, used


def test_small_corpora_are_scored_exhaustively(corpus_and_passages):
    retriever = BM25Retriever.build(corpus_and_passages[0])
    retriever.retrieve(QUERIES, 5)
    assert set(retriever.scorer.path_counts) == {"exhaustive"}


def test_threads_sharing_a_scorer_get_the_exhaustive_answers(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from retrieval_index import bm25
    from retrieval_index.bm25 import BM25Scorer, index_texts

    monkeypatch.setattr(bm25, "EXHAUSTIVE_WORK", 0)
    scorer = BM25Scorer(index_texts(zipf_texts(2000, 5), k1=0.9, b=0.4), cache_size=0)
    queries = zipf_queries(200, 5)
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda query: scorer.search(query, 10), queries))
    assert scorer.path_counts["array lookups"] > 0
    for query, (rows, scores) in zip(queries, answers, strict=False):
        expected_rows, expected_scores = exhaustive_top_k(scorer, query, 10)
        assert rows.tolist() == expected_rows.tolist(), query
        assert scores.tobytes() == expected_scores.tobytes(), query


def test_a_posting_list_out_of_row_order_is_refused(monkeypatch):
    from retrieval_index import bm25
    from retrieval_index.bm25 import BM25Scorer, index_texts

    monkeypatch.setattr(bm25, "EXHAUSTIVE_WORK", 0)
    scorer = BM25Scorer(index_texts(zipf_texts(300, 6), k1=0.9, b=0.4), cache_size=0)
    term = scorer.vocab["q000x"]
    start, end = scorer.indptr[term], scorer.indptr[term + 1]
    scorer.indices[start:end] = scorer.indices[start:end][::-1].copy()
    with pytest.raises(ValueError, match="not in increasing row order"):
        scorer.search("q000x", 5)
