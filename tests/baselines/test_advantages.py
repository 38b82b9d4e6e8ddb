"""Advantage estimators against groups computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from baselines.advantages import (
    discounted_returns,
    gae,
    gigpo_advantages,
    grpo_advantages,
    mt_grpo_advantages,
    ranked_candidate_pairs,
    rloo_advantages,
    sweet_preference_pairs,
    turn_end_rewards,
)

ROOT2 = math.sqrt(2.0)


def test_grpo_population_std_singleton_and_zero_variance():
    returns = [1.0, 0.0, 0.0, 5.0, 2.0, 2.0]
    groups = ["a", "a", "a", "single", "flat", "flat"]
    adv = grpo_advantages(returns, groups)
    # group a: mean 1/3, population std sqrt(2)/3
    np.testing.assert_allclose(adv[:3], [ROOT2, -1 / ROOT2, -1 / ROOT2])
    np.testing.assert_array_equal(adv[3:], [0.0, 0.0, 0.0])


def test_grpo_sample_std_and_mean_only_forms():
    groups = ["a", "a", "a"]
    np.testing.assert_allclose(
        grpo_advantages([1, 0, 0], groups, ddof=1), [2 / math.sqrt(3), -1 / math.sqrt(3), -1 / math.sqrt(3)]
    )
    np.testing.assert_allclose(grpo_advantages([1, 0, 0], groups, normalize="none"), [2 / 3, -1 / 3, -1 / 3])
    # float noise below eps is no signal
    np.testing.assert_array_equal(grpo_advantages([1.0, 1.0 + 1e-12], ["g", "g"]), [0.0, 0.0])


def test_grpo_rejects_mismatched_lengths_and_bad_normalization():
    with pytest.raises(ValueError):
        grpo_advantages([1.0, 2.0], ["a"])
    with pytest.raises(ValueError):
        grpo_advantages([1.0, 2.0], ["a", "a"], normalize="max")


def test_rloo_leave_one_out():
    adv = rloo_advantages([1.0, 0.0, 0.0, 3.0], ["a", "a", "a", "b"])
    np.testing.assert_allclose(adv, [1.0, -0.5, -0.5, 0.0])


def test_discounted_returns():
    np.testing.assert_allclose(discounted_returns([0.0, 0.0, 1.0], 0.5), [0.25, 0.5, 1.0])
    np.testing.assert_allclose(discounted_returns([1.0, 1.0], 1.0), [2.0, 1.0])
    assert discounted_returns([], 0.9).shape == (0,)


def _two_trajectories():
    # τ0 visits s0, s1, s2 and solves (reward 1 on its last step);
    # τ1 visits s0, s1, then s1 again (a revisit inside one trajectory) and gets 0.
    rewards = [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    keys = [["s0", "s1", "s2"], ["s0", "s1", "s1"]]
    return rewards, keys, ["g", "g"]


def test_gigpo_hand_computed_group_with_revisit_and_singleton():
    rewards, keys, groups = _two_trajectories()
    result = gigpo_advantages(rewards, keys, groups, gamma=0.5, omega=1.0)
    np.testing.assert_allclose(result.episode, [1.0, -1.0])
    np.testing.assert_allclose(result.step_returns[0], [0.25, 0.5, 1.0])
    # s0: {0.25, 0} -> ±1; s1: {0.5, 0, 0} (revisit counted twice) -> √2, −1/√2, −1/√2; s2 singleton -> 0
    np.testing.assert_allclose(result.step[0], [1.0, ROOT2, 0.0])
    np.testing.assert_allclose(result.step[1], [-1.0, -1 / ROOT2, -1 / ROOT2])
    np.testing.assert_allclose(result.advantages[0], [2.0, 1 + ROOT2, 1.0])
    np.testing.assert_allclose(result.advantages[1], [-2.0, -1 - 1 / ROOT2, -1 - 1 / ROOT2])
    assert sorted(result.anchor_group_sizes.tolist()) == [1, 2, 3]
    assert result.singleton_share == pytest.approx(1 / 3)


def test_gigpo_omega_extremes_and_unnormalized_steps():
    rewards, keys, groups = _two_trajectories()
    episode_only = gigpo_advantages(rewards, keys, groups, gamma=0.5, omega=0.0)
    np.testing.assert_allclose(episode_only.advantages[0], [1.0, 1.0, 1.0])
    np.testing.assert_allclose(episode_only.advantages[1], [-1.0, -1.0, -1.0])
    doubled = gigpo_advantages(rewards, keys, groups, gamma=0.5, omega=2.0)
    np.testing.assert_allclose(doubled.advantages[0], [3.0, 1 + 2 * ROOT2, 1.0])
    mean_only = gigpo_advantages(rewards, keys, groups, gamma=0.5, normalize="none")
    np.testing.assert_allclose(mean_only.step[0], [0.125, 1 / 3, 0.0])
    np.testing.assert_allclose(mean_only.episode, [0.5, -0.5])


def test_gigpo_unequal_lengths_episode_over_trajectories_vs_steps():
    rewards = [[0.0, 0.0, 1.0], [0.0]]
    keys = [["a", "b", "c"], ["a"]]
    paper = gigpo_advantages(rewards, keys, ["g", "g"], gamma=1.0, omega=0.0)
    np.testing.assert_allclose(paper.episode, [1.0, -1.0])
    # code variant: samples {1, 1, 1, 0}: mean 0.75, std sqrt(3)/4
    per_step = gigpo_advantages(rewards, keys, ["g", "g"], gamma=1.0, omega=0.0, episode_over="steps")
    np.testing.assert_allclose(per_step.episode, [1 / math.sqrt(3), -math.sqrt(3)])


def test_gigpo_groups_never_mix_and_singleton_trajectory_is_zero():
    rewards = [[1.0], [0.0], [1.0]]
    keys = [["s"], ["s"], ["s"]]
    result = gigpo_advantages(rewards, keys, ["a", "a", "b"], gamma=0.95)
    np.testing.assert_allclose(result.advantages[0], [2.0])
    np.testing.assert_allclose(result.advantages[1], [-2.0])
    np.testing.assert_allclose(result.advantages[2], [0.0])
    assert sorted(result.anchor_group_sizes.tolist()) == [1, 2]


def test_gigpo_validates_shapes():
    with pytest.raises(ValueError):
        gigpo_advantages([[0.0, 1.0]], [["a"]], ["g"])
    with pytest.raises(ValueError):
        gigpo_advantages([[0.0]], [["a"]], ["g", "h"])


def test_mt_grpo_alpha_extremes():
    intermediate = [[1.0], [0.0]]
    outcome = [0.0, 1.0]
    full = mt_grpo_advantages(intermediate, outcome, ["g", "g"], alpha=1.0)
    np.testing.assert_allclose(full[0], [0.0, -1.0])
    np.testing.assert_allclose(full[1], [0.0, 1.0])
    local = mt_grpo_advantages(intermediate, outcome, ["g", "g"], alpha=0.0)
    np.testing.assert_allclose(local[0], [1.0, -1.0])
    np.testing.assert_allclose(local[1], [-1.0, 1.0])
    half = mt_grpo_advantages(intermediate, outcome, ["g", "g"], alpha=0.5)
    np.testing.assert_allclose(half[0], [0.5, -1.0])
    with pytest.raises(ValueError):
        mt_grpo_advantages(intermediate, outcome, ["g", "g"], alpha=1.5)


def test_mt_grpo_unequal_turn_counts():
    # τ0: 3 turns, τ1: 2 turns, τ2: 1 turn. Turn 1 has an intermediate reward in τ0 and τ1,
    # turn 2 only in τ0 (singleton -> 0).
    intermediate = [[1.0, 1.0], [0.0], []]
    outcome = [1.0, 0.0, 0.0]
    adv = mt_grpo_advantages(intermediate, outcome, ["g"] * 3, alpha=1.0)
    np.testing.assert_allclose(adv[0], [1 + ROOT2, ROOT2, ROOT2])
    np.testing.assert_allclose(adv[1], [-1 - 1 / ROOT2, -1 / ROOT2])
    np.testing.assert_allclose(adv[2], [-1 / ROOT2])


def test_turn_end_rewards_modes():
    np.testing.assert_allclose(turn_end_rewards([2, 3], [0.5, 1.0], mode="turn"), [0, 0.5, 0, 0, 1.0])
    np.testing.assert_allclose(turn_end_rewards([2, 3], [0.5, 1.0], mode="outcome"), [0, 0, 0, 0, 1.0])
    np.testing.assert_allclose(turn_end_rewards([2, 3], [0.5, 1.0], mode="summed"), [0, 0, 0, 0, 1.5])
    # an empty turn's reward lands on the previous token
    np.testing.assert_allclose(turn_end_rewards([2, 0, 1], [0.5, 0.25, 1.0]), [0, 0.75, 1.0])


def test_gae_three_branch_delta_by_hand():
    rewards = turn_end_rewards([2, 2], [1.0, 2.0])  # [0, 1, 0, 2]
    values = np.full(4, 0.5)
    adv, returns = gae(rewards, values, gamma=1.0, lam=1.0)
    # δ = [0, 1, 0, 1.5]: R^I + V' − V at the turn end, R^O − V_T on the last token
    np.testing.assert_allclose(adv, [2.5, 2.5, 1.5, 1.5])
    np.testing.assert_allclose(returns, [3.0, 3.0, 2.0, 2.0])


def test_gae_lambda_one_returns_are_discounted_returns_and_lambda_zero_is_td():
    rng = np.random.default_rng(0)
    rewards, values = rng.normal(size=6), rng.normal(size=6)
    _, returns = gae(rewards, values, gamma=0.9, lam=1.0)
    np.testing.assert_allclose(returns, discounted_returns(rewards, 0.9))
    td, _ = gae(rewards, values, gamma=0.9, lam=0.0)
    next_values = np.append(values[1:], 0.0)
    np.testing.assert_allclose(td, rewards + 0.9 * next_values - values)


def test_sweet_preference_pairs():
    scores = [1.0, 0.5, 1.0, 0.0, 0.3, 0.2]
    groups = ["a", "a", "a", "a", "b", "b"]
    assert sweet_preference_pairs(scores, groups) == [(0, 1), (0, 3)]
    assert sweet_preference_pairs(scores, groups, min_margin=0.6) == [(0, 3)]
    assert sweet_preference_pairs([0.9, 0.2], ["b", "b"], success_score=0.9) == [(0, 1)]


def test_ranked_candidate_pairs_top_half_vs_bottom_half():
    assert ranked_candidate_pairs([0.1, 0.9, -0.5, 0.3]) == [(1, 0), (3, 2)]
    assert len(ranked_candidate_pairs(np.arange(16.0))) == 8
    assert ranked_candidate_pairs([1.0]) == []
