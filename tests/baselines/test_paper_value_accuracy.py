"""VinePPO's value-accuracy table (baselines/experiments/value_accuracy.py): its formulas by hand, the
committed results file against its own curves, and seed 0 rerun bit for bit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from baselines.experiments.common import PINNED_ENVIRONMENT, RESULTS_DIR
from baselines.experiments.value_accuracy import (
    RESULTS_NAME,
    candidate_q,
    docs_row,
    pick_outcome,
    point_metrics,
    pooled,
    seed_curves,
    summarise,
    truth_standard_error,
    verdict,
    within_share,
)

from fixtures.paper_tables import committed_results, docs_row_cells, json_roundtrip

ROOT = Path(__file__).resolve().parents[2]


def test_within_share_and_the_truths_standard_error_by_hand():
    # errors 0.02, 0.10, 0.05: two of three within 0.05 (the boundary counts)
    assert within_share([0.10, 0.30, 0.55], [0.12, 0.20, 0.50], 0.05) == pytest.approx(2 / 3)
    # sqrt(0.5 · 0.5 / 256) = 0.5 / 16 = 0.03125, the largest a 256-rollout truth can have
    assert truth_standard_error(0.5, 256) == pytest.approx(0.03125)
    assert truth_standard_error(0.0, 256) == 0.0


def test_pick_outcome_counts_ties_of_the_estimator_and_skips_tied_truths():
    # truth best = candidate 1; the estimator ties candidates 0 and 1: half a correct pick; chance 1/3
    assert pick_outcome([0.2, 0.5, 0.1], [0.3, 0.3, 0.0]) == (0.5, pytest.approx(1 / 3))
    assert pick_outcome([0.2, 0.5], [0.0, 0.9]) == (1.0, 0.5)
    assert pick_outcome([0.2, 0.5], [0.9, 0.0]) == (0.0, 0.5)
    assert pick_outcome([0.5, 0.5, 0.1], [0.5, 0.1, 0.0]) is None  # no unique best move
    assert pick_outcome([0.5], [0.5]) is None  # nothing to choose from


def test_candidate_q_is_the_reward_plus_the_next_value_unless_the_move_ended_the_episode():
    assert candidate_q({"reward": 1.0, "done": True, "truth": None}, "truth") == 1.0
    assert candidate_q({"reward": 0.0, "done": False, "critic": 0.25}, "critic") == 0.25


def test_point_metrics_by_hand():
    """Two roots, M = 256.

    Root A: truth 0.5, critic 0.6 (error 0.1), estimate 0.5 (0); candidates: a solving move (Q = 1 for
    every estimator) and a move to a state of truth 0.4 (critic 0.9, estimate 0.25): Q 1 beats 0.4, 0.9
    and 0.25, so every estimator picks the solving move.
    Root B: truth 0.0, critic 0.02, estimate 0.0; candidates of truth 0.1 and 0.3, critic 0.2 and 0.1,
    estimate 0.25 and 0.25: the critic picks the wrong one (0), the estimate ties both (1/2).
    within: critic 1/2 (errors 0.1, 0.02), estimate 1 (0, 0); mae: critic 0.06, estimate 0.
    pick over the 2 counted roots: critic (1 + 0)/2 = 0.5, estimate (1 + 0.5)/2 = 0.75; chance 1/2.
    truth s.e.: (sqrt(0.25/256) + 0)/2 = 0.015625.
    """
    solving = {"reward": 1.0, "done": True, "truth": None, "critic": None, "estimate": None}
    roots = [
        {
            "truth": 0.5,
            "critic": 0.6,
            "estimate": 0.5,
            "candidates": [
                solving,
                {"reward": 0.0, "done": False, "truth": 0.4, "critic": 0.9, "estimate": 0.25},
            ],
        },
        {
            "truth": 0.0,
            "critic": 0.02,
            "estimate": 0.0,
            "candidates": [
                {"reward": 0.0, "done": False, "truth": 0.1, "critic": 0.2, "estimate": 0.25},
                {"reward": 0.0, "done": False, "truth": 0.3, "critic": 0.1, "estimate": 0.25},
            ],
        },
    ]
    metrics = point_metrics(roots, 0.05, 256)
    assert metrics["critic_within"] == 0.5 and metrics["estimate_within"] == 1.0
    assert metrics["critic_mae"] == pytest.approx(0.06) and metrics["estimate_mae"] == 0.0
    assert metrics["counted"] == 2 and metrics["chance"] == 0.5
    assert metrics["critic_pick"] == 0.5 and metrics["estimate_pick"] == 0.75
    assert metrics["truth_se_mean"] == pytest.approx(0.015625)


def test_pooled_weights_picks_by_the_counted_states():
    # points with 1 and 3 counted roots: critic (1·1 + 0·3)/4 = 0.25; within is the plain mean 0.5
    curves = {
        "truth_se_mean": [0.01, 0.03],
        "critic_within": [0.25, 0.75],
        "estimate_within": [1.0, 0.5],
        "critic_mae": [0.1, 0.3],
        "estimate_mae": [0.0, 0.2],
        "counted": [1, 3],
        "critic_pick": [1.0, 0.0],
        "estimate_pick": [1.0, 2 / 3],
        "chance": [0.5, 1 / 3],
    }
    figures = pooled(curves)
    assert figures["critic_within"] == 0.5 and figures["estimate_within"] == 0.75
    assert figures["critic_pick"] == 0.25 and figures["estimate_pick"] == pytest.approx(0.75)
    assert figures["chance"] == pytest.approx((0.5 + 1.0) / 4)
    no_counted = {**curves, "counted": [0, 0], "critic_pick": [None, None]}
    assert pooled(no_counted)["critic_pick"] is None


def test_value_accuracy_verdict_rule_by_hand():
    def summary(critic: float, estimate: float, picks: tuple[float, float, float]) -> dict:
        over = {"critic_within": {"mean": critic}, "estimate_within": {"mean": estimate}}
        for key, value in zip(("critic_pick", "estimate_pick", "chance"), picks, strict=True):
            over[key] = {"mean": value}
        return {"over_seeds": over}

    judged = verdict(summary(0.5, 0.7, (0.35, 0.6, 0.3)))
    # 0.7 > 0.5 holds; the critic's 0.35 is 0.05 above chance 0.3: near chance (< 0.1)
    assert judged["verdict"] == "holds" and judged["critic_near_chance"] is True
    assert judged["estimate_beats_critic_at_picking"] is True
    judged = verdict(summary(0.7, 0.7, (0.5, 0.4, 0.3)))
    assert judged["verdict"] == "does not hold" and judged["critic_near_chance"] is False
    assert judged["estimate_beats_critic_at_picking"] is False


def test_value_accuracy_file_summary_and_verdict_follow_from_its_curves():
    results = committed_results(RESULTS_NAME)
    settings = results["settings"]
    for seed, points in results["points"].items():
        curves = seed_curves(points, settings["tolerance"], settings["truth_rollouts"])
        assert json_roundtrip(curves) == results["curves"][seed]
        assert len(results["success_curves"][seed]) == settings["iterations"]
        assert curves["iteration"] == list(
            range(settings["every"] - 1, settings["iterations"], settings["every"])
        )
    summary = summarise(results["curves"])
    assert json_roundtrip(summary) == results["summary"]
    assert json_roundtrip(verdict(summary)) == results["verdict"]
    assert len(results["curves"]) == 8  # the default --seeds
    assert (RESULTS_DIR / f"{RESULTS_NAME}.png").stat().st_size > 0


def test_value_accuracy_docs_row_is_one_row_of_six_cells():
    results = committed_results(RESULTS_NAME)
    docs_row_cells(docs_row(results), results["verdict"]["verdict"])


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_value_accuracy_seed_0_prefix_reruns_bit_for_bit(tmp_path):
    """The first measurement point of seed 0 (its first ``every`` iterations) against the file."""
    results = committed_results(RESULTS_NAME)
    every = results["settings"]["every"]
    command = [sys.executable, "-m", "baselines.experiments.value_accuracy", "--seeds", "0"]
    command += ["--iterations", str(every), "--out", str(tmp_path / "runs"), "--results", str(tmp_path)]
    subprocess.run(command, cwd=ROOT, check=True)
    rerun = json.loads((tmp_path / f"{RESULTS_NAME}.json").read_text(encoding="utf-8"))
    assert rerun["numerics"] == results["numerics"]
    assert rerun["points"]["0"] == results["points"]["0"][:1]
    assert rerun["success_curves"]["0"] == results["success_curves"]["0"][:every]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_measuring_the_values_does_not_disturb_the_training(tmp_path):
    """A run measured after each of its 3 iterations (tiny measurements) writes the metrics of the same
    run trained without measurements: the measurements draw from their own streams only."""
    command = [
        sys.executable,
        "-m",
        "baselines.experiments.value_accuracy",
        "--seeds",
        "0",
        "--iterations",
        "3",
    ]
    command += ["--every", "1", "--roots", "2", "--truth-rollouts", "8", "--estimate-rollouts", "2"]
    command += ["--out", str(tmp_path / "runs"), "--results", str(tmp_path)]
    subprocess.run(command, cwd=ROOT, check=True)
    plain = (
        "from baselines.experiments.common import pin_numerics; pin_numerics()\n"
        "from baselines.experiments.value_accuracy import run_config\n"
        "from baselines.trainers.run import train\n"
        f"train(run_config(0, {str(tmp_path / 'plain')!r}, 3))\n"
    )
    environ = {**os.environ, **PINNED_ENVIRONMENT, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", plain], cwd=ROOT, env=environ, check=True)

    def records(folder: Path) -> list[dict]:
        lines = (folder / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
        return [
            {k: v for k, v in json.loads(line).items() if not k.startswith("time/") and k != "tokens_per_s"}
            for line in lines
        ]

    measured = json.loads((tmp_path / f"{RESULTS_NAME}.json").read_text(encoding="utf-8"))
    assert [point["iteration"] for point in measured["points"]["0"]] == [0, 1, 2]
    assert records(tmp_path / "plain") == records(tmp_path / "runs" / "ppo-s0")
