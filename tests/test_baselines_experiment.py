"""The README's CPU experiment numbers against the committed results file, and the file against a re-run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from baselines.experiments.grpo_vs_gigpo import (
    RESULTS_DIR,
    RESULTS_NAME,
    episodes_to_threshold,
    moving_average,
    readme_sentence,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = RESULTS_DIR / f"{RESULTS_NAME}.json"


def load_results() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8"))


def test_readme_states_the_numbers_of_the_results_file():
    readme = re.sub(r"\s+", " ", (ROOT / "README.md").read_text(encoding="utf-8"))
    results = load_results()
    assert readme_sentence(results) in readme
    iterations = len(results["success_curves"]["gigpo"]["0"])
    assert (
        f"{len(results['estimators']['gigpo']['seeds'])} seeds, {iterations} iterations × {results['episodes_per_iteration']} episodes"
        in readme
    )
    assert (RESULTS_DIR / f"{RESULTS_NAME}.png").stat().st_size > 0


def test_the_summary_follows_from_the_curves_in_the_file():
    results = load_results()
    window, threshold, per_iteration = (
        results["window"],
        results["threshold"],
        results["episodes_per_iteration"],
    )
    for estimator, block in results["estimators"].items():
        for seed, stats in block["seeds"].items():
            curve = results["success_curves"][estimator][seed]
            records = [{"success": s, "episodes_seen": (i + 1) * per_iteration} for i, s in enumerate(curve)]
            assert stats["final_success"] == pytest.approx(sum(curve[-window:]) / window)
            assert stats["best_smoothed_success"] == pytest.approx(moving_average(curve, window).max())
            assert stats["episodes_to_threshold"] == episodes_to_threshold(records, threshold, window)


@pytest.mark.slow
def test_one_seed_rerun_reproduces_the_results_file(tmp_path):
    from baselines.experiments import grpo_vs_gigpo

    committed = load_results()
    seed = "0"
    grpo_vs_gigpo.main(
        [
            "--seeds",
            seed,
            "--threshold",
            str(committed["threshold"]),
            "--window",
            str(committed["window"]),
            "--out",
            str(tmp_path / "runs"),
            "--results",
            str(tmp_path / "results"),
        ]
    )
    rerun = json.loads((tmp_path / "results" / f"{RESULTS_NAME}.json").read_text(encoding="utf-8"))
    for estimator in ("grpo", "gigpo"):
        assert rerun["success_curves"][estimator][seed] == committed["success_curves"][estimator][seed]
        assert (
            rerun["estimators"][estimator]["seeds"][seed] == committed["estimators"][estimator]["seeds"][seed]
        )
