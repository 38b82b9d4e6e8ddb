"""Table 7 (GiGPO's state matching): the committed results file against its curves and the diagnostic,
the arms' anchors on an aliased pair of turns, the verdict rule, and seed 0's first iterations (slow)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from baselines.experiments import state_matching as table
from baselines.experiments.arms import arm_config, seed_spread
from baselines.experiments.common import PINNED_ENVIRONMENT, RESULTS_DIR
from baselines.rollout import Trajectory, Turn
from baselines.trainers.config import load_config
from baselines.trainers.critic_free import CriticFreeOptions, turn_advantages

from fixtures.paper_tables import (
    assert_seed_0_curves_begin_alike,
    committed_results,
    docs_row_cells,
    rerun_seed_0,
)

PREFIX = 3


def test_state_matching_summary_and_verdict_follow_from_the_file_s_curves():
    results = committed_results(table.NAME)
    assert table.summarise(results) == results["summary"]
    assert table.verdict(results["summary"], results["aliasing"]["aliased_turn_share"]) == results["verdict"]
    for metric in table.METRICS:
        assert set(results["curves"][metric]) == set(table.ARMS), metric
    for by_seed in results["curves"]["success"].values():
        assert sorted(by_seed, key=int) == [str(seed) for seed in range(8)]
        assert {len(curve) for curve in by_seed.values()} == {results["iterations"]}


def test_the_file_s_aliasing_figure_is_what_the_diagnostic_finds():
    """`agentenvs diagnose grouping` on the experiment's env, rerun: the same document, and aliasing > 0."""
    results = committed_results(table.NAME)
    env = load_config(table.CONFIG).env
    found = json.loads(json.dumps(table.aliasing(env.id, dict(env.kwargs))))  # JSON's str keys, as filed
    assert found == results["aliasing"]
    assert results["aliasing"]["aliased_turn_share"] > 0
    assert results["aliasing"]["command"] == (
        "agentenvs diagnose grouping agentenvs/BabyAI-GoToObjS4-v0 --env-kwarg max_turns=10"
    )


def test_state_matching_file_records_numerics_settings_and_cost():
    results = committed_results(table.NAME)
    assert results["numerics"]["environment"] == PINNED_ENVIRONMENT
    anchors = {arm: block["algorithm"]["anchor"] for arm, block in results["settings"].items()}
    assert anchors["gigpo_state"] == "state" and anchors["gigpo_obs"] == "obs"
    assert results["settings"]["grpo"]["algorithm"]["estimator"] == "grpo"
    for block in results["cost"]["arms"].values():
        for cost in block["seeds"].values():
            assert cost["cpu_s"] > 0 and cost["generations"] == cost["env_steps"] > cost["episodes"]
    assert (RESULTS_DIR / f"{table.NAME}.png").stat().st_size > 0


def test_state_matching_docs_row_is_one_row_of_six_cells():
    results = committed_results(table.NAME)
    cells = docs_row_cells(table.docs_row(results), results["verdict"]["verdict"])
    assert f"{results['aliasing']['aliased_turn_share']:.1%} of turns" in cells[2]
    assert f"{results['summary']['gigpo_obs']['grouping_disagreement']:.1%} of turns' obs group" in cells[2]
    assert cells[4].startswith(results["verdict"]["verdict"] + ":")


def test_the_arms_differ_only_in_their_algorithm_section(tmp_path):
    configs = {arm: arm_config(spec, 0, tmp_path).to_dict() for arm, spec in table.ARMS.items()}
    algorithms = {arm: config.pop("algorithm") for arm, config in configs.items()}
    assert configs["gigpo_state"] == configs["gigpo_obs"] == configs["grpo"]
    assert algorithms["gigpo_state"] == {**algorithms["gigpo_obs"], "anchor": "state"}


def test_obs_anchors_compare_actions_from_aliased_states_and_state_anchors_do_not(tmp_path):
    """Two one-turn episodes of one group read the same observation "o" from different states s1, s2;
    returns 1 and 0. Episode part: mean 0.5, population std 0.5 → A^E = +1, −1. State anchors: s1 and s2
    are singletons → A^S = 0, A = (+1, −1). Obs anchors: one group {1, 0} → A^S = +1, −1, and with
    ω = 1, A = (+2, −2): the second action is blamed twice for an outcome its state decided."""

    def episode(copy: int, state: str, reward: float) -> Trajectory:
        turn = Turn("p", [1], [2], "go forward", "o", "o", state, reward=reward)
        return Trajectory(0, copy, "GoToObjS4/0", [turn], success=reward > 0)

    batch = [episode(0, "s1", 1.0), episode(1, "s2", 0.0)]
    found = {}
    for arm in ("gigpo_state", "gigpo_obs"):
        options = arm_config(table.ARMS[arm], 0, tmp_path).algorithm_options(CriticFreeOptions)
        advantages, _ = turn_advantages(options, batch)
        found[arm] = np.concatenate(advantages)
    np.testing.assert_allclose(found["gigpo_state"], [1.0, -1.0], rtol=1e-5)
    np.testing.assert_allclose(found["gigpo_obs"], [2.0, -2.0], rtol=1e-5)


def summary_of(final: dict[str, list[float]], censored: dict[str, list[int]]) -> dict:
    return {
        arm: {"final_success": seed_spread(final[arm]), "censored_episodes": seed_spread(censored[arm])}
        for arm in final
    }


def test_state_matching_verdict_rule_on_hand_made_summaries():
    # state 0.9 vs obs 0.8 final (gap +0.100); episodes 384 vs 448 (gap −64): holds
    summary = summary_of(
        {"gigpo_state": [0.9], "gigpo_obs": [0.8]}, {"gigpo_state": [384], "gigpo_obs": [448]}
    )
    assert table.verdict(summary, 0.2) == {
        "verdict": "holds",
        "reason": "state-key minus obs-key GiGPO: final success +0.100, episodes to threshold -64",
    }
    # higher final success but later to the threshold: does not hold
    later = summary_of({"gigpo_state": [0.9], "gigpo_obs": [0.8]}, {"gigpo_state": [512], "gigpo_obs": [448]})
    assert table.verdict(later, 0.2)["verdict"] == "does not hold"
    # equal final success: does not hold (the gap must exceed 0)
    tie = summary_of({"gigpo_state": [0.8], "gigpo_obs": [0.8]}, {"gigpo_state": [384], "gigpo_obs": [448]})
    assert table.verdict(tie, 0.2)["verdict"] == "does not hold"
    # no aliasing, nothing to cost
    assert table.verdict(summary, 0.0) == {
        "verdict": "not testable here",
        "reason": "the diagnostic finds no aliased turn",
    }


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_state_matching_seed_0_prefix_reruns_bit_for_bit(tmp_path):
    """Seed 0's first iterations of every arm again: every curve equals the committed one's first points."""
    committed = committed_results(table.NAME)
    rerun = rerun_seed_0(table.main, table.NAME, ["--iterations", str(PREFIX)], tmp_path)
    assert rerun["numerics"] == committed["numerics"] and rerun["settings"] == committed["settings"]
    assert rerun["aliasing"] == committed["aliasing"]
    assert_seed_0_curves_begin_alike(rerun, committed, PREFIX)
