"""The baselines page's CPU experiment numbers against the committed results file, and the file against a
re-run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from baselines.experiments.common import (
    COST_FILE,
    PINNED_ENVIRONMENT,
    RESULTS_DIR,
    UnpinnedNumerics,
    environment_is_pinned,
    episodes_to_threshold,
    mkl_branch,
    moving_average,
    pin_numerics,
    train_or_read,
)
from baselines.experiments.estimators import (
    ESTIMATORS,
    RESULTS_NAME,
    docs_table,
    estimator_config,
    run_counts,
)

ROOT = Path(__file__).resolve().parents[2]
RESULTS = RESULTS_DIR / f"{RESULTS_NAME}.json"


def load_results() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8"))


def test_the_baselines_page_states_the_numbers_of_the_results_file():
    text = (ROOT / "docs" / "reference" / "baselines.md").read_text(encoding="utf-8")
    results = load_results()
    assert docs_table(results) in text
    page = re.sub(r"\s+", " ", text)
    iterations = {len(curve) for curves in results["success_curves"].values() for curve in curves.values()}
    assert len(iterations) == 1
    assert f"({iterations.pop()} iterations × {results['episodes_per_iteration']} episodes per run)" in page
    assert f"K = {results['algorithms']['vineppo']['mc_rollouts']} rollouts of the policy" in page
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


def test_the_estimators_differ_only_in_their_algorithm_section(tmp_path):
    """Same rooms, model, sampler, optimiser and iterations: only the advantage estimator changes."""
    configs = {name: estimator_config(name, 0, tmp_path).to_dict() for name in ESTIMATORS}
    algorithms = {name: config.pop("algorithm") for name, config in configs.items()}
    assert configs["grpo"] == configs["gigpo"] == configs["vineppo"]
    assert (algorithms["grpo"]["name"], algorithms["grpo"]["estimator"]) == ("critic_free", "grpo")
    assert (algorithms["gigpo"]["estimator"], algorithms["gigpo"]["anchor"]) == ("gigpo", "state")
    assert (algorithms["vineppo"]["name"], algorithms["vineppo"]["mc_rollouts"]) == ("vineppo", 4)
    assert load_results()["algorithms"] == algorithms  # the file was made with these settings


def test_the_results_file_counts_what_each_estimator_paid_for():
    """VinePPO's K rollouts from every turn's state are env steps the other estimators never take."""
    results = load_results()
    assert set(results["cost"]) == set(results["estimators"]) == set(ESTIMATORS)
    for estimator, block in results["cost"].items():
        k = results["algorithms"][estimator].get("mc_rollouts", 0)
        seeds = block["seeds"]
        assert set(seeds) == set(results["estimators"][estimator]["seeds"])
        counted, timed = block["counted_seeds"], block["timed_seeds"]
        assert timed and set(timed) <= set(counted), f"no {estimator} run was timed"
        carried = results["from_earlier_results"][estimator]
        assert sorted(carried + counted) == sorted(map(int, seeds))  # a run is retrained or carried over
        for seed, cost in seeds.items():
            if int(seed) in carried:
                assert all(cost[key] is None for key in cost), (
                    "a carried-over run was neither counted nor timed"
                )
                continue
            assert cost["branch_rollouts"] == k * cost["env_steps"]
            assert cost["all_env_steps"] == cost["env_steps"] + cost["branch_env_steps"]
            assert cost["branch_env_steps"] >= cost["branch_rollouts"]  # a rollout takes at least one step
        for count in ("env_steps", "branch_rollouts", "branch_env_steps", "all_env_steps"):
            mean = sum(seeds[str(s)][count] for s in counted) / len(counted)
            assert block[f"mean_{count}"] == pytest.approx(mean)
        for clock in ("wall_s", "cpu_s"):
            assert all(seeds[str(seed)][clock] > 0 for seed in timed)
            assert block[f"mean_{clock}"] == pytest.approx(
                sum(seeds[str(s)][clock] for s in timed) / len(timed)
            )
    assert (
        results["cost"]["vineppo"]["mean_all_env_steps"] > 4 * results["cost"]["gigpo"]["mean_all_env_steps"]
    )


def test_runs_carried_over_from_an_earlier_file_must_agree_with_the_runs_retrained(tmp_path):
    """A run found complete under --out is checked against the earlier file's curve; the others are
    carried."""
    committed = load_results()
    earlier = {
        "numerics": committed["numerics"],
        "episodes_per_iteration": 64,
        "estimators": {"grpo": {"seeds": {s: {"singleton_share": 0.25} for s in ("0", "1")}}},
        "success_curves": {"grpo": {"0": [0.125, 0.5], "1": [0.25, 0.75]}},
    }
    (tmp_path / "earlier.json").write_text(json.dumps(earlier))

    def run_with_seed_0_succeeding(successes):
        run = tmp_path / "runs" / "grpo-s0"
        run.mkdir(parents=True, exist_ok=True)
        records = [
            {
                "success": s,
                "episodes_seen": 64 * (i + 1),
                "anchor/singleton_share": 0.25,
                "episodes": 64.0,
                "turns": 4.0,
            }
            for i, s in enumerate(successes)
        ]
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        command = [sys.executable, "-m", "baselines.experiments.estimators", "--estimators", "grpo"]
        command += [
            "--seeds",
            "0",
            "1",
            "--iterations",
            "2",
            "--window",
            "1",
            "--out",
            str(tmp_path / "runs"),
        ]
        command += ["--results", str(tmp_path / "results"), "--earlier", str(tmp_path / "earlier.json")]
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        environ = {**os.environ, **PINNED_ENVIRONMENT, "PYTHONPATH": path}  # pinned: no second process
        return subprocess.run(command, env=environ, cwd=ROOT, capture_output=True, text=True)

    drifted = run_with_seed_0_succeeding([0.125, 0.625])
    assert drifted.returncode != 0 and "does not reproduce the success curve" in drifted.stderr
    agreed = run_with_seed_0_succeeding([0.125, 0.5])
    assert agreed.returncode == 0, agreed.stderr
    results = json.loads((tmp_path / "results" / f"{RESULTS_NAME}.json").read_text())
    assert results["from_earlier_results"] == {"grpo": [1]}
    assert results["success_curves"]["grpo"] == earlier["success_curves"]["grpo"]
    assert results["cost"]["grpo"]["seeds"]["0"]["env_steps"] == 2 * 64 * 4
    assert results["cost"]["grpo"]["seeds"]["1"]["env_steps"] is None
    assert results["estimators"]["grpo"]["seeds"]["1"]["final_success"] == 0.75


def test_run_counts_sums_trained_and_branch_steps():
    records = [
        {"episodes": 64.0, "turns": 9.5, "vine/rollouts": 2432, "vine/env_steps": 12000},
        {"episodes": 64.0, "turns": 4.25},
    ]
    assert run_counts(records) == {
        "env_steps": 608 + 272,
        "branch_rollouts": 2432,
        "branch_env_steps": 12000,
        "all_env_steps": 608 + 272 + 12000,
    }


def test_a_complete_run_is_read_back_with_its_times_or_none(tmp_path):
    config = estimator_config("grpo", 0, tmp_path / "run", iterations=2)
    written = [{"iteration": i, "success": 0.5, "episodes": 64.0, "turns": 3.0} for i in range(2)]
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in written))
    assert train_or_read(config) == (written, None)  # read back, not trained, and not timed
    times = {"wall_s": 12.5, "cpu_s": 10.0, "load_average_1min": [0.5, 0.7]}
    (tmp_path / "run" / COST_FILE).write_text(json.dumps(times))
    assert train_or_read(config) == (written, times)


def test_an_unknown_estimator_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown estimator 'ppo'.*gigpo"):
        estimator_config("ppo", 0, tmp_path)
    from baselines.experiments import estimators as experiment

    with pytest.raises(SystemExit):
        experiment.main(["--estimators", "ppo"])
    for bad in ("ppo=0", "vineppo=", "vineppo=0,,1", "vineppo=-1", "vineppo=1.5", "vineppo=\u0663"):
        with pytest.raises(SystemExit):  # argparse's usage error, before any training
            experiment.main(["--estimators", "grpo", "vineppo", "--seeds-of", bad])


def test_the_table_says_which_runs_were_timed_and_counted():
    results = load_results()
    block = results["cost"]["grpo"]
    seeds = len(block["seeds"])
    block["timed_seeds"] = block["counted_seeds"] = [0]
    assert f"(timed on 1 of {seeds} seeds)" in docs_table(results)
    assert f"(counted on 1 of {seeds} seeds)" in docs_table(results)
    block["mean_wall_s"] = block["mean_cpu_s"] = block["mean_all_env_steps"] = None
    assert "| not timed | not counted |" in docs_table(results)


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("estimators", [("grpo", "gigpo"), ("vineppo",)], ids="+".join)
def test_one_seed_rerun_reproduces_the_results_file(tmp_path, estimators):
    """Seed 0 again: the same success curve, summary and step counts (times are the machine's)."""
    from baselines.experiments import estimators as experiment

    committed = load_results()
    seed = "0"
    experiment.main(
        [
            "--estimators",
            *estimators,
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
    for estimator in estimators:
        assert rerun["success_curves"][estimator][seed] == committed["success_curves"][estimator][seed]
        assert (
            rerun["estimators"][estimator]["seeds"][seed] == committed["estimators"][estimator]["seeds"][seed]
        )
        assert rerun["algorithms"][estimator] == committed["algorithms"][estimator]
        counts = ("env_steps", "branch_rollouts", "branch_env_steps", "all_env_steps")
        rerun_cost, committed_cost = (
            results["cost"][estimator]["seeds"][seed] for results in (rerun, committed)
        )
        assert {c: rerun_cost[c] for c in counts} == {c: committed_cost[c] for c in counts}
        assert rerun_cost["wall_s"] > 0 and rerun_cost["cpu_s"] > 0


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
        command = [sys.executable, "-m", "baselines.experiments.estimators", "--estimators", "gigpo"]
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
