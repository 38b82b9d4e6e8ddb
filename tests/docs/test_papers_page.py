"""The page "The papers' results and ours" against the experiments' results files: one row per paper table,
each row exactly what its module's ``docs_row`` makes of the committed file, in the issue's order."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from baselines.experiments.common import PINNED_ENVIRONMENT

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference" / "papers.md"
RESULTS = ROOT / "baselines" / "experiments" / "results"
# the paper tables in the page's order: (module, results file stem)
TABLES = (
    "turn_rewards",
    "two_turn_search",
    "turn_decomposition",
    "value_accuracy",
    "archer_efficiency",
    "prm_labels",
    "state_matching",
    "hicra_mechanics",
)
VERDICTS = ("holds", "does not hold", "not testable here")


def results_of(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))


def page_rows() -> list[str]:
    """The page's table rows below its header and rule, in order."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    table = [line for line in lines if line.startswith("|")]
    return table[2:]


@pytest.mark.parametrize("name", TABLES)
def test_each_row_of_the_page_is_what_its_results_file_says(name):
    module = importlib.import_module(f"baselines.experiments.{name}")
    row = module.docs_row(results_of(name))
    assert "\n" not in row and row.startswith("| ") and row.endswith(" |")
    assert row in page_rows(), f"docs/reference/papers.md lacks, or differs from, the row\n{row}"


def test_the_page_holds_one_row_per_paper_table_in_the_issue_s_order():
    rows = page_rows()
    expected = [
        importlib.import_module(f"baselines.experiments.{name}").docs_row(results_of(name)) for name in TABLES
    ]
    assert rows == expected


@pytest.mark.parametrize("name", TABLES)
def test_each_row_has_six_cells_and_a_verdict_of_the_three(name):
    row = importlib.import_module(f"baselines.experiments.{name}").docs_row(results_of(name))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert len(cells) == 6 and all(cells)
    verdict = results_of(name)["verdict"]["verdict"]
    assert verdict in VERDICTS and cells[4].startswith(f"{verdict}:"), cells[4]


@pytest.mark.parametrize("name", TABLES)
def test_each_results_file_was_made_with_pinned_numerics_on_eight_seeds(name):
    results = results_of(name)
    assert results["numerics"]["environment"] == PINNED_ENVIRONMENT
    assert results["numerics"]["deterministic_algorithms"] is True
    row = importlib.import_module(f"baselines.experiments.{name}").docs_row(results)
    assert "8 seeds" in row
    assert (RESULTS / f"{name}.png").stat().st_size > 0


def test_the_page_links_every_module_and_its_rerun_command():
    text = PAGE.read_text(encoding="utf-8")
    for name in TABLES:
        assert f"python -m baselines.experiments.{name}" in text
