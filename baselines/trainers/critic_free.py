"""Critic-free PPO-clip with KL to a reference: GiGPO, GRPO, RLOO, MT-GRPO.

Per iteration (the loop is ``run.TrainingRun``'s):

1. every turn of the rollout batch is a sample;
2. advantages: one per turn, from the chosen estimator (``baselines.advantages``):

   ===========  ==========================================================
   estimator    advantage of turn k of trajectory i
   ===========  ==========================================================
   grpo         A^E_i = GRPO over the group's episode returns (GRPO-MR)
   grpo_or      GRPO over the last turn's reward only (GRPO-OR)
   rloo         R_i − mean_{j≠i} R_j
   gigpo        A^E_i + ω·A^S_{i,k}, anchor groups by observation, state
                key or similarity (``anchor``)
   mt_grpo      Σ_{l=k}^{K−1} α^{l−k} A^I_(l) + α^{K−k} A^O
   ===========  ==========================================================

   (the last turn's reward is the outcome reward R^O, earlier turns'
   rewards are the intermediate rewards R^I); ``preset: paper`` computes
   the papers' formulas with the options below (``ddof``, ``eps_mode``,
   ``singleton``, ``episode_over``, ``mt_grpo_form``...), ``preset:
   reference`` the released code's arithmetic
   (``baselines.advantages.reference_preset``); ``options.json`` records
   the options after the preset;
3. update: PPO-clip epochs (token-mean, low-variance KL to the frozen
   initial policy, entropy bonus, gradient clipping; ``ppo_clip.ppo_update``).

Run::

    python -m baselines.trainers --config baselines/configs/gigpo_sokoban.yaml
    python -m baselines.trainers --config ... --set algorithm.estimator=grpo --set run.out_dir=runs/grpo
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from agentenvs.diagnostics.grouping import similarity_anchor_keys
from baselines.advantages import (
    DEFAULT_REFERENCE,
    estimator_options,
    gigpo_advantages,
    grpo_advantages,
    mt_grpo_advantages,
    rloo_advantages,
    similarity_options,
)
from baselines.metrics import anchor_metrics
from baselines.rollout import RolloutBatch, Trajectory
from baselines.trainers.config import AlgorithmOptions
from baselines.trainers.models import frozen_copy
from baselines.trainers.samples import Sample, build_samples

if TYPE_CHECKING:
    from baselines.trainers.run import TrainingRun


@dataclass
class CriticFreeOptions(AlgorithmOptions):
    """The estimator and its options (``baselines.advantages`` documents every one)."""

    name: ClassVar[str] = "critic_free"
    estimator: Literal["gigpo", "grpo", "rloo", "mt_grpo", "grpo_or"] = "gigpo"
    # "paper": the options below; "reference": the released code's arithmetic over them
    preset: Literal["paper", "reference"] = "paper"
    reference_code: str = ""  # a key of advantages.REFERENCE_PRESETS; empty: the estimator's usual one
    gamma: float = 0.95
    omega: float = 1.0
    normalize: Literal["std", "none"] = "std"
    ddof: int = 0
    eps: float = 1e-6
    eps_mode: Literal["cutoff", "add"] = "cutoff"
    singleton: Literal["zero", "keep"] = "zero"
    anchor: Literal["obs", "state", "similarity"] = "obs"
    similarity_threshold: float = 0.95
    similarity_order: Literal["agentenvs", "verl-agent"] = "agentenvs"  # difflib's (rep, obs) or (obs, rep)
    episode_over: Literal["trajectories", "steps"] = "trajectories"
    alpha: float = 1.0
    mt_grpo_form: Literal["paper", "released"] = "paper"


def preset_options(options: CriticFreeOptions) -> dict[str, Any]:
    """The estimator's keyword options after the preset (``advantages.estimator_options``)."""
    return estimator_options(
        options.estimator, dataclasses.asdict(options), preset=options.preset, code=options.reference_code
    )


