"""The optional pyserini (Lucene) backend against bm25s and a brute-force Lucene BM25.

Lucene's BM25 differs from the textbook formula that bm25s computes in two
ways, both pinned here:

- it stores a passage's length in one byte (``SmallFloat.intToByte4``):
  exact below 40 terms, above that only the 4 leading bits of ``length − 24``
  survive (rounded down), so a 100-term passage scores as if it had 96;
- pyserini breaks equal scores by the passage id as a string ("10" before
  "9"), rounds scores to 4 decimals and lowers the n-th tied score by n · 1e-6;
  bm25s breaks them by corpus row.

So on passages under 40 terms (the FlashRAG-format corpus below) both
engines return the same top 10 up to the order within a tie, with scores
equal to 1e-4. On longer passages Lucene's top 10 are the 10 best scores of
BM25 over the one-byte lengths, in order up to near-ties (scores within
1e-6 of each other, relative, which float32 sums in another order may swap);
bm25s's scores differ from them by up to 1 %, and with them some top-10 lists.
Our analyzer is compared with Lucene's term by term; the cases where the two
still differ are listed (expected to fail) in ``ANALYZER_DIFFERENCES``.

The tests run where pyserini and a Java 21 runtime are installed
(``pip install "agentenvs[retrieval-lucene]"``) and skip, saying so, elsewhere.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import pickle
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from retrieval_index import BM25Retriever, Corpus, Passage, PyseriniRetriever, write_corpus_jsonl
from retrieval_index.analysis import analyze
from retrieval_index.lucene import INSTALL_HINT, build_lucene_index, java_home

ANSERINI_ROUNDING = 1e-4 + 1e-5  # 4 decimals, plus the tie perturbation of up to ten ties
TITLES = [
    'Café "Zürich"',
    'Beyoncé\'s "Lemonade"',
    "naïve Bayes",
    "U.S.A. 1,000",
    "O'Neil",
    "Straße 3.14",
    "Ελλάδα – Москва",
]
WORDS = [
    "river", "bank", "loan", "music", "piano", "rocket", "planet", "bread", "cheese", "chess", "running",
    "runner", "café", "naïve", "zürich", "well-known", "king's", "e-mail", "the", "and", "of", "1,000",
    "3.14",
]  # fmt: skip
QUERIES = [
    "river bank loan", "piano music", "rocket planet", "cheese bread chess", "running runner", "café zürich",
    "naïve", "well known king", "e-mail 1,000", "the king's music", "Beyoncé lemonade", "Straße", "москва",
    "bank bank bank", "runners ran", "planet of the cheese", "USA", "o'neil piano",
]  # fmt: skip


def pyserini_usable() -> str:
    """Empty when pyserini can start its JVM here, else why not (probed in a subprocess: a JVM that fails
    exits)."""
    if importlib.util.find_spec("pyserini") is None:
        return f"pyserini is not installed: {INSTALL_HINT}"
    probe = subprocess.run(
        [sys.executable, "-c", "from retrieval_index.lucene import start_jvm; start_jvm()"],
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return "" if probe.returncode == 0 else f"pyserini cannot start a JVM: {probe.stderr.strip()[-300:]}"


@pytest.fixture(scope="module")
def lucene_usable() -> None:
    reason = pyserini_usable()
    if reason:
        pytest.skip(reason)


def lucene_and_bm25(passages: list[Passage], tmp_path) -> tuple[PyseriniRetriever, BM25Retriever]:
    (tmp_path / "docs").mkdir()
    write_corpus_jsonl(passages, tmp_path / "docs" / "corpus.jsonl")
    build_lucene_index(tmp_path / "docs", tmp_path / "lucene")
    corpus = Corpus.from_passages(passages, tmp_path / "store")
    return PyseriniRetriever(tmp_path / "lucene"), BM25Retriever.build(corpus, tmp_path / "bm25")


def short_passages(count: int = 400) -> list[Passage]:
    """FlashRAG-format passages of 0 to 30 words (all lengths Lucene stores exactly), unicode and quoted
    titles."""
    rng = np.random.default_rng(3)
    weights = 1.0 / np.arange(1, len(WORDS) + 1)
    return [
        Passage(
            str(row),
            f"{TITLES[row % len(TITLES)]} {row}",
            " ".join(rng.choice(WORDS, size=int(rng.integers(0, 31)), p=weights / weights.sum())),
        )
        for row in range(count)
    ]


def lucene_length(length: int) -> int:
    """A passage length as Lucene's BM25 reads it back from its one-byte norm (SmallFloat.intToByte4)."""
    free = 24  # lengths below this are stored as they are
    rest = length - free
    if length < free or rest < 16:  # below 16 the 4-bit encoding is exact too
        return length
    shift = rest.bit_length() - 4
    return free + ((rest >> shift) << shift)


