"""WebShop search on retrieval_index's BM25 engine: latency per search, same top 50 as before.

    python benchmarks/bench_retrieval_webshop.py                    # generated catalogs of 10k and 100k products
    python benchmarks/bench_retrieval_webshop.py --sizes 1181436    # the full catalog's size

For each generated catalog (built once into the agentenvs cache) it runs the
same queries as bench_webshop.py (goal names and instruction texts, top 50)
through:

- previous: the scoring WebShop used before (``np.add.at`` over every query
  term, then a partition of the full score array);
- engine: retrieval_index's BM25Scorer with its cache off (only the query
  terms' posting lists are read);
- engine + cache, GRPO: each query sent 5 times in a row, as the 5 copies
  of a GRPO group send it.

It prints p50 / p95 ms per search (wall clock), the p50 of the CPU time
each search took (what other load on the machine inflates least), and
whether every top 50 is identical.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentenvs.webshop.generator import generated_catalog
from retrieval_index.bm25 import BM25Scorer


def previous_search(scorer: BM25Scorer, keywords: str, k: int = 50) -> list[int]:
    scores = np.zeros(scorer.num_docs, dtype=np.float32)
    for term in scorer.term_ids(keywords):
        start, end = scorer.indptr[term], scorer.indptr[term + 1]
        np.add.at(scores, scorer.indices[start:end], scorer.data[start:end])
    kth = np.partition(scores, len(scores) - k)[len(scores) - k] if len(scores) > k else 0.0
    hits = np.flatnonzero(scores >= kth) if kth > 0 else np.flatnonzero(scores > 0)
    return hits[np.lexsort((hits, -scores[hits]))][:k].tolist()


def timed(search, queries: list[str]) -> tuple[list[float], list[float], list[list[int]]]:
    times, cpu_times, results = [], [], []
    for query in queries:
        start, cpu = time.perf_counter(), time.thread_time()
        results.append(search(query))
        times.append((time.perf_counter() - start) * 1000)
        cpu_times.append((time.thread_time() - cpu) * 1000)
    return times, cpu_times, results


def bench_size(size: int, count: int) -> None:
    catalog = generated_catalog(size, 0)
    index = catalog.search_index()
    queries = []
    for i in range(count):
        goal = catalog.goal(i % catalog.num_goals)
        queries.append(goal.instruction_text.split(", and price")[0] if i % 2 else goal.name.lower())
    uncached = BM25Scorer(index.model, cache_size=0)
    cached = BM25Scorer(index.model)
    for query in queries[:50]:  # touch the mapped pages once
        uncached.search(query, 50)
    before, before_cpu, expected = timed(lambda q: previous_search(uncached, q), queries)
    engine, engine_cpu, got = timed(lambda q: uncached.search(q, 50)[0].tolist(), queries)
    group, group_cpu, grouped = timed(
        lambda q: cached.search(q, 50)[0].tolist(), [q for q in queries for _ in range(5)]
    )
    same = sum(a == b for a, b in zip(expected, got))
    same_grouped = sum(a == b for a, b in zip([r for r in expected for _ in range(5)], grouped))
    for name, times, cpu_times, identical in (
        (
            "previous (np.add.at + full partition)",
            before,
            before_cpu,
            f"{len(queries)}/{len(queries)} (reference)",
        ),
        ("engine, no cache", engine, engine_cpu, f"{same}/{len(queries)}"),
        ("engine + cache, GRPO group of 5", group, group_cpu, f"{same_grouped}/{len(grouped)}"),
    ):
        print(
            f"| {size:,} | {name} | {np.percentile(times, 50):.2f} | {np.percentile(times, 95):.2f} | "
            f"{np.percentile(cpu_times, 50):.2f} | {identical} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    print("| products | search | p50 ms | p95 ms | p50 CPU ms | identical top 50 |")
    print("|---|---|---|---|---|---|")
    for size in args.sizes:
        bench_size(size, args.queries)


if __name__ == "__main__":
    main()
