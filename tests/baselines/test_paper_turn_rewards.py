"""Table 1 (turn-level rewards on Sokoban): the rules with worked numbers, the committed results file
recomputed from its curves, its docs row, and seed 0's first iterations rerun bit for bit."""

from __future__ import annotations

import pytest

from baselines.experiments import turn_rewards
from baselines.experiments.turn_rewards import (
    ARMS,
    CURVES,
    METRICS,
    claim,
    docs_row,
    final_value,
    summarise,
    valid_action_rate,
    verdict,
)
from baselines.trainers.config import ConfigError, load_config

from fixtures.paper_tables import (
    assert_seed_0_curves_begin_alike,
    committed_results,
    docs_row_cells,
    rerun_seed_0,
)

PREFIX_ITERATIONS = 3


def test_valid_action_rate_is_the_share_of_turns_read_whole():
    # 32 episodes of 3 turns with 24 invalid turns: the record logs means per episode,
    # 24/32 = 0.75 invalid and 96/32 = 3.0 turns, so 1 - 0.75/3 = 0.75 of the turns were read
    assert valid_action_rate({"component/invalid_action": 0.75, "turns": 3.0}) == 0.75
    # 4 episodes, 10 turns, 2 invalid: 0.5 and 2.5 per episode, 1 - 0.5/2.5 = 0.8
    assert valid_action_rate({"component/invalid_action": 0.5, "turns": 2.5}) == pytest.approx(0.8)
    assert valid_action_rate({"component/invalid_action": 0.0, "turns": 2.0}) == 1.0


def test_final_value_is_the_mean_of_the_last_window():
    # (0.5 + 1.0) / 2 = 0.75; window 1: the last point; a window over the whole curve: its mean
    assert final_value([0.0, 0.25, 0.5, 1.0], 2) == 0.75
    assert final_value([0.0, 0.25, 0.5, 1.0], 1) == 1.0
    assert final_value([0.0, 0.25, 0.5, 1.0], 4) == 0.4375


def test_claim_compares_the_gap_with_twice_its_standard_error():
    # [0.5, 0.7] vs [0.1, 0.3]: gap 0.4; sample variances 0.02 each; SE = sqrt(0.02/2 + 0.02/2) = 0.14142
    found = claim([0.5, 0.7], [0.1, 0.3])
    assert found["gap"] == pytest.approx(0.4)
    assert found["standard_error"] == pytest.approx(0.141421356)
    assert found["outcome"] == "holds"  # 0.4 > 2 x 0.1414 = 0.2828
    assert claim([0.1, 0.3], [0.5, 0.7])["outcome"] == "reversed"
    # [0.5, 0.7] vs [0.4, 0.6]: gap 0.1 < 0.2828: unresolved
    assert claim([0.5, 0.7], [0.4, 0.6])["outcome"] == "unresolved"
    # no spread: any positive gap exceeds 2 x 0; no gap does not
    assert claim([0.2, 0.2], [0.1, 0.1])["outcome"] == "holds"
    assert claim([0.0, 0.0], [0.0, 0.0])["outcome"] == "unresolved"
    # one seed a side: no variance, so never more than unresolved
    assert claim([0.9], [0.1]) == {"gap": pytest.approx(0.8), "standard_error": None, "outcome": "unresolved"}


def test_summarise_gives_each_seeds_final_value_and_their_spread():
    # window 2: seed 0 finals (0.5 + 1.0)/2 = 0.75, seed 1 (0 + 0.5)/2 = 0.25;
    # mean 0.5, population std 0.25, range 0.25-0.75
    curves = {"success": {"mt_ppo": {"0": [0.0, 0.5, 1.0], "1": [0.0, 0.0, 0.5]}}}
    summary = summarise(curves, ["success"], 2)
    assert summary == {
        "success": {
            "mt_ppo": {
                "finals": {"0": 0.75, "1": 0.25},
                "mean": 0.5,
                "std": 0.25,
                "min": 0.25,
                "max": 0.75,
                "seeds": 2,
            }
        }
    }


def summary_of(success: dict[str, list[float]], valid: dict[str, list[float]]) -> dict:
    """A summary whose arms have these per-seed finals."""
    curves = {
        metric: {arm: {str(seed): [v] for seed, v in enumerate(values)} for arm, values in found.items()}
        for metric, found in (("success", success), ("valid_action_rate", valid))
    }
    return summarise(curves, METRICS, 1)


