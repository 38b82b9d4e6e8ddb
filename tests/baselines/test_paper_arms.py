"""The paper-table experiments' shared rules (baselines/experiments/arms.py), on hand-computed numbers."""

from __future__ import annotations

import pytest

from baselines.experiments.arms import (
    Arm,
    arm_config,
    cost_summary,
    cpu_cell,
    metric_curves,
    parse_arguments,
    run_counts,
    seed_spread,
    spread,
    success_summary,
)
from baselines.trainers.config import ConfigError


def test_success_summary_of_two_hand_made_curves():
    """The docstring's example: curves [0.5, 0.5, 1.0] and [0, 0, 0.25], 32 episodes an iteration,
    threshold 0.5, window 2. Moving averages [0.5, 0.5, 0.75] and [0, 0, 0.125]: finals 0.75 and
    0.125 (means of the last 2 points); the first reaches 0.5 at iteration 0 (32 episodes), the second
    never and is censored at its budget 3 x 32 = 96; censored mean (32 + 96) / 2 = 64, population std 32."""
    summary = success_summary({"a": {"0": [0.5, 0.5, 1.0], "1": [0.0, 0.0, 0.25]}}, 32, 0.5, 2)["a"]
    assert summary["seeds"]["0"] == {
        "final_success": 0.75,
        "best_smoothed_success": 0.75,
        "episodes_to_threshold": 32,
        "censored_episodes": 32,
    }
    assert summary["seeds"]["1"] == {
        "final_success": 0.125,
        "best_smoothed_success": 0.125,
        "episodes_to_threshold": None,
        "censored_episodes": 96,
    }
    assert summary["censored_episodes"] == {"mean": 64.0, "std": 32.0, "min": 32.0, "max": 96.0, "seeds": 2}
    # finals 0.75 and 0.125: mean 0.4375, population std 0.3125
    assert summary["final_success"] == {"mean": 0.4375, "std": 0.3125, "min": 0.125, "max": 0.75, "seeds": 2}
    assert summary["runs_reaching_threshold"] == 1


def test_seed_spread_and_its_text():
    # [0.5, 0.7]: mean 0.6, population std 0.1
    stats = seed_spread([0.5, 0.7])
    assert stats == pytest.approx({"mean": 0.6, "std": 0.1, "min": 0.5, "max": 0.7, "seeds": 2})
    assert spread(stats) == "0.60 ± 0.10 (0.50–0.70, 2 seeds)"
    assert spread(seed_spread([1280, 640, 960]), 0) == "960 ± 261 (640–1,280, 3 seeds)"  # √(2·320²/3) = 261.3


def test_run_counts_sum_steps_and_episodes():
    # {32 episodes, 9.5 turns} and {32, 8.25}: 304 + 264 = 568 env steps, one response each
    records = [{"episodes": 32.0, "turns": 9.5}, {"episodes": 32.0, "turns": 8.25}]
    assert run_counts(records) == {"episodes": 64, "env_steps": 568, "generations": 568}


def test_cost_summary_sums_times_over_timed_runs_and_counts_over_all():
    def run(cpu, wall, steps):
        return {"episodes": 32, "env_steps": steps, "generations": steps, "cpu_s": cpu, "wall_s": wall}

    cost = cost_summary({"a": {0: run(2.0, 4.0, 300), 1: run(3.0, 5.0, 280)}, "b": {0: run(None, None, 100)}})
    assert cost["arms"]["a"]["cpu_s"] == 5.0 and cost["arms"]["a"]["wall_s"] == 9.0
    assert cost["arms"]["b"] == {
        "seeds": {"0": run(None, None, 100)},
        "runs": 1,
        "timed_runs": 0,
        "cpu_s": 0.0,
        "wall_s": 0.0,
        "episodes": 32,
        "env_steps": 100,
        "generations": 100,
    }
    assert cost["total"] == {
        "runs": 3,
        "timed_runs": 2,
        "cpu_s": 5.0,
        "wall_s": 9.0,
        "episodes": 96,
        "env_steps": 680,
        "generations": 680,
    }
    assert cpu_cell(cost) == "5 CPU s over 3 runs (2 of 3 timed) (680 env steps)"


def test_metric_curves_keep_only_the_arms_that_log_the_metric():
    runs = {"a": {0: [{"success": 0.0, "x": 1}, {"success": 1.0, "x": 2}]}, "b": {3: [{"success": 0.5}]}}
    curves = metric_curves(runs, ["success", "x"])
    assert curves == {"success": {"a": {"0": [0.0, 1.0]}, "b": {"3": [0.5]}}, "x": {"a": {"0": [1.0, 2.0]}}}


def test_arm_config_applies_shared_then_arm_overrides_and_pins_one_thread(tmp_path):
    from baselines.experiments.arms import CONFIGS

    arm = Arm(CONFIGS / "mini_sokoban.yaml", ("algorithm.estimator=grpo",), "GRPO")
    config = arm_config(arm, 3, tmp_path / "run", ("env.num_groups=4",), iterations=7)
    assert (config.env.num_groups, config.run.seed, config.run.iterations) == (4, 3, 7)
    assert config.algorithm.estimator == "grpo" and config.policy.num_threads == 1
    assert config.run.out_dir == str(tmp_path / "run")


@pytest.mark.parametrize("bad", [["--threshold", "0"], ["--threshold", "1.5"], ["--window", "0"]])
def test_a_threshold_outside_a_success_rate_or_an_empty_window_is_a_config_error(bad):
    with pytest.raises(ConfigError):
        parse_arguments("x", "x", 5, 0.5, 3, bad)
    args = parse_arguments("x", "name", 5, 0.5, 3, [])
    assert (args.seeds, args.iterations, args.threshold, args.window) == (list(range(8)), 5, 0.5, 3)
    assert args.out == "runs/name"
