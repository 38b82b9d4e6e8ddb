"""The benchmarks page's ColBench row quotes the benchmark's recorded output, and the ColBench notes'
sandbox section names only tests that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
RESULT = ROOT / "benchmarks" / "results" / "bench_colbench.txt"
FIGURE = re.compile(r"\d+\.\d+")
SANDBOX_TESTS = ROOT / "tests" / "envs" / "colbench" / "test_colbench_sandbox.py"
BENCHMARKS_PAGE = ROOT / "docs" / "reference" / "benchmarks.md"
NOTES_PAGE = ROOT / "docs" / "envs" / "notes" / "ColBench.md"


def test_every_figure_of_the_benchmarks_page_colbench_row_is_in_the_recorded_output():
    (row,) = [line for line in BENCHMARKS_PAGE.read_text().splitlines() if line.startswith("| ColBench (")]
    quoted = set(FIGURE.findall(row))
    recorded = set(FIGURE.findall(RESULT.read_text()))
    assert len(quoted) >= 6, row
    assert quoted <= recorded, f"the page quotes {sorted(quoted - recorded)}, not in {RESULT.name}"


def test_every_test_the_notes_sandbox_section_names_exists():
    notes = NOTES_PAGE.read_text()
    section = notes.split("### The sandbox: what it stops and what it does not")[1].split("\n## ")[0]
    named = set(re.findall(r"`(test_\w+)`", section))
    defined = set(re.findall(r"^def (test_\w+)", SANDBOX_TESTS.read_text(), re.MULTILINE))
    assert len(named) >= 20 and named <= defined, sorted(named - defined)
