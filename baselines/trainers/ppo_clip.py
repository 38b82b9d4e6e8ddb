"""The PPO-clip actor update that critic-free GRPO/GiGPO and actor-critic PPO share.

Imports ``baselines.losses`` and the ``samples`` module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from agentenvs.core import derive_rng
from baselines.losses import kl_penalty, masked_mean, ppo_clip_loss
from baselines.trainers.config import OptimSection
from baselines.trainers.samples import (
    Sample,
    collate,
    micro_batches,
    score_samples,
    sequence_logprobs,
    stack_rows,
)


def ppo_update(
    model: Any,
    reference: Any | None,
    optimizer: torch.optim.Optimizer,
    samples: Sequence[Sample],
    optim: OptimSection,
    *,
    device: str,
    seed: int,
    pad_id: int,
    iteration: int,
    allowed: torch.Tensor | None = None,
) -> dict[str, float]:
    """PPO-clip epochs over ``samples`` with KL to ``reference`` and an entropy bonus.

        L = mean_tokens[ −min(ρA, clip(ρ, 1±ε)A) + β·KL(π‖π_ref) − c_H·H(π) ]

    Token-mean over each minibatch; gradients clipped to ``grad_clip``;
    minibatch order from the stream ``("ppo-minibatches", seed, iteration)``.
    """
    if not samples:
        return {"actor/loss": 0.0, "actor/kl": 0.0, "actor/entropy": 0.0, "actor/clip_fraction": 0.0}
    old = score_samples(model, samples, optim.micro_batch_size, device, pad_id, allowed)
    ref = (
        score_samples(reference, samples, optim.micro_batch_size, device, pad_id, allowed)
        if reference is not None and optim.kl_coef
        else None
    )
    rng = derive_rng("ppo-minibatches", seed, iteration)
    totals = {"loss": 0.0, "kl": 0.0, "entropy": 0.0, "clip_fraction": 0.0}
    weight_sum = 0.0
    model.train()
    for _ in range(optim.epochs):
        order = rng.permutation(len(samples))
        for start in range(0, len(order), optim.minibatch_size):
            chosen = order[start : start + optim.minibatch_size]
            minibatch_tokens = float(sum(samples[i].mask.sum() for i in chosen))
            optimizer.zero_grad(set_to_none=True)
            for micro in micro_batches(list(chosen), optim.micro_batch_size):
                chunk = [samples[i] for i in micro]
                batch = collate(chunk, pad_id, device)
                width = batch.ids.shape[1] - 1
                old_logprobs = stack_rows([old[i] for i in micro], width, device)
                logprobs, entropy = sequence_logprobs(
                    model, batch, with_entropy=optim.entropy_coef > 0, allowed=allowed
                )
                policy_loss, stats = ppo_clip_loss(
                    logprobs, old_logprobs, batch.advantages, batch.mask, clip=optim.clip
                )
                loss = policy_loss
                kl_value = torch.zeros(())
                if ref is not None:
                    ref_logprobs = stack_rows([ref[i] for i in micro], width, device)
                    kl_value = masked_mean(kl_penalty(logprobs, ref_logprobs, kind=optim.kl_kind), batch.mask)
                    loss = loss + optim.kl_coef * kl_value
                entropy_value = masked_mean(entropy, batch.mask) if entropy is not None else torch.zeros(())
                loss = loss - optim.entropy_coef * entropy_value
                share = float(batch.mask.sum()) / max(minibatch_tokens, 1.0)
                (loss * share).backward()
                totals["loss"] += float(loss.detach()) * share
                totals["kl"] += float(kl_value.detach()) * share
                totals["entropy"] += float(entropy_value.detach()) * share
                totals["clip_fraction"] += stats["clip_fraction"] * share
            weight_sum += 1.0
            torch.nn.utils.clip_grad_norm_(model.parameters(), optim.grad_clip)
            optimizer.step()
    return {f"actor/{name}": value / max(weight_sum, 1.0) for name, value in totals.items()}
