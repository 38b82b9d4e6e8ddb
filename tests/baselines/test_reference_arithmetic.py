"""The estimators' released-code options: differential tests against verl, hand-worked cases for the rest.

verl is installed (the ``verl`` extra), so GRPO and RLOO are compared with
``verl.trainer.ppo.core_algos`` on random groups. verl-agent, sweet_rl and
Multi-Turn-RL-Agent are not installable; their behaviour is pinned by cases
worked by hand from their source, each citing the lines it follows:

- verl-agent at its upstream commit 2716b30 (2026-02-11): gigpo/core_gigpo.py,
  verl/trainer/ppo/core_algos.py, agent_system/reward_manager/episode.py;
- facebookresearch/sweet_rl at 38daf2a: scripts/evaluate_code.py,
  scripts/evaluate_html.py, scripts/generate_random_pairs_from_ranks.py;
- SiliangZeng/Multi-Turn-RL-Agent at 7dbdd08: verifiers/trainers/grpo_env_trainer.py,
  verifiers/trainers/mt_grpo_env_trainer.py.
"""

from __future__ import annotations

import math
import random
from difflib import SequenceMatcher

import numpy as np
import pytest

from agentenvs.diagnostics.grouping import similarity_anchor_keys
from baselines.advantages import (
    REFERENCE_PRESETS,
    estimator_options,
    gigpo_advantages,
    grpo_advantages,
    mt_grpo_advantages,
    ranked_candidate_pairs,
    reference_preset,
    rloo_advantages,
    similarity_options,
    sweet_preference_pairs,
)

# ---------------------------------------------------------------- verl (installed): differential


