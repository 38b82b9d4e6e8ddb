"""Actor–critic PPO with token-level GAE: MT-PPO, PPO-OR, PPO-MR (Wei/Zeng et al. 2025).

One iteration:

1. roll out G groups × N copies (``context: full`` by default: one growing
   sequence per episode, environment tokens masked out of the loss);
2. place the rewards on the policy tokens (``reward_placement``):

   =========  ===========================================================
   turn       MT-PPO: R^I on the last token of each intermediate turn,
              R^O (the last turn's reward) on the trajectory's last token
   outcome    PPO-OR: R^O on the last token only
   summed     PPO-MR: the summed reward on the last token
   =========  ===========================================================

3. the critic (a copy of the base model with a scalar head) values every
   policy token; GAE over each trajectory's policy tokens
   (δ_t = r_t + γV_{t+1} − V_t, γ = λ = 1 by default) gives advantages and
   returns; advantages are whitened over the batch;
4. PPO-clip actor epochs with KL to the frozen base (``common.ppo_update``);
   clipped value-loss epochs for the critic (critic lr 1e-5, actor 1e-6);
5. metrics record; checkpoint of actor, critic and both optimizers.

Run::

    python -m baselines.trainers.ppo --config baselines/configs/mt_ppo_sokoban.yaml
"""

from __future__ import annotations

import copy
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from agentenvs.core import derive_rng, derive_seed
from baselines.advantages import gae, turn_end_rewards
from baselines.losses import value_loss
from baselines.metrics import MetricsWriter, anchor_metrics, rollout_metrics
from baselines.trainers.common import (
    Sample,
    TrainConfig,
    build_samples,
    collate,
    frozen_copy,
    iteration_tasks,
    load_checkpoint,
    load_policy,
    make_engine,
    make_sampler,
    make_vector_env,
    micro_batches,
    parse_args,
    ppo_update,
    prepare_run,
    sampling_vocabulary,
    save_checkpoint,
)


