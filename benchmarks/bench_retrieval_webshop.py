"""WebShop search on retrieval_index's BM25 engine: latency per search, same top 50 as before.

    # generated catalogs of 10k and 100k products
    python benchmarks/bench_retrieval_webshop.py
    # the full catalog's size
    python benchmarks/bench_retrieval_webshop.py --sizes 1181436

For each generated catalog (built once into the agentenvs cache) it runs the
same queries as bench_webshop.py (goal names and instruction texts, top 50)
through:

- previous: the scoring WebShop used before (``np.add.at`` over every query
  term, then a partition of the full score array);
- engine: retrieval_index's BM25Scorer with its cache off (only the query
  terms' posting lists are read; Block-Max MaxScore over blocks of
  ``BLOCK_SIZE`` postings);
- the same with other block sizes (``--block-sizes``), down to one block
  per list, which is MaxScore on each list's largest score alone: the
  block size is chosen from these rows;
- engine + cache, GRPO: each query sent 5 times in a row, as the 5 copies
  of a GRPO group send it.

It prints p50 / p95 ms per search (wall clock), the p50 and p95 of the CPU
time each search took (what other load on the machine inflates least), and
whether every top 50 is identical to exhaustive scoring's (rows, order and
float32 scores), with the machine's load average before and after each size.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentenvs.envs.webshop.tasks import generated_catalog
from retrieval_index.bm25 import BLOCK_SIZE, BOUNDS_META, BlockBounds, BM25Scorer


def previous_search(scorer: BM25Scorer, keywords: str, k: int = 50) -> tuple[list[int], bytes]:
    """Exhaustive scoring: every query term's list added into an array of every document, in query order."""
    scores = np.zeros(scorer.num_docs, dtype=np.float32)
    for term in scorer.term_ids(keywords):
        start, end = scorer.indptr[term], scorer.indptr[term + 1]
        np.add.at(scores, scorer.indices[start:end], scorer.data[start:end])
    kth = np.partition(scores, len(scores) - k)[len(scores) - k] if len(scores) > k else 0.0
    hits = np.flatnonzero(scores >= kth) if kth > 0 else np.flatnonzero(scores > 0)
    top = hits[np.lexsort((hits, -scores[hits]))][:k]
    return top.tolist(), scores[top].tobytes()


def engine_search(scorer: BM25Scorer, keywords: str, k: int = 50) -> tuple[list[int], bytes]:
    rows, scores = scorer.search(keywords, k)
    return rows.tolist(), scores.tobytes()


def timed(searches: list, queries: list[str]) -> list[tuple[list[float], list[float], list]]:
    """Wall and CPU ms of each search on each query, and its answers; the searches take turns on each
    query, so that load that comes and goes on the machine falls on all of them alike."""
    measured = [([], [], []) for _ in searches]
    for query in queries:
        for search, (times, cpu_times, results) in zip(searches, measured, strict=False):
            start, cpu = time.perf_counter(), time.thread_time()
            results.append(search(query))
            times.append((time.perf_counter() - start) * 1000)
            cpu_times.append((time.thread_time() - cpu) * 1000)
    return measured


def load_average() -> str:
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def bench_size(size: int, count: int, block_sizes: list[int]) -> None:
    catalog = generated_catalog(size, 0)
    index = catalog.search_index()
    queries = []
    for i in range(count):
        goal = catalog.goal(i % catalog.num_goals)
        queries.append(goal.instruction_text.split(", and price")[0] if i % 2 else goal.name.lower())
    uncached = BM25Scorer(index.model, cache_size=0, bounds=index.scorer.bounds)
    cached = BM25Scorer(index.model, bounds=index.scorer.bounds)
    longest = int(np.diff(uncached.indptr).max())
    others = []
    for block_size in block_sizes:
        if block_size != BLOCK_SIZE:
            bounds = BlockBounds.compute(uncached.data, uncached.indptr, min(block_size, longest))
            label = "1 block per list" if block_size >= longest else f"blocks of {block_size}"
            scorer = BM25Scorer(index.model, cache_size=0, bounds=bounds)
            others.append((f"engine, no cache ({label})", scorer))
    load_before = load_average()
    engines = [(f"engine, no cache (blocks of {BLOCK_SIZE})", uncached), *others]
    for _, scorer in engines:
        for query in queries[:50]:  # touch the mapped pages once
            scorer.search(query, 50)
    reference, *measured = timed(
        [lambda q: previous_search(uncached, q)]
        + [lambda q, scorer=scorer: engine_search(scorer, q) for _, scorer in engines],
        queries,
    )
    expected = reference[2]
    rows = [("previous (np.add.at + full partition)", *reference[:2], f"{count}/{count} (reference)")]
    for (name, _), (times, cpu_times, got) in zip(engines, measured, strict=False):
        rows.append(
            (name, times, cpu_times, f"{sum(a == b for a, b in zip(expected, got, strict=False))}/{count}")
        )
    [(group, group_cpu, grouped)] = timed(
        [lambda q: engine_search(cached, q)], [q for q in queries for _ in range(5)]
    )
    same_grouped = sum(a == b for a, b in zip([r for r in expected for _ in range(5)], grouped, strict=False))
    rows.append(("engine + cache, GRPO group of 5", group, group_cpu, f"{same_grouped}/{len(grouped)}"))
    for name, times, cpu_times, identical in rows:
        print(
            f"| {size:,} | {name} | {np.percentile(times, 50):.2f} | {np.percentile(times, 95):.2f} | "
            f"{np.percentile(cpu_times, 50):.2f} | {np.percentile(cpu_times, 95):.2f} | {identical} |"
        )
    stored = (catalog.directory / "bm25" / BOUNDS_META).exists()
    print(
        f"{size:,} products: block bounds {'stored with the index' if stored else 'computed on load'}; "
        f"load average (1 / 5 / 15 min) {load_before} before, {load_average()} after"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument(
        "--block-sizes",
        type=int,
        nargs="*",
        default=[32, 512, 10**9],
        help="other block sizes to time beside BLOCK_SIZE (one past the longest list: 1 block per list)",
    )
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; load average (1 / 5 / 15 min) at start: {load_average()}")
    print("| products | search | p50 ms | p95 ms | p50 CPU ms | p95 CPU ms | identical top 50 |")
    print("|---|---|---|---|---|---|---|")
    for size in args.sizes:
        bench_size(size, args.queries, args.block_sizes)


if __name__ == "__main__":
    main()