def test_verdict_holds_only_when_every_key_claim_holds():
    # the paper's order with clear gaps (0.1 apart, spread 0.01 -> SE 0.01): every key claim holds
    ordered = {arm: [0.1 * i + 0.05, 0.1 * i + 0.06] for i, arm in enumerate(ARMS)}
    judged = verdict(summary_of(ordered, ordered), 1)
    assert judged["verdict"] == "holds"
    assert judged["valid_action_rate"]["verdict"] == "holds"
    assert [c["outcome"] for c in judged["claims"]["success"]["adjacent_claims"]] == ["holds"] * 4
    # PPO-MR no better than PPO-OR: that key claim is unresolved, so the table does not hold
    tied = {**ordered, "ppo_mr": ordered["ppo_or"]}
    judged = verdict(summary_of(tied, ordered), 1)
    assert judged["verdict"] == "does not hold"
    assert judged["reason"] == "5 of 6 key gaps exceed 2 SE; unresolved: PPO-MR > PPO-OR"
    assert judged["key_claims_held"] == 5
    # MT-PPO at [0.0, 0.01], below every arm: sample variance 5e-5 a side, SE = sqrt(2 x 5e-5 / 2) = 0.00707,
    # gaps -0.05, -0.15, -0.25, -0.35 all below -2 SE: reversed; the MR > OR claims still hold
    lowest = {**ordered, "mt_ppo": [0.0, 0.01]}
    assert verdict(summary_of(lowest, ordered), 1)["reason"] == (
        "2 of 6 key gaps exceed 2 SE; reversed: MT-PPO > GRPO-OR (-0.050 ± 0.007), "
        "MT-PPO > GRPO-MR (-0.150 ± 0.007), MT-PPO > PPO-OR (-0.250 ± 0.007), "
        "MT-PPO > PPO-MR (-0.350 ± 0.007)"
    )
    # GRPO-MR (0.30) above PPO-OR (0.25) reverses an adjacent pair of the paper's order but no key claim
    swapped = {**ordered, "grpo_mr": [0.3, 0.31]}
    judged = verdict(summary_of(swapped, ordered), 1)
    assert judged["verdict"] == "holds"
    assert [c["outcome"] for c in judged["claims"]["success"]["adjacent_claims"]] == [
        "holds",
        "reversed",
        "holds",
        "holds",
    ]


def test_verdict_is_not_testable_when_no_run_solves_a_room():
    zero = {arm: [0.0, 0.0] for arm in ARMS}
    valid = {arm: [0.1 * i, 0.1 * i + 0.01] for i, arm in enumerate(ARMS)}
    judged = verdict(summary_of(zero, valid), 5)
    assert judged["verdict"] == "not testable here"
    assert judged["reason"] == "no run solves a room in its last 5 iterations"
    assert judged["valid_action_rate"]["verdict"] == "holds"


def test_arms_differ_only_in_their_algorithm_section():
    # same env, rooms, model, sampler (one full-context sequence per episode), optimiser and run
    sections = [load_config(arm.config, list(arm.overrides)).to_dict() for arm in ARMS.values()]
    for section in ("env", "policy", "sampler", "optim", "run"):
        assert all(s[section] == sections[0][section] for s in sections)
    assert sections[0]["sampler"]["context"] == "full"
    algorithms = [(s["algorithm"]["name"], s["algorithm"].get("estimator")) for s in sections]
    assert algorithms == [
        ("critic_free", "grpo_or"),
        ("critic_free", "grpo"),
        ("ppo", None),
        ("ppo", None),
        ("ppo", None),
    ]
    assert [s["algorithm"].get("reward_placement") for s in sections[2:]] == ["outcome", "summed", "turn"]


def test_a_window_outside_the_run_is_refused():
    with pytest.raises(ConfigError, match="--window must be in"):
        turn_rewards.parse_arguments("table 1", ["--iterations", "4", "--window", "5"])


def test_committed_summary_and_verdict_are_recomputed_from_its_curves():
    results = committed_results(turn_rewards.NAME)
    assert results["summary"] == summarise(results["curves"], METRICS, results["window"])
    assert results["verdict"] == verdict(results["summary"], results["window"])
    assert sorted(results["curves"]) == sorted(CURVES)
    for metric in CURVES:
        assert list(results["curves"][metric]) == list(ARMS)
        for by_seed in results["curves"][metric].values():
            assert list(by_seed) == [str(seed) for seed in range(8)]
            assert all(len(curve) == results["iterations"] for curve in by_seed.values())
    rates = [
        v for by_seed in results["curves"]["valid_action_rate"].values() for c in by_seed.values() for v in c
    ]
    assert all(0.0 <= rate <= 1.0 for rate in rates)
    # every run was timed and counted: 32 episodes x at most 3 turns an iteration
    for block in results["cost"]["arms"].values():
        assert block["timed_runs"] == block["runs"] == 8
        for cost in block["seeds"].values():
            assert cost["generations"] == cost["env_steps"] <= results["iterations"] * 32 * 3


def test_docs_row_of_the_committed_file_has_six_cells():
    results = committed_results(turn_rewards.NAME)
    docs_row_cells(docs_row(results), results["verdict"]["verdict"])


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_turn_rewards_seed_0_reruns_its_first_iterations_bit_for_bit(tmp_path):
    argv = ["--iterations", str(PREFIX_ITERATIONS), "--window", "1"]
    rerun = rerun_seed_0(turn_rewards.main, turn_rewards.NAME, argv, tmp_path)
    results = committed_results(turn_rewards.NAME)
    assert_seed_0_curves_begin_alike(rerun, results, PREFIX_ITERATIONS)
    assert rerun["numerics"] == results["numerics"]
