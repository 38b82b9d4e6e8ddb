"""Advantage estimators of the reference trainers: pure numpy, one function per formula.

Every estimator takes plain arrays (or lists of per-trajectory arrays for
variable-length data) and returns new arrays; none holds state or touches an
env or a model. ``group_ids`` name the rollout group each trajectory belongs
to (the N copies of one task started from the same state).

Conventions shared by all of them:

- ``normalize="std"`` divides by the group's standard deviation (population
  std, ``ddof=0``, unless ``ddof`` says otherwise); ``normalize="none"`` keeps
  the raw difference to the mean (F_norm = 1, GiGPO's "w/o std").
- A group with one member, or whose values are all equal (std ≤ ``eps``),
  yields advantage 0 for every member: nothing in it can be compared, and
  dividing by ~0 would turn float noise into huge advantages.

==================  =====================================================
function            formula
==================  =====================================================
grpo_advantages     A_i = (R_i − mean_g R) / F_norm(g)
rloo_advantages     A_i = R_i − mean_{j≠i} R_j
discounted_returns  R_t = Σ_{k≥t} γ^{k−t} r_k
gigpo_advantages    A = A^E + ω·A^S (episode + anchor-state step advantage)
mt_grpo_advantages  A_(k) = Σ_{l=k}^{K−1} α^{l−k} A^I_(l) + α^{K−k} A^O
turn_end_rewards    token rewards at turn ends (MT-PPO / PPO-OR / PPO-MR)
gae                 A_t = Σ_l (γλ)^l δ_{t+l}, δ_t = r_t + γV_{t+1} − V_t
==================  =====================================================
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

import numpy as np

Normalization = Literal["std", "none"]
DEFAULT_EPS = 1e-6


def _group_indices(group_ids: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    """Member positions of each group, groups in first-seen order."""
    members: dict[Hashable, list[int]] = defaultdict(list)
    for index, group in enumerate(group_ids):
        members[group].append(index)
    return members


def normalized_deviation(
    values: np.ndarray, *, normalize: Normalization = "std", ddof: int = 0, eps: float = DEFAULT_EPS
) -> np.ndarray:
    """(v − mean v) / F_norm for one group; zeros for a singleton or zero-variance group.

    F_norm is ``std(v, ddof)`` for ``normalize="std"`` and 1 for ``"none"``.
    """
    values = np.asarray(values, dtype=np.float64)
    if normalize not in ("std", "none"):
        raise ValueError(f"normalize must be 'std' or 'none', got {normalize!r}")
    if values.size <= max(1, ddof):
        return np.zeros_like(values)
    centred = values - values.mean()
    spread = values.std(ddof=ddof)
    if spread <= eps:
        return np.zeros_like(values)
    return centred / spread if normalize == "std" else centred


def grpo_advantages(
    returns: Sequence[float] | np.ndarray,
    group_ids: Sequence[Hashable],
    *,
    normalize: Normalization = "std",
    ddof: int = 0,
    eps: float = DEFAULT_EPS,
) -> np.ndarray:
    """GRPO episode advantage, one value per trajectory.

        A_i = (R_i − mean_{j∈g(i)} R_j) / F_norm,   F_norm = std_{j∈g(i)}(R_j) or 1

    ``ddof=0`` is the population std of the GRPO/GiGPO papers (``ddof=1`` is
    the sample std that ``torch.std`` gives in several codebases).
    """
    returns = np.asarray(returns, dtype=np.float64)
    if len(group_ids) != returns.shape[0]:
        raise ValueError(f"{returns.shape[0]} returns but {len(group_ids)} group ids")
    advantages = np.zeros_like(returns)
    for members in _group_indices(group_ids).values():
        advantages[members] = normalized_deviation(returns[members], normalize=normalize, ddof=ddof, eps=eps)
    return advantages


def rloo_advantages(returns: Sequence[float] | np.ndarray, group_ids: Sequence[Hashable]) -> np.ndarray:
    """REINFORCE leave-one-out advantage, one value per trajectory.

        A_i = R_i − (1/(N−1)) Σ_{j∈g(i), j≠i} R_j  =  N/(N−1) · (R_i − mean_g R)

    A singleton group has no other member to compare with and gets 0.
    """
    returns = np.asarray(returns, dtype=np.float64)
    if len(group_ids) != returns.shape[0]:
        raise ValueError(f"{returns.shape[0]} returns but {len(group_ids)} group ids")
    advantages = np.zeros_like(returns)
    for members in _group_indices(group_ids).values():
        size = len(members)
        if size > 1:
            group = returns[members]
            advantages[members] = group - (group.sum() - group) / (size - 1)
    return advantages


def discounted_returns(rewards: Sequence[float] | np.ndarray, gamma: float) -> np.ndarray:
    """Step returns of one trajectory: R_t = Σ_{k≥t} γ^{k−t} r_k."""
    rewards = np.asarray(rewards, dtype=np.float64)
    returns = np.zeros_like(rewards)
    running = 0.0
    for t in range(rewards.shape[0] - 1, -1, -1):
        running = rewards[t] + gamma * running
        returns[t] = running
    return returns


def similarity_anchor_keys(
    observations: Sequence[Sequence[str]], group_ids: Sequence[Hashable], *, threshold: float = 0.95
) -> list[list[int]]:
    """Anchor keys by similarity clustering of observations, per rollout group.

    Greedy in trajectory-then-step order: an observation joins the first
    cluster of its group whose *first member* has
    ``difflib.SequenceMatcher(None, first, obs).ratio() >= threshold``, else
    it founds a new cluster. Keys are cluster numbers, unique across groups.
    ``threshold=1.0`` reduces to exact matching.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    keys: list[list[int]] = [[0] * len(steps) for steps in observations]
    next_cluster = 0
    for members in _group_indices(group_ids).values():
        founders: list[tuple[str, int]] = []
        for i in members:
            for t, text in enumerate(observations[i]):
                for founder, cluster in founders:
                    if founder == text or SequenceMatcher(None, founder, text).ratio() >= threshold:
                        keys[i][t] = cluster
                        break
                else:
                    founders.append((text, next_cluster))
                    keys[i][t] = next_cluster
                    next_cluster += 1
    return keys


