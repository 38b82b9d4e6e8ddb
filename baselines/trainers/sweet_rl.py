"""SWEET-RL (Zhou et al. 2025): an asymmetric critic with training-time information, DPO actor.

The critic is a copy of the base LM that reads the env's training-time
information c (``info["privileged"]``: the goal product, the hidden spec, the
optimal remaining moves...), which the actor never sees. Its turn advantage
is its own mean log-probability ratio against the frozen reference:

    A_θ(o_t, a_t, c) = (1/L) Σ_l log[π_θ(a_t^l | o_t, a_t^{<l}, c) / π_ref(a_t^l | o_t, a_t^{<l})]

One iteration:

1. roll out G groups × N copies (``context: window``; every turn keeps the
   prompt text it was sampled from);
2. critic: pairs (best fully successful trajectory, each strictly worse one)
   of each task group (``sweet_pair_mode``; ``all_pairs`` is the frontend
   setting: every two trajectories ≥ ``sweet_min_margin`` apart); Bradley–Terry loss
   −log σ(β Σ_t A_θ(τ⁺) − β Σ_t A_θ(τ⁻)), β = 0.1;
3. actor: for ``sweet_prefixes`` turn prefixes, sample ``sweet_candidates``
   candidate turns from the actor, rank them by the critic's advantage, pair
   the top half against the bottom half (``sweet_pairs_per_prefix`` pairs,
   ``sweet_actor_pair_mode``: fixed ranks or the released random draws),
   and take a DPO step (β = 0.1) with an NLL term (0.01) on the chosen turns;
   the actor's prompts never contain c;
4. metrics record; checkpoint of actor, critic and both optimizers.

Envs without privileged information give the critic an empty c (the paper's
"without training-time information" ablation).

Run::

    python -m baselines.trainers.sweet_rl --config baselines/configs/sweet_rl_colbench.yaml
"""

from __future__ import annotations

import copy
import json
import random
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from agentenvs.core import derive_rng, derive_seed
from baselines.advantages import ranked_candidate_pairs, reference_preset, sweet_preference_pairs
from baselines.losses import bradley_terry_loss, dpo_loss, sweet_turn_advantage
from baselines.metrics import MetricsWriter, rollout_metrics
from baselines.rollout import PromptEncoder, Trajectory, Turn
from baselines.trainers.common import (
    Sample,
    TrainConfig,
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
    prepare_run,
    save_checkpoint,
    sequence_logprobs,
)


def critic_prompt_text(turn: Turn) -> str:
    """The actor's prompt with the training-time information written above it."""
    hidden = (
        json.dumps(turn.privileged, sort_keys=True, default=str) if turn.privileged is not None else "none"
    )
    return f"Training-time information (hidden from the agent): {hidden}\n\n{turn.prompt_text}"


def response_sample(prompt_ids: Sequence[int], response_ids: Sequence[int]) -> Sample:
    ids = list(prompt_ids) + list(response_ids)
    mask = np.zeros(len(ids), dtype=bool)
    mask[len(prompt_ids) :] = True
    return Sample(ids, mask, np.zeros(len(ids)), np.where(mask, 0, -1), 0)


