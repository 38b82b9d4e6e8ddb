"""Table 5 (ArCHer's sample efficiency): the committed results file against its curves, the verdict rule on
hand-made summaries, and seed 0's first iterations rerun bit for bit (slow)."""

from __future__ import annotations

import pytest

from baselines.experiments import archer_efficiency as table
from baselines.experiments.arms import seed_spread
from baselines.experiments.common import PINNED_ENVIRONMENT, RESULTS_DIR

from fixtures.paper_tables import (
    assert_seed_0_curves_begin_alike,
    committed_results,
    docs_row_cells,
    rerun_seed_0,
)

PREFIX = 4  # ArCHer's 3 warm-up iterations and one actor update


def test_archer_table_summary_and_verdict_follow_from_the_file_s_curves():
    results = committed_results(table.NAME)
    assert table.summarise(results) == results["summary"]
    assert table.verdict(results["summary"]) == results["verdict"]
    assert set(results["curves"]["success"]) == set(table.ARMS)
    for by_seed in results["curves"]["success"].values():
        assert sorted(by_seed, key=int) == [str(seed) for seed in range(8)]
        assert {len(curve) for curve in by_seed.values()} == {results["iterations"]}


def test_archer_table_file_records_command_numerics_settings_and_cost():
    results = committed_results(table.NAME)
    assert results["numerics"]["environment"] == PINNED_ENVIRONMENT
    assert results["numerics"]["deterministic_algorithms"] is True
    assert results["settings"]["archer"]["algorithm"]["critic_steps"] == 30  # archer_sokoban.yaml as it is
    assert results["settings"]["ppo"]["algorithm"]["decomposition"] == "trajectory"
    assert results["settings"]["grpo"]["algorithm"]["estimator"] == "grpo"
    for arm, block in results["cost"]["arms"].items():
        for seed, cost in block["seeds"].items():
            assert cost["cpu_s"] > 0 and cost["wall_s"] > 0, (arm, seed)
            assert cost["episodes"] == results["iterations"] * results["episodes_per_iteration"]
            assert cost["generations"] == cost["env_steps"] > cost["episodes"]
    assert (RESULTS_DIR / f"{table.NAME}.png").stat().st_size > 0


def test_archer_table_docs_row_is_one_row_of_six_cells():
    results = committed_results(table.NAME)
    cells = docs_row_cells(table.docs_row(results), results["verdict"]["verdict"])
    mean = results["summary"]["archer"]["censored_episodes"]["mean"]
    assert f"ArCHer: {mean:,.0f} ± " in cells[3]
    assert f"{results['cost']['total']['cpu_s']:,.0f} CPU s over 24 runs" in cells[5]


def summary_of(censored: dict[str, list[int]], reached: dict[str, int]) -> dict:
    return {
        arm: {"censored_episodes": seed_spread(values), "runs_reaching_threshold": reached[arm]}
        for arm, values in censored.items()
    }


def test_archer_verdict_rule_on_hand_made_summaries():
    # censored means: ArCHer (320 + 640) / 2 = 480, PPO 1152, GRPO (800 + 1152) / 2 = 976 → holds
    holds = table.verdict(
        summary_of(
            {"archer": [320, 640], "ppo": [1152, 1152], "grpo": [800, 1152]},
            {"archer": 2, "ppo": 0, "grpo": 1},
        )
    )
    assert holds == {
        "verdict": "holds",
        # gap 976 - 480 = 496; σ 160 and 176 over 2 seeds each: sqrt(160² + 176²) = 237.9
        "reason": "ArCHer needs the fewest episodes (censored means: archer 480, grpo 976, ppo 1,152; "
        "grpo minus ArCHer +496 ± 238 s.e.)",
    }
    # ArCHer 976 against GRPO 480: GRPO is faster
    assert (
        table.verdict(
            summary_of(
                {"archer": [800, 1152], "ppo": [1152, 1152], "grpo": [320, 640]},
                {"archer": 1, "ppo": 0, "grpo": 2},
            )
        )["verdict"]
        == "does not hold"
    )
    # a tie with PPO is not fewer
    assert (
        table.verdict(
            summary_of({"archer": [640], "ppo": [640], "grpo": [1152]}, {"archer": 1, "ppo": 1, "grpo": 0})
        )["verdict"]
        == "does not hold"
    )
    # nobody reaches the threshold: every arm sits at the budget, nothing to compare
    assert table.verdict(
        summary_of({"archer": [1152], "ppo": [1152], "grpo": [1152]}, {"archer": 0, "ppo": 0, "grpo": 0})
    ) == {"verdict": "not testable here", "reason": "no run of any arm reaches the threshold"}


def test_cpu_per_episode_is_over_the_timed_runs():
    # 30 CPU s + 18 CPU s over 2 x 1152 episodes = 0.0208 s per episode; an untimed run is left out
    timed = {"cpu_s": 30.0, "episodes": 1152}
    results = {
        "cost": {
            "arms": {
                "archer": {
                    "seeds": {"0": timed, "1": {**timed, "cpu_s": 18.0}, "2": {**timed, "cpu_s": None}}
                },
                "ppo": {"seeds": {"0": {**timed, "cpu_s": None}}},
            }
        }
    }
    assert table.cpu_per_episode(results, "archer") == pytest.approx(48 / 2304)
    assert table.cpu_per_episode(results, "ppo") is None


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_archer_table_seed_0_prefix_reruns_bit_for_bit(tmp_path):
    """Seed 0's first iterations of every arm again: every curve equals the committed one's first points."""
    committed = committed_results(table.NAME)
    rerun = rerun_seed_0(table.main, table.NAME, ["--iterations", str(PREFIX)], tmp_path)
    assert rerun["numerics"] == committed["numerics"]
    assert rerun["settings"] == committed["settings"]
    assert_seed_0_curves_begin_alike(rerun, committed, PREFIX)


def test_archer_gap_standard_error_is_the_two_sample_error_of_the_censored_means():
    """Seeds 832, 1152 against 1152, 1152: sample variances 51,200 and 0, so sqrt(51,200 / 2) = 160."""

    def arm(*episodes: int) -> dict:
        return {"censored_episodes": seed_spread(episodes)}

    assert table.gap_standard_error(arm(832, 1152), arm(1152, 1152)) == 160.0
    assert table.gap_standard_error(arm(1000, 1000), arm(1152, 1152)) == 0.0


def test_archer_verdict_reason_states_the_gap_to_the_runner_up_with_its_error():
    results = committed_results(table.NAME)
    reason = results["verdict"]["reason"]
    summary = results["summary"]
    means = {name: block["censored_episodes"]["mean"] for name, block in summary.items()}
    runner_up = min((name for name in means if name != "archer"), key=means.__getitem__)
    assert f"{runner_up} minus ArCHer {means[runner_up] - means['archer']:+,.0f} ± " in reason