def test_lucene_lengths_keep_four_leading_bits():
    assert [lucene_length(n) for n in (0, 23, 24, 39, 40, 41, 42, 55, 56, 63, 88, 95, 100, 151, 152)] == [
        0, 23, 24, 39, 40, 40, 42, 54, 56, 60, 88, 88, 96, 144, 152,
    ]  # fmt: skip


def test_missing_pyserini_says_how_to_install_it(tmp_path):
    if importlib.util.find_spec("pyserini") is not None:
        pytest.skip("pyserini is installed here")
    with pytest.raises(ImportError, match=r"agentenvs\[retrieval-lucene\]"):
        PyseriniRetriever(tmp_path)


def test_a_java_older_than_21_is_refused_with_the_way_out(tmp_path, monkeypatch):
    (tmp_path / "release").write_text('IMPLEMENTOR="Debian"\nJAVA_VERSION="17.0.15"\nMODULES="java.base"\n')
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"Java 17\.0\.15; pyserini needs Java 21 \(unset JAVA_HOME"):
        java_home()


# Where our analyzer and Lucene's EnglishAnalyzer (StandardTokenizer, UAX #29) still disagree.
ANALYZER_DIFFERENCES = [
    pytest.param("王菲 日本語", id="han-ideographs-are-one-term-each"),
    pytest.param("ひらがな", id="hiragana-letters-are-one-term-each"),
    pytest.param("🙂 smile", id="emoji-are-terms"),
    pytest.param("İstanbul", id="dotted-capital-i-lowercases-to-plain-i"),
    pytest.param("x²", id="superscript-digits-are-dropped"),
]


@pytest.mark.parametrize(
    "text",
    [*TITLES, *WORDS, *QUERIES,
     "x-ray AT&T C++ $100 50% email@example.com http://a.b/c 1990s don't rock'n'roll",
     "mother-in-law Ph.D. James' naïveté résumé ﬁne foo_bar 12:30 a.b.c U.S. 1.2.3 3,000,000 -5 Hello—world",
     "カタカナ 한국어 العربية ภาษาไทย abc123 v1.2 o’neil king’s x:y 10,5.3 ß e.g. hello.world tom's's can't",
     *(pytest.param(*case.values, marks=pytest.mark.xfail(strict=True), id=case.id)
       for case in ANALYZER_DIFFERENCES)],
)  # fmt: skip
def test_our_analyzer_makes_lucenes_terms(lucene_usable, text):
    from retrieval_index.lucene import start_jvm

    start_jvm()
    from pyserini.analysis import Analyzer, get_lucene_analyzer

    assert analyze(text) == Analyzer(get_lucene_analyzer()).analyze(text)


def test_same_top_10_as_bm25s_up_to_tie_order(lucene_usable, tmp_path):
    passages = short_passages()
    lucene, bm25 = lucene_and_bm25(passages, tmp_path)
    compared = reordered = 0
    for query, ours, theirs in zip(
        QUERIES, bm25.retrieve(QUERIES, len(passages)), lucene.retrieve(QUERIES, 10), strict=False
    ):
        # our full ranking, ties re-broken as pyserini breaks them: by passage id as a string
        expected = sorted(ours, key=lambda hit: (-hit.score, hit.passage.id))[:10]
        assert [hit.passage for hit in theirs] == [hit.passage for hit in expected], query
        assert [hit.index for hit in theirs] == [hit.index for hit in expected], query
        np.testing.assert_allclose(
            [hit.score for hit in theirs], [hit.score for hit in expected], atol=ANSERINI_ROUNDING, rtol=0
        )
        compared += len(theirs)
        reordered += [hit.index for hit in ours[:10]] != [hit.index for hit in expected]
    assert compared > 10 * len(QUERIES) * 0.8  # most queries fill their top 10
    assert reordered > 0  # the corpus has ties that the two tie rules order differently
    reopened = pickle.loads(pickle.dumps(lucene))
    assert reopened.retrieve(QUERIES[:3], 5) == lucene.retrieve(QUERIES[:3], 5)