def _random_batch(rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
    """Scores of groups of every awkward kind: singletons, ties, all zero, tiny and ordinary spreads."""
    scores: list[float] = []
    groups: list[str] = []
    for g in range(int(rng.integers(4, 12))):
        kind = rng.choice(["singleton", "ties", "zeros", "tiny", "normal", "binary"])
        size = 1 if kind == "singleton" else int(rng.integers(2, 9))
        if kind == "singleton":
            values = rng.normal(size=1)
        elif kind == "ties":
            values = np.full(size, rng.integers(-8, 9) / 8)  # dyadic: exact in float32 and float64
        elif kind == "zeros":
            values = np.zeros(size)
        elif kind == "tiny":
            values = rng.normal(scale=1e-6, size=size)
        elif kind == "binary":
            values = rng.integers(0, 2, size=size).astype(np.float64)
        else:
            values = rng.normal(size=size)
        scores.extend(values.astype(np.float32).tolist())
        groups.extend([f"g{g}"] * size)
    order = rng.permutation(len(scores))  # members of a group need not be adjacent
    return np.asarray(scores, dtype=np.float32)[order], [groups[i] for i in order]


def _verl_scores(function, scores: np.ndarray, groups: list[str], **kwargs) -> np.ndarray:
    torch = pytest.importorskip("torch")
    length = 3
    rewards = torch.zeros(len(scores), length, dtype=torch.float32)
    rewards[:, -1] = torch.from_numpy(scores)
    mask = torch.ones(len(scores), length)
    advantages, _ = function(
        token_level_rewards=rewards, response_mask=mask, index=np.array(groups, dtype=object), **kwargs
    )
    return advantages[:, -1].double().numpy()


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("normalize", ["std", "none"])
def test_grpo_reference_preset_matches_verl(seed, normalize):
    core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
    scores, groups = _random_batch(np.random.default_rng(seed))
    theirs = _verl_scores(
        core_algos.compute_grpo_outcome_advantage,
        scores,
        groups,
        norm_adv_by_std_in_grpo=normalize == "std",
    )
    ours = grpo_advantages(scores, groups, normalize=normalize, **reference_preset("grpo", "verl"))
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("seed", range(20))
def test_rloo_reference_preset_matches_verl(seed):
    core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
    scores, groups = _random_batch(np.random.default_rng(100 + seed))
    theirs = _verl_scores(core_algos.compute_rloo_outcome_advantage, scores, groups)
    ours = rloo_advantages(scores, groups, **reference_preset("rloo", "verl"))
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_the_paper_form_differs_from_verl_where_the_issue_says():
    core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
    tiny = np.array([0.0, 3e-6], dtype=np.float32)
    theirs = _verl_scores(core_algos.compute_grpo_outcome_advantage, tiny, ["g", "g"])
    np.testing.assert_allclose(theirs, [-0.4806, 0.4806], atol=1e-3)
    np.testing.assert_allclose(
        grpo_advantages(tiny, ["g", "g"], ddof=1), [-1 / math.sqrt(2), 1 / math.sqrt(2)]
    )
    single = np.array([2.0], dtype=np.float32)
    np.testing.assert_allclose(
        _verl_scores(core_algos.compute_grpo_outcome_advantage, single, ["s"]), [2.0], rtol=1e-5
    )
    np.testing.assert_allclose(_verl_scores(core_algos.compute_rloo_outcome_advantage, single, ["s"]), [2.0])
    assert grpo_advantages(single, ["s"])[0] == 0.0 and rloo_advantages(single, ["s"])[0] == 0.0


# ---------------------------------------------------------------- the options themselves


def test_eps_mode_and_singleton_options_by_hand():
    # values [0, 3e-6], ddof=1: std 2.1213e-6; add: ±1.5e-6 / 3.1213e-6 = ±0.4806, cutoff: ±1/√2
    add = grpo_advantages([0.0, 3e-6], ["g", "g"], ddof=1, eps_mode="add")
    np.testing.assert_allclose(add, [-0.48056, 0.48056], atol=1e-5)
    below = grpo_advantages([0.0, 1e-6], ["g", "g"], ddof=1)  # std 7.1e-7 ≤ eps: no signal
    np.testing.assert_array_equal(below, [0.0, 0.0])
    np.testing.assert_allclose(grpo_advantages([3.0], ["s"], singleton="keep"), [3.0])
    np.testing.assert_allclose(
        grpo_advantages([3.0], ["s"], singleton="keep", eps_mode="add"), [3.0 / (1 + 1e-6)]
    )
    np.testing.assert_allclose(
        rloo_advantages([3.0, 1.0, 2.0], ["s", "g", "g"], singleton="keep"), [3.0, -1.0, 1.0]
    )
    with pytest.raises(ValueError):
        grpo_advantages([1.0, 2.0], ["g", "g"], eps_mode="clip")
    with pytest.raises(ValueError):
        grpo_advantages([1.0, 2.0], ["g", "g"], episode_over="steps")  # needs step_counts


def test_grpo_over_step_rows_is_verl_agent_grpo():
    # verl-agent core_algos.py:144-171 (at 2716b30): every step row scores its episode's return
    # (agent_system/reward_manager/episode.py:72-78) and the group statistics run over the rows
    # (compute_mean_std_cross_steps=True, line 120), torch.std, std + 1e-6 (line 169).
    # R = [1, 0, 0], lengths [1, 4, 2]: rows {1, 0×6}: mean 1/7, sample std √(1/7).
    preset = reference_preset("grpo")
    adv = grpo_advantages([1.0, 0.0, 0.0], ["g"] * 3, step_counts=[1, 4, 2], **preset)
    np.testing.assert_allclose(adv, [2.26778, -0.37796, -0.37796], atol=1e-5)
    over_trajectories = grpo_advantages([1.0, 0.0, 0.0], ["g"] * 3, ddof=1)
    np.testing.assert_allclose(over_trajectories, [1.15470, -0.57735, -0.57735], atol=1e-5)
    # RLOO over rows (core_algos.py:320-323): N = 7 rows, A = 7/6 · (R − 1/7)
    rloo = rloo_advantages([1.0, 0.0, 0.0], ["g"] * 3, step_counts=[1, 4, 2], **reference_preset("rloo"))
    np.testing.assert_allclose(rloo, [1.0, -1 / 6, -1 / 6])


# ---------------------------------------------------------------- GiGPO (verl-agent, hand-worked)


def test_gigpo_reference_preset_by_hand():
    # Group g: τ0 rewards [0, 1] keys [a, b]; τ1 rewards [0, 0, 0] keys [a, b, b]; group h: τ2 [1] key [c].
    rewards = [[0.0, 1.0], [0.0, 0.0, 0.0], [1.0]]
    keys = [["a", "b"], ["a", "b", "b"], ["c"]]
    result = gigpo_advantages(rewards, keys, ["g", "g", "h"], gamma=0.5, **reference_preset("gigpo"))
    # Episode part, core_gigpo.py:217-237: rows of g score {1, 1, 0, 0, 0}: mean 0.4,
    # torch.std (ddof=1) √0.3; A = (R − 0.4) / (√0.3 + 1e-6).
    std = math.sqrt(0.3) + 1e-6
    np.testing.assert_allclose(result.episode[:2], [0.6 / std, -0.4 / std])
    # Group h has one row: mean 0, std 1 (lines 225-227): A = 1 / (1 + 1e-6).
    np.testing.assert_allclose(result.episode[2], 1 / (1 + 1e-6))
    # Step part, core_gigpo.py:363-381: step returns (γ=0.5) τ0 [0.5, 1], τ1 [0, 0, 0].
    # Anchor a: {0.5, 0}: mean 0.25, std √0.125 → ±0.25/(√0.125 + 1e-6).
    # Anchor b: {1, 0, 0}: mean 1/3, std √(1/3) → 2/3 / (√(1/3)+1e-6), −1/3 / (…).
    # Anchor c (singleton): mean = its own value, std 1 (lines 367-369) → 0.
    sa = math.sqrt(0.125) + 1e-6
    sb = math.sqrt(1 / 3) + 1e-6
    np.testing.assert_allclose(result.step[0], [0.25 / sa, (2 / 3) / sb])
    np.testing.assert_allclose(result.step[1], [-0.25 / sa, (-1 / 3) / sb, (-1 / 3) / sb])
    np.testing.assert_allclose(result.step[2], [0.0])
    # The paper form of the same group: episode over trajectories {1, 0}, population std 0.5.
    paper = gigpo_advantages(rewards, keys, ["g", "g", "h"], gamma=0.5)
    np.testing.assert_allclose(paper.episode, [1.0, -1.0, 0.0])


def test_gigpo_mean_norm_mode_of_the_released_webshop_and_sokoban_scripts():
    # examples/gigpo_trainer/run_webshop.sh:11 and run_sokoban.sh:10 use mode="mean_norm":
    # remove_std (core_gigpo.py:153-156), scores − mean in both parts (lines 234-235, 378-379).
    rewards = [[0.0, 1.0], [0.0, 0.0, 0.0]]
    keys = [["a", "b"], ["a", "b", "b"]]
    result = gigpo_advantages(
        rewards, keys, ["g", "g"], gamma=0.5, normalize="none", **reference_preset("gigpo")
    )
    np.testing.assert_allclose(result.episode, [0.6, -0.4])
    np.testing.assert_allclose(result.step[0], [0.25, 2 / 3])
    single = gigpo_advantages([[2.0]], [["s"]], ["h"], normalize="none", **reference_preset("gigpo"))
    np.testing.assert_allclose(single.advantages[0], [2.0])


# ---------------------------------------------------------------- MT-GRPO (Multi-Turn-RL-Agent, hand-worked)


def test_mt_grpo_released_form_weights_the_intermediate_term():
    # G = 4, equal outcomes, R^I = [1, 0, 1, 0], α = 0.5.
    intermediate = [[1.0], [0.0], [1.0], [0.0]]
    outcome = [1.0, 1.0, 1.0, 1.0]
    groups = ["g"] * 4
    paper = mt_grpo_advantages(intermediate, outcome, groups, alpha=0.5)
    # Eq. 5: turn 1 = A^I + α·A^O = ±1 (population std 0.5), turn 2 = A^O = 0
    np.testing.assert_allclose([a[0] for a in paper], [1.0, -1.0, 1.0, -1.0])
    # mt_grpo_env_trainer.py:202: turn-1 tokens get outcome_adv + coef · turn_adv, later tokens
    # outcome_adv; grpo_env_trainer.py:261-267 normalises with torch.std (ddof=1) + 1e-4:
    # A^I = ±0.5 / (√(1/3) + 1e-4).
    released = mt_grpo_advantages(intermediate, outcome, groups, alpha=0.5, **reference_preset("mt_grpo"))
    turn_adv = 0.5 / (math.sqrt(1 / 3) + 1e-4)
    np.testing.assert_allclose([a[0] for a in released], [0.5 * turn_adv, -0.5 * turn_adv] * 2)
    np.testing.assert_allclose([a[1] for a in released], [0.0] * 4)
    # with the same normalisation the two forms differ by exactly α = 0.5 here
    same_norm = mt_grpo_advantages(intermediate, outcome, groups, alpha=0.5, mt_grpo_form="released")
    np.testing.assert_allclose([a[0] for a in same_norm], [0.5 * a[0] for a in paper])


def test_mt_grpo_released_form_without_a_tool_turn_takes_the_combined_advantage():
    # mt_grpo_env_trainer.py:197-206: a completion without a result segment gets the
    # advantage of the combined reward (turn + outcome, normalised like the others).
    intermediate = [[1.0], [], [0.0]]
    outcome = [1.0, 0.0, 0.0]
    released = mt_grpo_advantages(intermediate, outcome, ["g"] * 3, alpha=1.0, **reference_preset("mt_grpo"))
    combined = np.array([2.0, 0.0, 0.0])
    std = combined.std(ddof=1) + 1e-4
    np.testing.assert_allclose(released[1], [(0.0 - combined.mean()) / std])
    # A^I pools all three (the missing one counts 0): {1, 0, 0}
    turn = (np.array([1.0, 0.0, 0.0]) - 1 / 3) / (math.sqrt(1 / 3) + 1e-4)
    outcome_adv = (np.array(outcome) - 1 / 3) / (math.sqrt(1 / 3) + 1e-4)
    np.testing.assert_allclose(released[0], [outcome_adv[0] + turn[0], outcome_adv[0]])
    np.testing.assert_allclose(released[2], [outcome_adv[2] + turn[2], outcome_adv[2]])


# ---------------------------------------------------------------- SWEET-RL (sweet_rl, hand-worked)


def test_sweet_critic_frontend_pairs_every_two_scores_at_least_the_margin_apart():
    # scripts/evaluate_html.py:121-149: for j < j2 of one task, skip |s_j − s_j2| < 0.1,
    # else the higher one is chosen; no success needed.
    frontend = reference_preset("sweet_critic", "sweet-rl-frontend")
    assert sweet_preference_pairs([0.9, 0.5, 0.2], ["t"] * 3, **frontend) == [(0, 1), (0, 2), (1, 2)]
    assert sweet_preference_pairs([0.2, 0.5, 0.55], ["t"] * 3, **frontend) == [(1, 0), (2, 0)]
    assert sweet_preference_pairs([0.4, 0.5], ["t", "t"], **frontend) == []  # 0.5 − 0.4 = 0.0999… in float
    assert sweet_preference_pairs([0.25, 0.5], ["t", "t"], **frontend) == [(1, 0)]
    # the paper's best-vs-worse pairs need a successful best trajectory
    assert sweet_preference_pairs([0.9, 0.5, 0.2], ["t"] * 3, min_margin=0.1, success_score=0.9) == [
        (0, 1),
        (0, 2),
    ]


def test_sweet_critic_backend_pairs_are_best_success_vs_each_strictly_worse():
    # scripts/evaluate_code.py:65-83: only tasks whose max ≥ 1; best = first argmax; every j
    # other than it with a strictly lower score is rejected.
    backend = reference_preset("sweet_critic", "sweet-rl-backend")
    scores = [0.5, 1.0, 1.0, 0.0, 0.8, 0.9]
    groups = ["a", "a", "a", "a", "b", "b"]
    assert sweet_preference_pairs(scores, groups, **backend) == [(1, 0), (1, 3)]


def test_sweet_actor_random_halves_follows_the_released_draws():
    # scripts/generate_random_pairs_from_ranks.py:15 seeds random with 42; extract_indices
    # (lines 18-25) argsorts ascending and draws random.choice(range(8)) then
    # random.choice(range(8, 16)); lines 56-61 choose the higher-scored; README.md:191 runs 4 pairs.
    scores = np.array([0.3, -1.0, 2.0, 0.7, 0.1, -0.2, 1.5, 0.0, 0.9, -0.5, 1.1, 0.4, -0.8, 0.6, 1.9, 0.2])
    ascending = np.argsort(scores, kind="stable")
    draws = random.Random(42)
    expected = []
    for _ in range(4):
        low, high = ascending[draws.choice(range(8))], ascending[draws.choice(range(8, 16))]
        expected.append((int(high), int(low)))
    first_draws = random.Random(42)
    assert [first_draws.choice(range(8)), first_draws.choice(range(8, 16))] == [1, 8]  # pinned by value
    options = reference_preset("sweet_actor")
    pairs = ranked_candidate_pairs(scores, rng=random.Random(42), **options)
    assert pairs == expected and len(pairs) == 4
    for chosen, rejected in pairs:
        assert scores[chosen] > scores[rejected]
        assert chosen in ascending[8:] and rejected in ascending[:8]
    # one stream across states, as the released script draws
    stream = random.Random(42)
    first = ranked_candidate_pairs(scores, rng=stream, **options)
    second = ranked_candidate_pairs(scores, rng=stream, **options)
    assert first == expected and second != first
    # the fixed-rank form: rank k against rank k + 8
    fixed = ranked_candidate_pairs(scores, num_pairs=4)
    order = np.argsort(-scores, kind="stable")
    assert fixed == [(int(order[k]), int(order[k + 8])) for k in range(4)]


# ---------------------------------------------------------------- presets


def test_every_preset_is_accepted_by_its_estimator():
    for code, estimators in REFERENCE_PRESETS.items():
        for estimator in estimators:
            options = reference_preset(estimator, code)
            if estimator in ("grpo", "rloo"):
                function = grpo_advantages if estimator == "grpo" else rloo_advantages
                function([1.0, 0.0, 2.0], ["g"] * 3, step_counts=[1, 2, 3], **options)
            elif estimator == "gigpo":
                gigpo_advantages([[1.0], [0.0]], [["a"], ["a"]], ["g", "g"], **options)
            elif estimator == "similarity":
                similarity_anchor_keys([["a b", "a c"]], ["g"], **options)
            elif estimator == "mt_grpo":
                mt_grpo_advantages([[1.0], [0.0]], [1.0, 0.0], ["g", "g"], **options)
            elif estimator == "sweet_critic":
                sweet_preference_pairs([1.0, 0.0], ["g", "g"], **options)
            else:
                ranked_candidate_pairs(np.arange(16.0), rng=random.Random(0), **options)


def test_estimator_options_reference_overrides_settings_but_keeps_normalize():
    settings = {"normalize": "none", "ddof": 0, "eps_mode": "cutoff", "singleton": "zero", "omega": 2.0}
    assert estimator_options("grpo", settings) == {
        "normalize": "none",
        "ddof": 0,
        "eps_mode": "cutoff",
        "singleton": "zero",
    }
    reference = estimator_options("gigpo", settings, preset="reference")
    assert (
        reference["normalize"] == "none" and reference["ddof"] == 1 and reference["episode_over"] == "steps"
    )
    assert estimator_options("mt_grpo", {}, preset="reference")["mt_grpo_form"] == "released"
    assert estimator_options("grpo", {}, preset="reference", code="verl")["singleton"] == "keep"
    with pytest.raises(ValueError):
        estimator_options("grpo", {}, preset="released")
    with pytest.raises(ValueError):
        reference_preset("gigpo", "verl")


# ---------------------------------------------------------------- the trainers' settings
# (what reproduce.sh passes)


def _trajectories():
    from baselines.rollout import Trajectory, Turn

    def turn(key: str, reward: float) -> Turn:
        return Turn("", [], [], "", key, key, key, reward=reward)

    return [
        Trajectory(0, 0, "t", [turn("a", 0.0), turn("b", 1.0)]),
        Trajectory(0, 1, "t", [turn("a", 0.0), turn("b", 0.0), turn("b", 0.0)]),
        Trajectory(1, 0, "u", [turn("c", 1.0)]),
    ]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"estimator": "gigpo", "preset": "reference", "normalize": "none"}, ("gigpo", "verl-agent")),
        ({"estimator": "grpo", "preset": "reference"}, ("grpo", "verl-agent")),
        (
            {"estimator": "grpo_or", "preset": "reference", "reference_code": "multi-turn-rl-agent"},
            ("grpo", "multi-turn-rl-agent"),
        ),
        (
            {"estimator": "mt_grpo", "preset": "reference", "reference_code": "multi-turn-rl-agent"},
            ("mt_grpo", "multi-turn-rl-agent"),
        ),
        ({"estimator": "grpo", "preset": "paper", "ddof": 1, "eps_mode": "add"}, ("grpo", None)),
    ],
)
def test_trainer_settings_reach_the_estimators(overrides, expected):
    pytest.importorskip("torch")
    from baselines.trainers.critic_free import CriticFreeOptions, turn_advantages

    config = CriticFreeOptions(gamma=0.5, **overrides)
    trajectories = _trajectories()
    ours, _ = turn_advantages(config, trajectories)
    estimator, code = expected
    options = reference_preset(estimator, code) if code else {"ddof": 1, "eps_mode": "add"}
    groups = [t.group for t in trajectories]
    counts = [len(t.turns) for t in trajectories]
    if estimator == "gigpo":
        direct = gigpo_advantages(
            [t.turn_rewards for t in trajectories],
            [[turn.obs_key for turn in t.turns] for t in trajectories],
            groups,
            gamma=0.5,
            normalize=config.normalize,
            **options,
        ).advantages
    elif estimator == "mt_grpo":
        direct = mt_grpo_advantages(
            [t.turn_rewards[:-1] for t in trajectories],
            [t.turn_rewards[-1] for t in trajectories],
            groups,
            **options,
        )
    else:
        returns = [
            t.turn_rewards[-1] if config.estimator == "grpo_or" else t.episode_return for t in trajectories
        ]
        episode = grpo_advantages(returns, groups, step_counts=counts, **options)
        direct = [np.full(n, a) for n, a in zip(counts, episode, strict=False)]
    for mine, theirs in zip(ours, direct, strict=False):
        np.testing.assert_allclose(mine, theirs)
    paper, _ = turn_advantages(CriticFreeOptions(gamma=0.5, estimator=config.estimator), trajectories)
    assert any(not np.allclose(a, b) for a, b in zip(paper, ours, strict=False))