def response_logprobs(
    model: Any, samples: Sequence[Sample], config: TrainConfig, pad_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T−1) token log-probs and the policy-token mask of ``samples`` (with grad when enabled)."""
    rows, masks = [], []
    width = max(len(s.ids) for s in samples) - 1
    for chunk in micro_batches(samples, config.micro_batch_size):
        batch = collate(chunk, pad_id, config.device)
        logprobs, _ = sequence_logprobs(model, batch)
        pad = width - logprobs.shape[1]
        rows.append(torch.nn.functional.pad(logprobs, (0, pad)))
        masks.append(torch.nn.functional.pad(batch.mask, (0, pad)))
    return torch.cat(rows), torch.cat(masks)


def turn_advantages(
    critic: Any,
    reference: Any,
    encoder: PromptEncoder,
    turns: Sequence[Turn],
    responses: Sequence[Sequence[int]],
    config: TrainConfig,
    pad_id: int,
) -> torch.Tensor:
    """A_θ of each (turn prefix, response): critic with c against the reference without it."""
    critic_samples = [
        response_sample(encoder.first(critic_prompt_text(t)), r) for t, r in zip(turns, responses)
    ]
    actor_samples = [response_sample(t.prompt_ids, r) for t, r in zip(turns, responses)]
    critic_logprobs, critic_mask = response_logprobs(critic, critic_samples, config, pad_id)
    with torch.no_grad():
        ref_logprobs, ref_mask = response_logprobs(reference, actor_samples, config, pad_id)
    # Both layouts hold the same response tokens, after prompts of different lengths.
    aligned_ref = torch.zeros_like(critic_logprobs)
    for row in range(len(turns)):
        aligned_ref[row, critic_mask[row]] = ref_logprobs[row, ref_mask[row]]
    return sweet_turn_advantage(critic_logprobs, aligned_ref, critic_mask)


def critic_step(
    critic: Any,
    reference: Any,
    encoder: PromptEncoder,
    trajectories: Sequence[Trajectory],
    pairs: Sequence[tuple[int, int]],
    optimizer: torch.optim.Optimizer,
    config: TrainConfig,
    pad_id: int,
) -> dict[str, float]:
    """One Bradley–Terry step on (preferred, rejected) trajectory pairs: −log σ(β Σ_t A(τ⁺) − β Σ_t A(τ⁻))."""
    involved = sorted({i for pair in pairs for i in pair})
    turns = [turn for i in involved for turn in trajectories[i].turns]
    owners = np.array([i for i in involved for _ in trajectories[i].turns])
    advantages = turn_advantages(
        critic, reference, encoder, turns, [t.response_ids for t in turns], config, pad_id
    )
    totals = {i: advantages[torch.from_numpy(owners == i)].sum() for i in involved}
    chosen = torch.stack([totals[a] for a, _ in pairs])
    rejected = torch.stack([totals[b] for _, b in pairs])
    loss = bradley_terry_loss(chosen, rejected, beta=config.sweet_beta)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(critic.parameters(), config.grad_clip)
    optimizer.step()
    return {
        "critic/bt_loss": float(loss.detach()),
        "critic/pair_accuracy": float((chosen > rejected).float().mean()),
    }


def pair_options(config: TrainConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """Options of the critic pairs and the actor pairs: the config's, or the released script's.

    With ``preset: reference`` the pairs follow sweet_rl's scripts
    (``reference_code`` ``sweet-rl-backend``, the default, or ``sweet-rl-frontend``);
    the released actor pairs come from one seeded random stream over the
    whole dataset, here one stream per iteration seeded from the run's seed.
    """
    critic = {
        "mode": config.sweet_pair_mode,
        "success_score": config.sweet_success_score,
        "min_margin": config.sweet_min_margin,
    }
    actor = {"mode": config.sweet_actor_pair_mode, "num_pairs": config.sweet_pairs_per_prefix}
    if config.preset == "reference":
        code = config.reference_code or None
        critic.update(reference_preset("sweet_critic", code))
        actor.update(reference_preset("sweet_actor", code))
    return critic, actor


def train(config: TrainConfig, *, resume: bool = False) -> list[dict[str, Any]]:
    """Run SWEET-RL for ``config.iterations`` iterations; the metrics records."""
    if config.context != "window":
        raise ValueError(
            "SWEET-RL trains on turn prefixes: use context='window' (with a long history_window)"
        )
    out = prepare_run(config, resume)
    template, model, tokenizer = load_policy(config, out, resume)
    reference = frozen_copy(model)
    critic = copy.deepcopy(model)
    actor_optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    critic_optimizer = torch.optim.AdamW(
        critic.parameters(), lr=config.sweet_critic_lr, weight_decay=config.weight_decay
    )
    modules = {"policy": model, "critic": critic}
    optimizers = {"policy": actor_optimizer, "critic": critic_optimizer}
    start = load_checkpoint(out, modules, optimizers) if resume else 0
    writer = MetricsWriter(out / "metrics.jsonl")
    writer.truncate_after(start - 1)

    vec = make_vector_env(config)
    sampler = make_sampler(config, model, tokenizer)
    engine = make_engine(config, vec, sampler, tokenizer, template)
    encoder = PromptEncoder(tokenizer)
    pad_id = tokenizer.pad_token_id
    critic_pair_options, actor_pair_options = pair_options(config)
    records = []
    try:
        for iteration in range(start, config.iterations):
            seed, task_ids = iteration_tasks(config, iteration)
            batch = engine.collect(
                seed=seed, task_ids=task_ids, sample_seed=derive_seed("sample", config.seed, iteration)
            )
            trajectories = batch.trajectories
            started = time.perf_counter()

            # ---- critic: Bradley–Terry on (preferred, rejected) trajectories of one task
            pairs = sweet_preference_pairs(
                [t.score for t in trajectories], [t.group for t in trajectories], **critic_pair_options
            )
            critic_stats = {
                "critic/pairs": float(len(pairs)),
                "critic/bt_loss": 0.0,
                "critic/pair_accuracy": 0.0,
            }
            for _ in range(config.sweet_critic_steps if pairs else 0):
                critic_stats.update(
                    critic_step(
                        critic, reference, encoder, trajectories, pairs, critic_optimizer, config, pad_id
                    )
                )

            # ---- actor: DPO on critic-ranked candidate turns for sampled prefixes
            all_turns = [turn for t in trajectories for turn in t.turns]
            rng = derive_rng("sweet-prefixes", config.seed, iteration)
            chosen_prefixes = [
                all_turns[i]
                for i in rng.choice(
                    len(all_turns), size=min(config.sweet_prefixes, len(all_turns)), replace=False
                )
            ]
            candidates = sampler.generate(
                [t.prompt_ids for t in chosen_prefixes for _ in range(config.sweet_candidates)],
                max_new_tokens=config.max_new_tokens,
                temperature=config.temperature,
                seed=derive_seed("sweet-candidates", config.seed, iteration) >> 1,
            )
            prefix_of = [t for t in chosen_prefixes for _ in range(config.sweet_candidates)]
            pair_rng = random.Random(derive_seed("sweet-actor-pairs", config.seed, iteration))
            with torch.no_grad():
                scores = (
                    turn_advantages(critic, reference, encoder, prefix_of, candidates, config, pad_id)
                    .cpu()
                    .numpy()
                )
            preferred: list[tuple[Turn, list[int], list[int]]] = []
            for p, turn in enumerate(chosen_prefixes):
                block = slice(p * config.sweet_candidates, (p + 1) * config.sweet_candidates)
                ranked = ranked_candidate_pairs(scores[block], rng=pair_rng, **actor_pair_options)
                for a, b in ranked:
                    good, bad = candidates[block][a], candidates[block][b]
                    if good != bad and good and bad:
                        preferred.append((turn, good, bad))
            actor_stats = {
                "actor/dpo_pairs": float(len(preferred)),
                "actor/dpo_loss": 0.0,
                "actor/preference_accuracy": 0.0,
            }
            if preferred:
                good_samples = [response_sample(t.prompt_ids, g) for t, g, _ in preferred]
                bad_samples = [response_sample(t.prompt_ids, b) for t, _, b in preferred]
                policy_good, good_mask = response_logprobs(model, good_samples, config, pad_id)
                policy_bad, bad_mask = response_logprobs(model, bad_samples, config, pad_id)
                with torch.no_grad():
                    ref_good, _ = response_logprobs(reference, good_samples, config, pad_id)
                    ref_bad, _ = response_logprobs(reference, bad_samples, config, pad_id)
                sums = [
                    (x * m).sum(-1)
                    for x, m in (
                        (policy_good, good_mask),
                        (policy_bad, bad_mask),
                        (ref_good, good_mask),
                        (ref_bad, bad_mask),
                    )
                ]
                nll = -(policy_good * good_mask).sum(-1) / good_mask.sum(-1).clamp_min(1)
                loss, stats = dpo_loss(
                    *sums, beta=config.sweet_beta, chosen_nll=nll, nll_coef=config.sweet_nll_coef
                )
                actor_optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
                actor_optimizer.step()
                actor_stats["actor/dpo_loss"] = float(loss.detach())
                actor_stats["actor/preference_accuracy"] = stats["preference_accuracy"]
            sampler.sync(model)
            update_s = time.perf_counter() - started

            record = {
                "iteration": iteration,
                "episodes_seen": (iteration + 1) * config.num_groups * config.group_size,
                "estimator": "sweet_rl",
                **rollout_metrics(batch),
                "privileged_share": float(np.mean([turn.privileged is not None for turn in all_turns])),
                **critic_stats,
                **actor_stats,
                "time/update_s": update_s,
            }
            writer.write(record)
            records.append(record)
            if (iteration + 1) % config.save_every == 0 or iteration + 1 == config.iterations:
                save_checkpoint(out, iteration, modules, optimizers)
    finally:
        vec.close()
    return records


def main(argv: Sequence[str] | None = None) -> int:
    config, resume = parse_args(__doc__.splitlines()[0], argv)
    for record in train(config, resume=resume):
        print(
            f"iter {record['iteration']:4d}  success {record['success']:.3f}  critic pairs {record['critic/pairs']:.0f}  "
            f"bt {record['critic/bt_loss']:.4f}  dpo pairs {record['actor/dpo_pairs']:.0f}  dpo {record['actor/dpo_loss']:.4f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
