"""VinePPO: PPO-clip with Monte-Carlo values from env snapshots, no critic (Kazemnejad et al. 2024).

Per iteration (the loop is ``run.TrainingRun``'s; the rollout keeps every
turn's env snapshot, ``needs_snapshots``):

1. values: from the snapshot of every turn's starting state s_t of every
   trajectory, K rollouts of the current policy run to the end of their
   episode (``RolloutEngine.branch`` over ``GroupedVectorEnv.branch``: one
   group of K copies per state, every live branch's prompt sampled in one
   call per step; the states run in vector batches of at most
   ``max_branch_envs`` envs, one batch unless the K × T branches exceed
   it). V̂(s_t) is the mean of their discounted returns:

       V̂(s_t) = (1/K) Σ_k Σ_{l≥0} γ^l r^(k)_{t+l}

   The state after the last turn ends the episode (terminated, or truncated
   at the env's turn limit, which is part of its state): V̂ = 0 there.
2. advantages: one per turn, the one-step MC estimate (no λ)

       A_t = r_t + γ·V̂(s_{t+1}) − V̂(s_t)

   on every policy token of turn t, then whitened over the batch's policy
   tokens, (A − mean)/(std + 1e-8) (``whiten_advantages``);
3. update: PPO-clip epochs with KL to the frozen initial policy
   (``run.ppo_clip_update``). Nothing else is trained.

The paper's defaults (its released configs): K = 9 rollouts per state
(``mc_rollouts``), γ = 1 (``gamma``), advantages whitened
(``whiten_advantages: true``; false trains on them as estimated). A branch
whose env crashed stops the run (``sampler.on_crash: stop``) or is left out
of its state's mean (``drop``; counted as ``vine/crashed_rollouts``); a
state whose every branch crashed stops it either way.

Logged per iteration: ``vine/rollouts`` (K × turns of the batch),
``vine/env_steps``, ``vine/generated_tokens``, ``vine/wall_s`` (building the
branch envs and playing them), ``vine/generation_s``, ``vine/env_s``,
``vine/crashed_rollouts``, ``vine/vector_batches`` and ``vine/value_mean``.

Run::

    python -m baselines.trainers --config baselines/configs/vineppo_sokoban.yaml
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from agentenvs.core import derive_seed
from agentenvs.vector import GroupedVectorEnv
from baselines.metrics import anchor_metrics
from baselines.rollout import EnvCrashed, RolloutBatch, RolloutEngine, Trajectory
from baselines.trainers.config import AlgorithmOptions, ConfigError
from baselines.trainers.models import frozen_copy
from baselines.trainers.sampler import make_engine
from baselines.trainers.samples import Sample, build_samples, whiten_advantages

if TYPE_CHECKING:
    from baselines.trainers.run import TrainingRun

# A vector batch holds at least one state's K branch envs, whatever max_branch_envs says.
MAX_MC_ROLLOUTS = 1024


@dataclass
class VinePPOOptions(AlgorithmOptions):
    """K rollouts per state, the discount of their returns, whether advantages are whitened."""

    name: ClassVar[str] = "vineppo"
    mc_rollouts: int = field(default=9, metadata={"minimum": 1})  # K
    gamma: float = 1.0
    whiten_advantages: bool = True
    # branch envs alive at once: the states run in vector batches of max(1, this // K) states
    # (so at least K envs)
    max_branch_envs: int = field(default=4096, metadata={"minimum": 1})

    def __post_init__(self) -> None:
        k = self.mc_rollouts
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_MC_ROLLOUTS:
            raise ConfigError(
                f"algorithm.mc_rollouts (K, rollouts per state) must be an integer from 1 to "
                f"{MAX_MC_ROLLOUTS}, got {k!r}"
            )
        if not 0.0 <= self.gamma <= 1.0:
            raise ConfigError(f"algorithm.gamma must be in [0, 1], got {self.gamma!r}")


def discounted_return(rewards: np.ndarray, gamma: float) -> float:
    """Σ_l γ^l r_l."""
    return float(np.sum(rewards * gamma ** np.arange(len(rewards))))


@dataclass
class BranchValues:
    """V̂(s_t) of every turn of every trajectory, and the branch rollouts that gave them (one per batch)."""

    values: list[np.ndarray]
    batches: list[RolloutBatch]

    def stats(self) -> dict[str, float]:
        """The ``vine/...`` counts of the branch rollouts (wall time is the caller's)."""
        played = [t for b in self.batches for t in [*b.trajectories, *b.crashed]]
        flat = np.concatenate(self.values) if self.values else np.zeros(0)
        return {
            "vine/rollouts": len(played),
            "vine/crashed_rollouts": sum(len(b.crashed) for b in self.batches),
            "vine/env_steps": sum(len(t.turns) for t in played),
            "vine/generated_tokens": sum(b.generated_tokens for b in self.batches),
            "vine/generation_s": sum(b.generation_s for b in self.batches),
            "vine/env_s": sum(b.env_s for b in self.batches),
            "vine/vector_batches": len(self.batches),
            "vine/value_mean": float(flat.mean()) if flat.size else 0.0,
        }


def mean_returns(branches: RolloutBatch, states: int, gamma: float) -> np.ndarray:
    """Per state (the vec's group), the mean discounted return of its branches that did not crash."""
    groups = np.array([b.group for b in branches.trajectories], dtype=np.int64)
    returns = np.array([discounted_return(b.turn_rewards, gamma) for b in branches.trajectories])
    counts = np.bincount(groups, minlength=states)
    if states and counts.min() == 0:
        raise EnvCrashed(f"every branch of state {int(counts.argmin())} crashed: no value estimate")
    return np.bincount(groups, weights=returns, minlength=states) / np.maximum(counts, 1)


def branch_values(
    engine_for: Callable[[int], RolloutEngine],
    trajectories: Sequence[Trajectory],
    gamma: float,
    sample_seed: int,
    states_per_batch: int,
) -> BranchValues:
    """Monte-Carlo V̂(s_t) for every turn t of every trajectory (the module docstring's formula).

    The states run ``states_per_batch`` at a time (the last batch holds the rest), batch b sampled
    from the stream ``("vine-batch", sample_seed, b)``; ``engine_for(n)`` is an engine over a vec of
    n groups of K copies.
    """
    starts = [(trajectory, turn) for trajectory in trajectories for turn in range(len(trajectory.turns))]
    values = np.zeros(len(starts))
    batches = []
    for number, begin in enumerate(range(0, len(starts), states_per_batch)):
        part = starts[begin : begin + states_per_batch]
        seed = derive_seed("vine-batch", sample_seed, number)
        branches = engine_for(len(part)).branch(part, sample_seed=seed)
        values[begin : begin + len(part)] = mean_returns(branches, len(part), gamma)
        batches.append(branches)
    splits = np.cumsum([len(t.turns) for t in trajectories])[:-1]
    return BranchValues(list(np.split(values, splits)) if trajectories else [], batches)


def mc_advantages(
    trajectories: Sequence[Trajectory], values: Sequence[np.ndarray], gamma: float
) -> list[np.ndarray]:
    """A_t = r_t + γ·V̂(s_{t+1}) − V̂(s_t), with V̂ = 0 after the last turn."""
    advantages = []
    for trajectory, value in zip(trajectories, values, strict=False):
        following = np.append(value[1:], 0.0)
        advantages.append(trajectory.turn_rewards + gamma * following - value)
    return advantages


class VinePPO:
    """PPO-clip on Monte-Carlo advantages from K branch rollouts per turn; no critic."""

    Options = VinePPOOptions
    context: ClassVar[str | None] = None
    needs_snapshots: ClassVar[bool] = True

    def __init__(self, run: TrainingRun) -> None:
        self.run = run
        self.options = run.config.algorithm_options(VinePPOOptions)
        self.label = "vineppo"
        self.reference = frozen_copy(run.model) if run.config.optim.kl_coef else None

    def resolved_options(self) -> dict[str, Any]:
        return {"algorithm": self.options.name, **dataclasses.asdict(self.options)}

    def advantages(self, batch: RolloutBatch, iteration: int) -> tuple[list[Sample], dict[str, Any]]:
        run, config = self.run, self.run.config
        trajectories = batch.trajectories
        started = time.perf_counter()
        vecs: dict[int, GroupedVectorEnv] = {}  # at most two sizes: full batches and the rest

        def engine_for(states: int) -> RolloutEngine:
            if states not in vecs:
                vecs[states] = GroupedVectorEnv(
                    config.env.id,
                    num_groups=states,
                    group_size=self.options.mc_rollouts,
                    backend=config.env.vector_backend,
                    env_kwargs=config.env.kwargs,
                )
            return make_engine(config, vecs[states], run.sampler, run.tokenizer, run.template)

        try:
            estimate = branch_values(
                engine_for,
                trajectories,
                self.options.gamma,
                sample_seed=derive_seed("vine-branches", config.run.seed, iteration),
                states_per_batch=max(1, self.options.max_branch_envs // self.options.mc_rollouts),
            )
        finally:
            for vec in vecs.values():
                vec.close()
        wall_s = time.perf_counter() - started
        advantages = mc_advantages(trajectories, estimate.values, self.options.gamma)
        samples = build_samples(trajectories, advantages, config.sampler.context)
        if self.options.whiten_advantages:
            whiten_advantages(samples)
        return samples, {
            **anchor_metrics(trajectories, "state_key"),
            **estimate.stats(),
            "vine/wall_s": wall_s,
        }

    def update(self, prepared: list[Sample], iteration: int) -> dict[str, float]:
        return self.run.ppo_clip_update(prepared, self.reference, iteration)


ALGORITHM = VinePPO
