"""Critic-free PPO-clip with KL to a reference: GiGPO, GRPO, RLOO, MT-GRPO.

One iteration:

1. roll out G task groups × N copies of the current policy to the end
   (``baselines.rollout``); every turn is a sample;
2. per-turn advantages from the chosen estimator (``baselines.advantages``):

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
   the papers' formulas with the config's options (``ddof``, ``eps_mode``,
   ``singleton``, ``episode_over``, ``mt_grpo_form``...), ``preset:
   reference`` the released code's arithmetic
   (``baselines.advantages.reference_preset``);
3. PPO-clip epochs (token-mean, low-variance KL to the frozen initial
   policy, entropy bonus, gradient clipping; ``common.ppo_update``);
4. one JSONL metrics record (``baselines.metrics``) and, every
   ``save_every`` iterations, a checkpoint that ``--resume`` continues from.

Run::

    python -m baselines.trainers.critic_free --config baselines/configs/gigpo_sokoban.yaml
    python -m baselines.trainers.critic_free --config ... --set estimator=grpo --set out_dir=runs/grpo
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from agentenvs.core import derive_seed
from agentenvs.diagnostics.grouping import similarity_anchor_keys
from baselines.advantages import (
    estimator_options,
    gigpo_advantages,
    grpo_advantages,
    mt_grpo_advantages,
    rloo_advantages,
    similarity_options,
)
from baselines.metrics import MetricsWriter, anchor_metrics, rollout_metrics
from baselines.rollout import Trajectory
from baselines.trainers.common import (
    TrainConfig,
    build_samples,
    frozen_copy,
    iteration_tasks,
    load_checkpoint,
    load_policy,
    make_engine,
    make_sampler,
    make_vector_env,
    parse_args,
    ppo_update,
    prepare_run,
    sampling_vocabulary,
    save_checkpoint,
)


def turn_advantages(
    config: TrainConfig, trajectories: Sequence[Trajectory]
) -> tuple[list[np.ndarray], dict[str, Any]]:
    """One advantage per turn of every trajectory, from ``config.estimator`` and its preset."""
    groups = [t.group for t in trajectories]
    turn_counts = [len(t.turns) for t in trajectories]
    estimator = config.estimator
    options = estimator_options(
        estimator, dataclasses.asdict(config), preset=config.preset, code=config.reference_code
    )
    if estimator in ("grpo", "grpo_or", "rloo"):
        if estimator == "grpo_or":
            returns = np.array([t.turn_rewards[-1] for t in trajectories])
        else:
            returns = np.array([t.episode_return for t in trajectories])
        function = rloo_advantages if estimator == "rloo" else grpo_advantages
        episode = function(returns, groups, step_counts=turn_counts, **options)
        return [np.full(n, a) for n, a in zip(turn_counts, episode)], {}
    if estimator == "mt_grpo":
        intermediate = [t.turn_rewards[:-1] for t in trajectories]
        outcome = [t.turn_rewards[-1] for t in trajectories]
        return mt_grpo_advantages(intermediate, outcome, groups, alpha=config.alpha, **options), {}
    if estimator == "gigpo":
        if config.anchor == "similarity":
            keys: list[list[Any]] = similarity_anchor_keys(
                [[turn.observation for turn in t.turns] for t in trajectories],
                groups,
                **similarity_options(
                    dataclasses.asdict(config), preset=config.preset, code=config.reference_code
                ),
            )
        else:
            attribute = "obs_key" if config.anchor == "obs" else "state_key"
            keys = [[getattr(turn, attribute) for turn in t.turns] for t in trajectories]
        result = gigpo_advantages(
            [t.turn_rewards for t in trajectories],
            keys,
            groups,
            gamma=config.gamma,
            omega=config.omega,
            **options,
        )
        return result.advantages, {"gigpo/singleton_share": result.singleton_share}
    raise ValueError(f"unknown estimator {estimator!r}")


def train(config: TrainConfig, *, resume: bool = False) -> list[dict[str, Any]]:
    """Run ``config.iterations`` iterations (continuing a checkpoint when ``resume``); the metrics records."""
    out = prepare_run(config, resume)
    template, model, tokenizer = load_policy(config, out, resume)
    reference = frozen_copy(model) if config.kl_coef else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    start = load_checkpoint(out, {"policy": model}, {"policy": optimizer}) if resume else 0
    writer = MetricsWriter(out / "metrics.jsonl")
    writer.truncate_after(start - 1)

    vec = make_vector_env(config)
    sampler = make_sampler(config, model, tokenizer)
    allowed = sampling_vocabulary(config, tokenizer)
    engine = make_engine(config, vec, sampler, tokenizer, template)
    records = []
    try:
        for iteration in range(start, config.iterations):
            seed, task_ids = iteration_tasks(config, iteration)
            batch = engine.collect(
                seed=seed, task_ids=task_ids, sample_seed=derive_seed("sample", config.seed, iteration)
            )

            started = time.perf_counter()
            advantages, estimator_stats = turn_advantages(config, batch.trajectories)
            advantage_s = time.perf_counter() - started

            started = time.perf_counter()
            samples = build_samples(batch.trajectories, advantages, config.context)
            update_stats = ppo_update(
                model, reference, optimizer, samples, config, tokenizer.pad_token_id, iteration, allowed
            )
            sampler.sync(model)
            update_s = time.perf_counter() - started

            record = {
                "iteration": iteration,
                "episodes_seen": (iteration + 1) * config.num_groups * config.group_size,
                "estimator": config.estimator,
                **rollout_metrics(batch),
                **anchor_metrics(batch.trajectories, "obs_key" if config.anchor == "obs" else "state_key"),
                **estimator_stats,
                **update_stats,
                "time/advantage_s": advantage_s,
                "time/update_s": update_s,
            }
            writer.write(record)
            records.append(record)
            if (iteration + 1) % config.save_every == 0 or iteration + 1 == config.iterations:
                save_checkpoint(out, iteration, {"policy": model}, {"policy": optimizer})
    finally:
        vec.close()
    return records


def main(argv: Sequence[str] | None = None) -> int:
    config, resume = parse_args(__doc__.splitlines()[0], argv)
    for record in train(config, resume=resume):
        print(
            f"iter {record['iteration']:4d}  success {record['success']:.3f}  return {record['return']:+.3f}  "
            f"gen {record['time/generation_s']:.1f}s ({record['tokens_per_s']:.0f} tok/s) env {record['time/env_s']:.1f}s "
            f"update {record['time/update_s']:.1f}s"
        )
    print(f"metrics: {config.out_dir}/metrics.jsonl")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
