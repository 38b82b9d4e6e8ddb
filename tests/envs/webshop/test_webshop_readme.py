"""The benchmarks page's WebShop row quotes the benchmark's recorded output."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
RESULT = ROOT / "benchmarks" / "results" / "bench_webshop.txt"
FIGURE = re.compile(r"\d+\.\d+")


def test_every_figure_of_the_benchmarks_page_webshop_row_is_in_the_recorded_output():
    (row,) = [
        line
        for line in (ROOT / "docs" / "reference" / "benchmarks.md").read_text().splitlines()
        if line.startswith("| WebShop, ")
    ]
    quoted = set(FIGURE.findall(row)) - {"1.18"}  # the catalog's size, not a measurement
    recorded = set(FIGURE.findall(RESULT.read_text()))
    assert len(quoted) >= 9, row
    assert quoted <= recorded, f"the page quotes {sorted(quoted - recorded)}, not in {RESULT.name}"