@dataclass(frozen=True)
class GiGPOAdvantages:
    """Per-trajectory arrays (one value per step/turn) of a GiGPO computation.

    ``anchor_group_sizes`` lists the size of every anchor-state group formed
    (one entry per group, singletons included), for the training metrics.
    """

    advantages: list[np.ndarray]
    episode: np.ndarray
    step: list[np.ndarray]
    step_returns: list[np.ndarray]
    anchor_group_sizes: np.ndarray

    @property
    def singleton_share(self) -> float:
        """Share of anchor groups with one member (the paper reports < 35% in training)."""
        sizes = self.anchor_group_sizes
        return float((sizes == 1).mean()) if sizes.size else 0.0


def gigpo_advantages(
    step_rewards: Sequence[Sequence[float]],
    anchor_keys: Sequence[Sequence[Hashable]],
    group_ids: Sequence[Hashable],
    *,
    gamma: float = 0.95,
    omega: float = 1.0,
    normalize: Normalization = "std",
    ddof: int = 0,
    episode_over: Literal["trajectories", "steps"] = "trajectories",
    eps: float = DEFAULT_EPS,
) -> GiGPOAdvantages:
    """GiGPO (Feng et al. 2025): episode advantage plus anchor-state step advantage.

    For trajectory i with step rewards r_t^(i) and the key s_t^(i) of the state
    each step acted from:

    - episode:  A^E(τ_i) = (R(τ_i) − mean_g R) / F_norm,  R(τ_i) = Σ_t r_t^(i)
      (``episode_over="trajectories"``, the paper). ``"steps"`` takes the
      mean/std over every step sample of the group instead (the reference
      code: a trajectory's return counted once per step it took).
    - step return:  R_t^(i) = Σ_{k≥t} γ^{k−t} r_k^(i)
    - anchor groups, within one rollout group:
      G^S(ŝ) = {(a_t^(i), R_t^(i)) | s_t^(i) = ŝ}; two visits of ŝ inside one
      trajectory are two members.
    - step:  A^S_t = (R_t − mean_{G^S(ŝ)} R) / F_norm(G^S(ŝ)); 0 for a singleton.
    - combined:  A_t^(i) = A^E(τ_i) + ω · A^S_t

    ``anchor_keys[i][t]`` is any hashable naming s_t^(i): the observation
    text, the env's ``state_key``, or :func:`similarity_anchor_keys` labels.
    """
    count = len(step_rewards)
    if len(anchor_keys) != count or len(group_ids) != count:
        raise ValueError("step_rewards, anchor_keys and group_ids must have one entry per trajectory")
    rewards = [np.asarray(r, dtype=np.float64) for r in step_rewards]
    for i, (r, keys) in enumerate(zip(rewards, anchor_keys)):
        if r.shape[0] != len(keys):
            raise ValueError(f"trajectory {i}: {r.shape[0]} rewards but {len(keys)} anchor keys")
    totals = np.array([r.sum() for r in rewards])
    step_returns = [discounted_returns(r, gamma) for r in rewards]
    step = [np.zeros_like(r) for r in rewards]
    episode = np.zeros(count)
    sizes: list[int] = []

    for members in _group_indices(group_ids).values():
        if episode_over == "trajectories":
            episode[members] = normalized_deviation(totals[members], normalize=normalize, ddof=ddof, eps=eps)
        elif episode_over == "steps":
            samples = np.concatenate([np.full(rewards[i].shape[0], totals[i]) for i in members])
            mean, spread = samples.mean(), samples.std(ddof=ddof) if samples.size > ddof else 0.0
            if samples.size > 1 and spread > eps:
                scale = spread if normalize == "std" else 1.0
                episode[members] = (totals[members] - mean) / scale
        else:
            raise ValueError(f"episode_over must be 'trajectories' or 'steps', got {episode_over!r}")

        anchors: dict[Hashable, list[tuple[int, int]]] = defaultdict(list)
        for i in members:
            for t, key in enumerate(anchor_keys[i]):
                anchors[key].append((i, t))
        for visits in anchors.values():
            sizes.append(len(visits))
            values = np.array([step_returns[i][t] for i, t in visits])
            for (i, t), value in zip(
                visits, normalized_deviation(values, normalize=normalize, ddof=ddof, eps=eps)
            ):
                step[i][t] = value

    advantages = [episode[i] + omega * step[i] for i in range(count)]
    return GiGPOAdvantages(advantages, episode, step, step_returns, np.array(sizes, dtype=np.int64))