def test_a_failed_index_build_raises_with_the_indexers_reason(lucene_usable, tmp_path):
    with pytest.raises(RuntimeError, match=r"(?s)Anserini's indexer failed \(1\).*Invalid collection path"):
        build_lucene_index(tmp_path / "missing", tmp_path / "lucene")


def test_an_index_without_stored_documents_reads_passages_from_the_corpus(lucene_usable, tmp_path):
    passages = short_passages(60)
    (tmp_path / "docs").mkdir()
    write_corpus_jsonl(passages, tmp_path / "docs" / "corpus.jsonl")
    build_lucene_index(tmp_path / "docs", tmp_path / "lucene", store_raw=False)
    with pytest.raises(ValueError, match="pass the corpus it was built from"):
        PyseriniRetriever(tmp_path / "lucene").retrieve(["river bank"], 3)
    hits = PyseriniRetriever(
        tmp_path / "lucene", Corpus.from_passages(passages, tmp_path / "store")
    ).retrieve(["river bank"], 3)[0]
    assert len(hits) == 3 and all(hit.passage == passages[hit.index] for hit in hits)


def test_long_passages_score_as_bm25_over_lucenes_one_byte_lengths(lucene_usable, tmp_path):
    rng = np.random.default_rng(5)
    vocabulary = [f"w{rank}" for rank in range(3000)]
    # 100-word passages (wiki-18's length) with Zipf-distributed words
    passages = [
        Passage(str(row), f"w{row % 7}", " ".join(vocabulary[r % 3000] for r in rng.zipf(1.2, 100)))
        for row in range(600)
    ]
    queries = [" ".join(vocabulary[r % 3000] for r in rng.zipf(1.2, 4)) for _ in range(60)]
    lucene, bm25 = lucene_and_bm25(passages, tmp_path)

    documents = [Counter(analyze(p.contents)) for p in passages]
    lengths = np.array([sum(d.values()) for d in documents])
    stored = np.array([lucene_length(int(n)) for n in lengths])
    document_frequency = Counter(term for d in documents for term in d)

    def lucene_scores(query: str) -> np.ndarray:
        """BM25 of every passage over the lengths Lucene stores."""
        scores = np.zeros(len(passages))
        for term in analyze(query):
            df = document_frequency[term]
            tf = np.array([d[term] for d in documents])
            idf = math.log(1 + (len(passages) - df + 0.5) / (df + 0.5)) if df else 0.0
            scores += idf * tf / (tf + 0.9 * (1 - 0.4 + 0.4 * stored / lengths.mean()))
        return scores

    assert (stored != lengths).mean() > 0.5  # most lengths are stored inexactly
    worst_gap, reordered, ties = 0.0, 0, 0
    for query, theirs, ours in zip(
        queries, lucene.retrieve(queries, 10), bm25.retrieve(queries, 10), strict=False
    ):
        expected = lucene_scores(query)
        found = [hit.index for hit in theirs]
        # the 10 best scores in order, up to near-ties (1e-6 relative: float32 sums in another order)
        np.testing.assert_allclose(expected[found], np.sort(expected)[::-1][: len(found)], rtol=1e-6)
        np.testing.assert_allclose([hit.score for hit in theirs], expected[found], atol=ANSERINI_ROUNDING)
        for earlier, later in itertools.pairwise(found):  # exact ties: passage id as a string
            if expected[earlier] == expected[later]:
                assert passages[earlier].id < passages[later].id, query
                ties += 1
        our_scores = bm25.scorer.scores(query)[0]
        worst_gap = max(
            worst_gap, *(abs(float(our_scores[hit.index]) - hit.score) / hit.score for hit in theirs)
        )
        reordered += [hit.index for hit in ours] != [hit.index for hit in theirs]
    assert ties > 0
    # bm25s scores the exact lengths: up to 1 % off Lucene's scores, and some top-10 lists come out otherwise
    assert 0 < worst_gap < 0.015
    assert reordered > 0
