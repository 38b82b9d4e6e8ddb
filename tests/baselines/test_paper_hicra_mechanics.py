"""Table 8 (HICRA's mechanics): the committed results file against its curves, every token planning giving
A + α·abs(A) through the trainer (hand numbers), and seed 0's first iterations rerun bit for bit (slow)."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.experiments import hicra_mechanics as table
from baselines.experiments.arms import arm_config, seed_spread
from baselines.experiments.common import PINNED_ENVIRONMENT, RESULTS_DIR
from baselines.rollout import RolloutBatch, Trajectory, Turn
from baselines.trainers.run import TrainingRun

from fixtures.paper_tables import (
    assert_seed_0_curves_begin_alike,
    committed_results,
    docs_row_cells,
    rerun_seed_0,
)

PREFIX = 3


def test_hicra_table_summary_and_verdict_follow_from_the_file_s_curves():
    results = committed_results(table.NAME)
    assert table.summarise(results) == results["summary"]
    assert table.verdict(results["summary"]) == results["verdict"]
    assert results["verdict"]["verdict"] == "not testable here"
    assert set(results["curves"]["success"]) == set(table.ARMS)
    assert set(results["curves"]["hicra/planning_token_share"]) == {table.HICRA_ARM}
    for by_seed in results["curves"]["success"].values():
        assert sorted(by_seed, key=int) == [str(seed) for seed in range(8)]
        assert {len(curve) for curve in by_seed.values()} == {results["iterations"]}


def test_every_policy_token_of_every_hicra_run_was_planning():
    """The ablation's premise, from the file: the planning-token share is 1 at every iteration."""
    shares = committed_results(table.NAME)["curves"]["hicra/planning_token_share"][table.HICRA_ARM]
    assert all(share == 1.0 for curve in shares.values() for share in curve)


def test_hicra_table_file_records_numerics_settings_and_cost():
    results = committed_results(table.NAME)
    assert results["numerics"]["environment"] == PINNED_ENVIRONMENT
    hicra = results["settings"][table.HICRA_ARM]["algorithm"]
    assert (hicra["form"], hicra["alpha"], hicra["gram_source"]) == ("paper", 0.2, "given")
    assert hicra["grams"] == ["up", "down", "left", "right"]
    for block in results["cost"]["arms"].values():
        for cost in block["seeds"].values():
            assert cost["cpu_s"] > 0 and cost["generations"] == cost["env_steps"] > cost["episodes"]
    assert (RESULTS_DIR / f"{table.NAME}.png").stat().st_size > 0


def test_hicra_table_docs_row_is_one_row_of_six_cells():
    results = committed_results(table.NAME)
    cells = docs_row_cells(table.docs_row(results), results["verdict"]["verdict"])
    assert cells[4].startswith("not testable here: a model trained from scratch writes no planning phrases")


def test_the_hicra_arm_differs_from_grpo_only_in_its_algorithm_section(tmp_path):
    configs = {arm: arm_config(spec, 0, tmp_path, table.SHARED).to_dict() for arm, spec in table.ARMS.items()}
    algorithms = {arm: config.pop("algorithm") for arm, config in configs.items()}
    assert configs[table.HICRA_ARM] == configs["grpo"]
    assert algorithms[table.HICRA_ARM]["name"] == "hicra" and algorithms["grpo"]["estimator"] == "grpo"


def test_with_every_token_planning_the_advantage_is_a_plus_alpha_abs_a(tmp_path):
    """One group of three episodes through the arm's trainer, returns 1, 0 and 0.5: mean 0.5, population
    std √((0.25 + 0.25 + 0) / 3) = 0.4082483, so GRPO's A = +1.2247449, −1.2247449, 0 on every token.
    Every token is planning: A + 0.2·abs(A) = 1.4696938 (x 1.2), −0.9797959 (x 0.8), 0."""
    run = TrainingRun(arm_config(table.ARMS[table.HICRA_ARM], 0, tmp_path / "run", table.SHARED))
    ids = {word: run.tokenizer.convert_tokens_to_ids(word) for word in ("up", "down", "left", "right")}

    def episode(copy: int, words: list[str], rewards: list[float]) -> Trajectory:
        turns = [
            Turn("room", [3, 4], [ids[word]], word, "room", "o", "s", reward=reward)
            for word, reward in zip(words, rewards, strict=True)
        ]
        return Trajectory(0, copy, "t", turns, success=rewards[-1] == 1.0)

    batch = RolloutBatch(
        [
            episode(0, ["up", "left"], [0.0, 1.0]),
            episode(1, ["down", "right", "down"], [0.0, 0.0, 0.0]),
            episode(2, ["right"], [0.5]),
        ],
        0.0,
        0.0,
        6,
        10,
    )
    samples, stats = run.algorithm.advantages(batch, 0)
    policy = np.concatenate([sample.advantages[sample.mask] for sample in samples])
    np.testing.assert_allclose(
        policy, [1.4696938, 1.4696938, -0.9797959, -0.9797959, -0.9797959, 0.0], atol=1e-7
    )
    assert stats["hicra/planning_token_share"] == 1.0
    assert stats["hicra/amplified_tokens"] == 5  # the 0 advantage is not changed


def test_hicra_verdict_is_not_testable_and_says_whether_the_mechanics_held():
    def summary_of(shares: tuple[float, float], hicra: float, grpo: float) -> dict:
        return {
            table.HICRA_ARM: {
                "planning_token_share": {"min": shares[0], "max": shares[1]},
                "final_success": seed_spread([hicra]),
            },
            "grpo": {"final_success": seed_spread([grpo])},
        }

    assert table.verdict(summary_of((1.0, 1.0), 0.5, 0.375)) == {
        "verdict": "not testable here",
        "reason": "a model trained from scratch writes no planning phrases; mechanics ablation: every token "
        "was planning at every iteration, final success minus GRPO's +0.125",
    }
    assert (
        "the planning-token share ranged 0.500–1.000, not 1"
        in table.verdict(summary_of((0.5, 1.0), 0.5, 0.5))["reason"]
    )


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_hicra_table_seed_0_prefix_reruns_bit_for_bit(tmp_path):
    """Seed 0's first iterations of both arms again: every curve equals the committed one's first points."""
    committed = committed_results(table.NAME)
    rerun = rerun_seed_0(table.main, table.NAME, ["--iterations", str(PREFIX)], tmp_path)
    assert rerun["numerics"] == committed["numerics"] and rerun["settings"] == committed["settings"]
    assert_seed_0_curves_begin_alike(rerun, committed, PREFIX)