def anchor_similarity_options(options: CriticFreeOptions) -> dict[str, Any]:
    """Threshold and difflib argument order of similarity anchors after the preset."""
    return similarity_options(dataclasses.asdict(options), preset=options.preset, code=options.reference_code)


def turn_advantages(
    options: CriticFreeOptions, trajectories: Sequence[Trajectory]
) -> tuple[list[np.ndarray], dict[str, Any]]:
    """One advantage per turn of every trajectory, from ``options.estimator`` and its preset."""
    groups = [t.group for t in trajectories]
    turn_counts = [len(t.turns) for t in trajectories]
    estimator = options.estimator
    keywords = preset_options(options)
    if estimator in ("grpo", "grpo_or", "rloo"):
        if estimator == "grpo_or":
            returns = np.array([t.turn_rewards[-1] for t in trajectories])
        else:
            returns = np.array([t.episode_return for t in trajectories])
        function = rloo_advantages if estimator == "rloo" else grpo_advantages
        episode = function(returns, groups, step_counts=turn_counts, **keywords)
        return [np.full(n, a) for n, a in zip(turn_counts, episode, strict=False)], {}
    if estimator == "mt_grpo":
        intermediate = [t.turn_rewards[:-1] for t in trajectories]
        outcome = [t.turn_rewards[-1] for t in trajectories]
        return mt_grpo_advantages(intermediate, outcome, groups, alpha=options.alpha, **keywords), {}
    if estimator == "gigpo":
        if options.anchor == "similarity":
            keys: list[list[Any]] = similarity_anchor_keys(
                [[turn.observation for turn in t.turns] for t in trajectories],
                groups,
                **anchor_similarity_options(options),
            )
        else:
            attribute = "obs_key" if options.anchor == "obs" else "state_key"
            keys = [[getattr(turn, attribute) for turn in t.turns] for t in trajectories]
        result = gigpo_advantages(
            [t.turn_rewards for t in trajectories],
            keys,
            groups,
            gamma=options.gamma,
            omega=options.omega,
            **keywords,
        )
        return result.advantages, {"gigpo/singleton_share": result.singleton_share}
    raise ValueError(f"unknown estimator {estimator!r}")


class CriticFree:
    """PPO-clip on the estimator's per-turn advantages; no critic."""

    Options = CriticFreeOptions
    context: ClassVar[str | None] = None

    def __init__(self, run: TrainingRun) -> None:
        self.run = run
        self.options = run.config.algorithm_options(CriticFreeOptions)
        self.label = self.options.estimator
        self.reference = frozen_copy(run.model) if run.config.optim.kl_coef else None

    def resolved_options(self) -> dict[str, Any]:
        options = self.options
        used = {"gigpo": ("gamma", "omega", "anchor"), "mt_grpo": ("alpha",)}.get(options.estimator, ())
        resolved: dict[str, Any] = {
            "algorithm": options.name,
            "estimator": options.estimator,
            "preset": options.preset,
            "estimator_options": preset_options(options),
            **{name: getattr(options, name) for name in used},
        }
        if options.preset == "reference":
            resolved["reference_code"] = options.reference_code or DEFAULT_REFERENCE[options.estimator]
        if options.estimator == "gigpo" and options.anchor == "similarity":
            resolved["similarity_options"] = anchor_similarity_options(options)
        return resolved

    def advantages(self, batch: RolloutBatch, iteration: int) -> tuple[list[Sample], dict[str, Any]]:
        advantages, stats = turn_advantages(self.options, batch.trajectories)
        samples = build_samples(batch.trajectories, advantages, self.run.config.sampler.context)
        key = "obs_key" if self.options.anchor == "obs" else "state_key"
        return samples, {**anchor_metrics(batch.trajectories, key), **stats}

    def update(self, prepared: list[Sample], iteration: int) -> dict[str, float]:
        return self.run.ppo_clip_update(prepared, self.reference, iteration)


ALGORITHM = CriticFree