def test_sweet_rl_pair_options_follow_the_preset():
    pytest.importorskip("torch")
    from baselines.trainers.sweet_rl import SweetRLOptions, pair_options

    critic, actor = pair_options(SweetRLOptions())
    assert critic["mode"] == "best_vs_worse" and actor == {"mode": "ranked", "num_pairs": 4}
    critic, actor = pair_options(SweetRLOptions(preset="reference", reference_code="sweet-rl-frontend"))
    assert critic["mode"] == "all_pairs" and critic["min_margin"] == 0.1
    assert actor == {"mode": "random_halves", "num_pairs": 4}


def test_similarity_options_take_the_settings_and_the_reference_order():
    settings = {"similarity_threshold": 0.9, "similarity_order": "agentenvs", "anchor": "similarity"}
    assert similarity_options(settings) == {"threshold": 0.9, "order": "agentenvs"}
    # build_step_group (core_gigpo.py) calls are_similar(obs, cluster["rep"]): the observation first.
    assert similarity_options(settings, preset="reference") == {"threshold": 0.9, "order": "verl-agent"}
    assert reference_preset("similarity") == {"order": "verl-agent"}
    assert similarity_options({}) == {}
    with pytest.raises(ValueError, match="preset must be"):
        similarity_options(settings, preset="released")
    with pytest.raises(ValueError, match="has no similarity"):
        similarity_options(settings, preset="reference", code="verl")