class ValueModel(torch.nn.Module):
    """A causal LM body with a scalar head: V(prefix) at every position."""

    def __init__(self, base: Any) -> None:
        super().__init__()
        self.base = base
        self.head = torch.nn.Linear(base.config.hidden_size, 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.base(
            input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True
        ).hidden_states[-1]
        return self.head(hidden.float()).squeeze(-1)


def token_values(critic: ValueModel, batch: Any) -> torch.Tensor:
    """V of the prefix before each target token, aligned with ``ids[:, 1:]``."""
    return critic(batch.ids, batch.attention)[:, :-1]


@torch.no_grad()
def value_samples(
    critic: ValueModel, samples: Sequence[Sample], config: TrainConfig, pad_id: int
) -> list[np.ndarray]:
    """Per-sample values aligned with ``ids[1:]``."""
    values: list[np.ndarray] = []
    for chunk in micro_batches(samples, config.micro_batch_size):
        batch = collate(chunk, pad_id, config.device)
        scored = token_values(critic, batch).float().cpu().numpy()
        values.extend(scored[row, : len(s.ids) - 1] for row, s in enumerate(chunk))
    return values


def assign_gae(
    samples: list[Sample], values: list[np.ndarray], trajectories: Sequence[Any], config: TrainConfig
) -> list[np.ndarray]:
    """Fill each sample's advantages by GAE over its trajectory's policy tokens; the returns per sample."""
    returns = [np.zeros(len(s.ids)) for s in samples]
    by_trajectory: dict[int, list[int]] = defaultdict(list)
    for index, sample in enumerate(samples):
        by_trajectory[sample.trajectory].append(index)
    for trajectory_index, members in by_trajectory.items():
        trajectory = trajectories[trajectory_index]
        positions = [(m, p) for m in members for p in np.flatnonzero(samples[m].mask)]
        token_value = np.array([values[m][p - 1] for m, p in positions])
        lengths = [len(turn.response_ids) for turn in trajectory.turns]
        rewards = turn_end_rewards(lengths, trajectory.turn_rewards, mode=config.reward_placement)
        advantages, token_returns = gae(rewards, token_value, gamma=config.gae_gamma, lam=config.gae_lambda)
        for (m, p), a, g in zip(positions, advantages, token_returns):
            samples[m].advantages[p] = a
            returns[m][p] = g
    if config.whiten_advantages:
        flat = np.concatenate([s.advantages[s.mask] for s in samples])
        mean, std = flat.mean(), flat.std() + 1e-8
        for sample in samples:
            sample.advantages = np.where(sample.mask, (sample.advantages - mean) / std, 0.0)
    return returns


def critic_update(
    critic: ValueModel,
    optimizer: torch.optim.Optimizer,
    samples: Sequence[Sample],
    old_values: Sequence[np.ndarray],
    returns: Sequence[np.ndarray],
    config: TrainConfig,
    pad_id: int,
    iteration: int,
) -> dict[str, float]:
    """Clipped value-loss epochs, token-mean over each minibatch."""
    rng = derive_rng("critic-minibatches", config.seed, iteration)
    total, steps = 0.0, 0
    for _ in range(config.epochs):
        order = rng.permutation(len(samples))
        for start in range(0, len(order), config.minibatch_size):
            chosen = list(order[start : start + config.minibatch_size])
            minibatch_tokens = float(sum(samples[i].mask.sum() for i in chosen))
            optimizer.zero_grad(set_to_none=True)
            for micro in micro_batches(chosen, config.micro_batch_size):
                batch = collate([samples[i] for i in micro], pad_id, config.device)
                width = batch.ids.shape[1] - 1
                old = torch.zeros((len(micro), width))
                target = torch.zeros((len(micro), width))
                for row, i in enumerate(micro):
                    old[row, : len(old_values[i])] = torch.from_numpy(old_values[i])
                    target[row, : len(samples[i].ids) - 1] = torch.from_numpy(returns[i][1:])
                values = token_values(critic, batch)
                loss = value_loss(
                    values,
                    old.to(config.device),
                    target.to(config.device),
                    batch.mask,
                    clip=config.value_clip,
                )
                share = float(batch.mask.sum()) / max(minibatch_tokens, 1.0)
                (loss * share).backward()
                total += float(loss.detach()) * share
            torch.nn.utils.clip_grad_norm_(critic.parameters(), config.grad_clip)
            optimizer.step()
            steps += 1
    return {"critic/value_loss": total / max(steps, 1)}


def train(config: TrainConfig, *, resume: bool = False) -> list[dict[str, Any]]:
    """Run PPO / MT-PPO for ``config.iterations`` iterations; the metrics records."""
    out = prepare_run(config, resume)
    template, model, tokenizer = load_policy(config, out, resume)
    critic = ValueModel(copy.deepcopy(model)).to(config.device)
    reference = frozen_copy(model) if config.kl_coef else None
    actor_optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    critic_optimizer = torch.optim.AdamW(
        critic.parameters(), lr=config.critic_lr, weight_decay=config.weight_decay
    )
    modules = {"policy": model, "critic": critic}
    optimizers = {"policy": actor_optimizer, "critic": critic_optimizer}
    start = load_checkpoint(out, modules, optimizers) if resume else 0
    writer = MetricsWriter(out / "metrics.jsonl")
    writer.truncate_after(start - 1)

    vec = make_vector_env(config)
    sampler = make_sampler(config, model, tokenizer)
    allowed = sampling_vocabulary(config, tokenizer)
    engine = make_engine(config, vec, sampler, tokenizer, template)
    pad_id = tokenizer.pad_token_id
    records = []
    try:
        for iteration in range(start, config.iterations):
            seed, task_ids = iteration_tasks(config, iteration)
            batch = engine.collect(
                seed=seed, task_ids=task_ids, sample_seed=derive_seed("sample", config.seed, iteration)
            )

            started = time.perf_counter()
            trajectories = batch.trajectories
            samples = build_samples(
                trajectories, [np.zeros(len(t.turns)) for t in trajectories], config.context
            )
            old_values = value_samples(critic, samples, config, pad_id)
            returns = assign_gae(samples, old_values, trajectories, config)
            advantage_s = time.perf_counter() - started

            started = time.perf_counter()
            actor_stats = ppo_update(
                model, reference, actor_optimizer, samples, config, pad_id, iteration, allowed
            )
            critic_stats = critic_update(
                critic, critic_optimizer, samples, old_values, returns, config, pad_id, iteration
            )
            sampler.sync(model)
            update_s = time.perf_counter() - started

            explained = _explained_variance(samples, old_values, returns)
            record = {
                "iteration": iteration,
                "episodes_seen": (iteration + 1) * config.num_groups * config.group_size,
                "estimator": f"ppo-{config.reward_placement}",
                **rollout_metrics(batch),
                **anchor_metrics(trajectories, "state_key"),
                **actor_stats,
                **critic_stats,
                "critic/explained_variance": explained,
                "time/advantage_s": advantage_s,
                "time/update_s": update_s,
            }
            writer.write(record)
            records.append(record)
            if (iteration + 1) % config.save_every == 0 or iteration + 1 == config.iterations:
                save_checkpoint(out, iteration, modules, optimizers)
    finally:
        vec.close()
    return records


def _explained_variance(
    samples: Sequence[Sample], values: Sequence[np.ndarray], returns: Sequence[np.ndarray]
) -> float:
    """1 − Var(G − V)/Var(G) over the policy tokens (how much of the return the critic explains)."""
    if not samples:
        return 0.0
    predicted = np.concatenate([v[s.mask[1:]] for s, v in zip(samples, values)])
    target = np.concatenate([g[s.mask] for s, g in zip(samples, returns)])
    variance = target.var()
    return float(1.0 - (target - predicted).var() / variance) if variance > 0 else 0.0


def main(argv: Sequence[str] | None = None) -> int:
    config, resume = parse_args(__doc__.splitlines()[0], argv)
    for record in train(config, resume=resume):
        print(
            f"iter {record['iteration']:4d}  success {record['success']:.3f}  return {record['return']:+.3f}  "
            f"value loss {record['critic/value_loss']:.4f}  update {record['time/update_s']:.1f}s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