def mt_grpo_advantages(
    intermediate_rewards: Sequence[Sequence[float]],
    outcome_rewards: Sequence[float] | np.ndarray,
    group_ids: Sequence[Hashable],
    *,
    alpha: float = 1.0,
    normalize: Normalization = "std",
    ddof: int = 0,
    eps: float = DEFAULT_EPS,
) -> list[np.ndarray]:
    """MT-GRPO (Wei/Zeng et al. 2025): turn-level advantages, one per turn.

    Trajectory i has K_i turns; ``intermediate_rewards[i]`` holds R^I of its
    first K_i − 1 turns and ``outcome_rewards[i]`` its outcome R^O. With
    A^O_i = GRPO advantage of R^O over the group and A^I_{i,(l)} = R^I
    normalised over the group's trajectories that have an intermediate turn
    l, turn k (1-based) gets

        A_{i,(k)} = Σ_{l=k}^{K_i−1} α^{l−k} A^I_{i,(l)} + α^{K_i−k} A^O_i

    so the last turn gets A^O, α = 0 keeps each turn's own advantage and
    α = 1 sums everything that follows. Every token of turn k carries A_(k).
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    count = len(intermediate_rewards)
    if len(group_ids) != count or len(outcome_rewards) != count:
        raise ValueError("intermediate_rewards, outcome_rewards and group_ids need one entry per trajectory")
    outcome_adv = grpo_advantages(outcome_rewards, group_ids, normalize=normalize, ddof=ddof, eps=eps)
    intermediate = [np.asarray(r, dtype=np.float64) for r in intermediate_rewards]
    intermediate_adv = [np.zeros_like(r) for r in intermediate]
    for members in _group_indices(group_ids).values():
        longest = max((intermediate[i].shape[0] for i in members), default=0)
        for turn in range(longest):
            having = [i for i in members if intermediate[i].shape[0] > turn]
            values = np.array([intermediate[i][turn] for i in having])
            for i, value in zip(
                having, normalized_deviation(values, normalize=normalize, ddof=ddof, eps=eps)
            ):
                intermediate_adv[i][turn] = value

    advantages = []
    for i in range(count):
        turns = intermediate[i].shape[0] + 1
        per_turn = np.zeros(turns)
        carried = outcome_adv[i]  # Σ_{l=k}^{K-1} α^{l-k} A^I_(l) + α^{K-k} A^O, built backwards
        per_turn[turns - 1] = carried
        for k in range(turns - 2, -1, -1):
            carried = intermediate_adv[i][k] + alpha * carried
            per_turn[k] = carried
        advantages.append(per_turn)
    return advantages


def turn_end_rewards(
    turn_lengths: Sequence[int],
    turn_rewards: Sequence[float],
    *,
    mode: Literal["turn", "outcome", "summed"] = "turn",
) -> np.ndarray:
    """Token rewards over one trajectory's policy tokens, turns laid end to end.

    - ``"turn"`` (MT-PPO): R^I of each intermediate turn on that turn's last
      token and the last turn's reward (R^O) on the trajectory's last token.
    - ``"outcome"`` (PPO-OR): only R^O, on the last token.
    - ``"summed"`` (PPO-MR): Σ of all turn rewards, on the last token.

    Every other token gets 0. A turn of length 0 carries its reward to the
    previous token that exists.
    """
    lengths = np.asarray(turn_lengths, dtype=np.int64)
    rewards = np.asarray(turn_rewards, dtype=np.float64)
    if lengths.shape != rewards.shape:
        raise ValueError("one length and one reward per turn")
    total = int(lengths.sum())
    tokens = np.zeros(total)
    if total == 0:
        return tokens
    if mode == "turn":
        ends = np.maximum(np.cumsum(lengths) - 1, 0)
        np.add.at(tokens, ends, rewards)
    elif mode == "outcome":
        tokens[-1] = rewards[-1]
    elif mode == "summed":
        tokens[-1] = rewards.sum()
    else:
        raise ValueError(f"mode must be 'turn', 'outcome' or 'summed', got {mode!r}")
    return tokens


def gae(
    token_rewards: Sequence[float] | np.ndarray,
    values: Sequence[float] | np.ndarray,
    *,
    gamma: float = 1.0,
    lam: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimation over one trajectory's policy tokens.

        δ_t = r_t + γ V_{t+1} − V_t   (V_{T+1} = 0),   A_t = Σ_l (γλ)^l δ_{t+l},   G_t = A_t + V_t

    Pass only the policy tokens (environment tokens removed), with rewards
    placed by :func:`turn_end_rewards`: δ then takes MT-PPO's three forms,
    R^O − V_T on the last token, R^I + γV_{t+1} − V_t at a turn end and
    γV_{t+1} − V_t elsewhere. MT-PPO uses γ = λ = 1. Returns (A, G).
    """
    rewards = np.asarray(token_rewards, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if rewards.shape != values.shape:
        raise ValueError(f"rewards {rewards.shape} and values {values.shape} differ in shape")
    advantages = np.zeros_like(rewards)
    running = 0.0
    next_value = 0.0
    for t in range(rewards.shape[0] - 1, -1, -1):
        delta = rewards[t] + gamma * next_value - values[t]
        running = delta + gamma * lam * running
        advantages[t] = running
        next_value = values[t]
    return advantages, advantages + values


def sweet_preference_pairs(
    scores: Sequence[float] | np.ndarray,
    group_ids: Sequence[Hashable],
    *,
    success_score: float = 1.0,
    min_margin: float = 0.0,
) -> list[tuple[int, int]]:
    """SWEET-RL critic pairs: (chosen, rejected) trajectory indices per task group.

    Within each group the best trajectory that reached ``success_score`` is
    paired with every trajectory whose score is lower by more than
    ``min_margin`` (the frontend setting uses 0.1). Groups without a
    successful trajectory give no pair.
    """
    scores = np.asarray(scores, dtype=np.float64)
    pairs: list[tuple[int, int]] = []
    for members in _group_indices(group_ids).values():
        winners = [i for i in members if scores[i] >= success_score]
        if not winners:
            continue
        best = max(winners, key=lambda i: (scores[i], -i))
        pairs.extend((best, j) for j in members if scores[best] - scores[j] > min_margin)
    return pairs


def ranked_candidate_pairs(candidate_advantages: Sequence[float] | np.ndarray) -> list[tuple[int, int]]:
    """SWEET-RL actor pairs: candidates ranked by critic advantage, top half vs bottom half.

    The i-th best is paired with the i-th of the bottom half (16 candidates →
    8 pairs; the paper keeps 4 of them); ties keep candidate order.
    """
    order = np.argsort(-np.asarray(candidate_advantages, dtype=np.float64), kind="stable")
    half = order.shape[0] // 2
    top, bottom = order[:half], order[order.shape[0] - half :]
    return [(int(a), int(b)) for a, b in zip(top, bottom)]
