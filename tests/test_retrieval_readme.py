"""The README's retrieval tables are the benchmarks' own output."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = sorted((ROOT / "benchmarks" / "results").glob("bench_retrieval*.txt"))


@pytest.mark.parametrize("result", RESULTS, ids=[path.name for path in RESULTS])
def test_readme_shows_every_row_of_the_benchmark_output(result):
    readme = (ROOT / "README.md").read_text()
    rows = [line for line in result.read_text().splitlines() if line.startswith("| ") and "---" not in line]
    assert rows, f"{result} holds no table"
    missing = [row for row in rows if row not in readme]
    assert not missing, f"README lacks these rows of {result.name}: {missing}"


def test_every_retrieval_benchmark_has_its_output_recorded():
    scripts = {path.stem for path in (ROOT / "benchmarks").glob("bench_retrieval*.py")}
    assert scripts == {path.stem for path in RESULTS}


def test_readme_quotes_the_full_webshop_catalogs_uncached_cpu_times_from_its_results():
    from retrieval_index.bm25 import BLOCK_SIZE

    results = (ROOT / "benchmarks" / "results" / "bench_retrieval_webshop.txt").read_text()
    [row] = [
        line for line in results.splitlines()
        if line.startswith(f"| 1,181,436 | engine, no cache (blocks of {BLOCK_SIZE}) |")
    ]  # fmt: skip
    p50_cpu, p95_cpu = (float(cell) for cell in row.split("|")[5:7])
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"median {p50_cpu:.1f} ms of CPU and {p95_cpu:.1f} ms at the 95th percentile" in readme
    assert f"each block of {BLOCK_SIZE} postings" in readme