# difflib's junk heuristic applies to its second argument from 200 characters on: with the 201-character
# observation second, all its common characters are "popular", no match can start, and the ratio is 0;
# first, the ratio is 0.995.
SHORT_OBSERVATION = ("The red box is here. " * 10)[:199]
LONG_OBSERVATION = "> " + SHORT_OBSERVATION


@pytest.mark.parametrize(
    ("overrides", "joined"),
    [
        ({}, False),
        ({"similarity_order": "verl-agent"}, True),
        ({"preset": "reference"}, True),
        ({"preset": "reference", "similarity_order": "agentenvs"}, True),
    ],
)
def test_the_similarity_order_setting_reaches_the_anchor_groups(overrides, joined):
    pytest.importorskip("torch")
    from baselines.rollout import Trajectory, Turn
    from baselines.trainers.critic_free import CriticFreeOptions, turn_advantages

    assert SequenceMatcher(None, LONG_OBSERVATION, SHORT_OBSERVATION).ratio() >= 0.95
    assert SequenceMatcher(None, SHORT_OBSERVATION, LONG_OBSERVATION).ratio() < 0.95
    trajectories = [
        Trajectory(0, copy, "t", [Turn("", [], [], "", text, text, text, reward=reward)])
        for copy, (text, reward) in enumerate([(SHORT_OBSERVATION, 1.0), (LONG_OBSERVATION, 0.0)])
    ]
    config = CriticFreeOptions(estimator="gigpo", anchor="similarity", **overrides)
    ours, _ = turn_advantages(config, trajectories)
    options = reference_preset("gigpo") if config.preset == "reference" else {}
    direct = gigpo_advantages(
        [t.turn_rewards for t in trajectories],
        [[0], [0 if joined else 1]],
        [0, 0],
        gamma=config.gamma,
        omega=config.omega,
        **options,
    ).advantages
    for mine, theirs in zip(ours, direct, strict=True):
        np.testing.assert_allclose(mine, theirs)
