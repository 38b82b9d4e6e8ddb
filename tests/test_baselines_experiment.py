"""The baselines page's CPU experiment numbers against the committed results file, and the file against a re-run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from baselines.experiments.grpo_vs_gigpo import (
    PINNED_ENVIRONMENT,
    RESULTS_DIR,
    UnpinnedNumerics,
    RESULTS_NAME,
    environment_is_pinned,
    episodes_to_threshold,
    mkl_branch,
    pin_numerics,
    moving_average,
    readme_sentence,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = RESULTS_DIR / f"{RESULTS_NAME}.json"


def load_results() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8"))


def test_the_baselines_page_states_the_numbers_of_the_results_file():
    page = re.sub(r"\s+", " ", (ROOT / "docs" / "reference" / "baselines.md").read_text(encoding="utf-8"))
    results = load_results()
    assert readme_sentence(results) in page
    iterations = len(results["success_curves"]["gigpo"]["0"])
    assert (
        f"{len(results['estimators']['gigpo']['seeds'])} seeds, {iterations} iterations × {results['episodes_per_iteration']} episodes"
        in page
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
        finals = [stats["final_success"] for stats in block["seeds"].values()]
        assert block["mean_final_success"] == pytest.approx(sum(finals) / len(finals))
        assert block["std_final_success"] == pytest.approx(
            (sum((f - block["mean_final_success"]) ** 2 for f in finals) / len(finals)) ** 0.5
        )
        assert (block["min_final_success"], block["max_final_success"]) == (min(finals), max(finals))


@pytest.mark.slow
@pytest.mark.timeout(1800)
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


def test_the_results_file_records_the_pinned_numerics():
    numerics = load_results()["numerics"]
    assert numerics["environment"] == PINNED_ENVIRONMENT
    assert numerics["aten_cpu_capability"] == PINNED_ENVIRONMENT["ATEN_CPU_CAPABILITY"].upper()
    assert numerics["mkl_cbwr_branch"] == PINNED_ENVIRONMENT["MKL_CBWR"]
    assert numerics["torch_threads"] == 1 and numerics["deterministic_algorithms"] is True


def test_an_environment_missing_one_pin_is_not_pinned():
    assert environment_is_pinned(PINNED_ENVIRONMENT)
    for name in PINNED_ENVIRONMENT:
        assert not environment_is_pinned({**PINNED_ENVIRONMENT, name: "avx512"})
        assert not environment_is_pinned({key: v for key, v in PINNED_ENVIRONMENT.items() if key != name})


def test_a_process_whose_torch_started_unpinned_is_refused():
    if environment_is_pinned():
        pytest.skip("this test process was started with the pinned environment")
    import torch

    torch.ones(4).exp().sum()  # torch has dispatched, so ATen and MKL chose their kernels
    with pytest.raises(UnpinnedNumerics):
        pin_numerics()
    assert not torch.are_deterministic_algorithms_enabled()  # refused before changing anything
    assert mkl_branch() is not None or not torch.backends.mkl.is_available()  # the check can read MKL


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_caller_s_cpu_capability_does_not_change_the_numbers(tmp_path):
    """Two callers asking torch for other kernels (ATEN_CPU_CAPABILITY, MKL_CBWR) get identical runs."""
    logs = {}
    for capability, mkl in (("default", None), ("avx512", "AUTO")):
        environ = {key: value for key, value in os.environ.items() if key not in PINNED_ENVIRONMENT}
        environ["ATEN_CPU_CAPABILITY"] = capability
        if mkl is not None:
            environ["MKL_CBWR"] = mkl
        environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        out = tmp_path / capability
        command = [sys.executable, "-m", "baselines.experiments.grpo_vs_gigpo", "--estimators", "gigpo"]
        command += ["--seeds", "0", "--iterations", "3", "--out", str(out / "runs"), "--results", str(out)]
        subprocess.run(command, env=environ, check=True, cwd=ROOT, capture_output=True)
        records = [json.loads(line) for line in (out / "runs" / "gigpo-s0" / "metrics.jsonl").open()]
        logs[capability] = [
            {key: value for key, value in record.items() if not key.startswith(("time/", "tokens_per_s"))}
            for record in records
        ]
        numerics = json.loads((out / f"{RESULTS_NAME}.json").read_text())["numerics"]
        assert numerics["aten_cpu_capability"] == "AVX2"
    assert len(logs["default"]) == 3
    assert logs["default"] == logs["avx512"]
