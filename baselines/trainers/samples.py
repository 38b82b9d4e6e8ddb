"""Training sequences from trajectories, their padded batches, and token log-probabilities under a model.

Imports ``baselines.losses`` and ``baselines.rollout`` (torch, numpy).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from baselines.losses import entropy_from_logits, token_logprobs
from baselines.rollout import Trajectory


@dataclass
class Sample:
    """One training sequence: token ids, policy-token mask, per-token advantage, turn of each token."""

    ids: list[int]
    mask: np.ndarray
    advantages: np.ndarray
    turn_of: np.ndarray
    trajectory: int


def build_samples(
    trajectories: Sequence[Trajectory], turn_advantages: Sequence[np.ndarray], context: str
) -> list[Sample]:
    """Training sequences: one per turn (``window``) or one per trajectory (``full``).

    Every policy token of turn k carries ``turn_advantages[i][k]``.
    """
    samples: list[Sample] = []
    for index, (trajectory, advantages) in enumerate(zip(trajectories, turn_advantages, strict=False)):
        if context == "full":
            ids, mask, turn_of = trajectory.packed()
            token_adv = np.where(mask, advantages[np.maximum(turn_of, 0)], 0.0)
            samples.append(Sample(ids, mask, token_adv, turn_of, index))
            continue
        for k, turn in enumerate(trajectory.turns):
            ids = turn.prompt_ids + turn.response_ids
            mask = np.zeros(len(ids), dtype=bool)
            mask[len(turn.prompt_ids) :] = True
            turn_of = np.where(mask, k, -1)
            samples.append(Sample(ids, mask, np.where(mask, advantages[k], 0.0), turn_of, index))
    return [s for s in samples if s.mask.any()]


def whiten_advantages(samples: Sequence[Sample]) -> None:
    """Set each sample's policy-token advantages to (A − mean)/(std + 1e-8) over every policy token of
    ``samples``, and 0 off them."""
    if not samples:
        return
    flat = np.concatenate([s.advantages[s.mask] for s in samples])
    mean, std = flat.mean(), flat.std() + 1e-8
    for sample in samples:
        sample.advantages = np.where(sample.mask, (sample.advantages - mean) / std, 0.0)


def response_sample(prompt_ids: Sequence[int], response_ids: Sequence[int]) -> Sample:
    """A prompt and one response as a sample whose policy tokens are the response's (advantage 0)."""
    ids = list(prompt_ids) + list(response_ids)
    mask = np.zeros(len(ids), dtype=bool)
    mask[len(prompt_ids) :] = True
    return Sample(ids, mask, np.zeros(len(ids)), np.where(mask, 0, -1), 0)


@dataclass
class Collated:
    """Right-padded tensors; ``mask``/``advantages``/``old_logprobs`` are aligned with ``ids[:, 1:]``."""

    ids: torch.Tensor
    attention: torch.Tensor
    mask: torch.Tensor
    advantages: torch.Tensor


def collate(samples: Sequence[Sample], pad_id: int, device: str | torch.device) -> Collated:
    """Right-pad ``samples`` with ``pad_id`` into one batch on ``device``."""
    width = max(len(s.ids) for s in samples)
    ids = torch.full((len(samples), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(samples), width), dtype=torch.long)
    mask = torch.zeros((len(samples), width), dtype=torch.bool)
    advantages = torch.zeros((len(samples), width), dtype=torch.float32)
    for row, sample in enumerate(samples):
        length = len(sample.ids)
        ids[row, :length] = torch.tensor(sample.ids)
        attention[row, :length] = 1
        mask[row, :length] = torch.from_numpy(sample.mask)
        advantages[row, :length] = torch.from_numpy(sample.advantages.astype(np.float32))
    return Collated(
        ids.to(device), attention.to(device), mask[:, 1:].to(device), advantages[:, 1:].to(device)
    )


def sequence_logprobs(
    model: Any, batch: Collated, *, with_entropy: bool = False, allowed: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """log π(ids_t | ids_<t) for t ≥ 1, shape (B, T−1); the per-token entropy when asked.

    ``allowed`` (a boolean mask over the vocabulary) renormalises the policy
    over the tokens sampling was restricted to, so the trained distribution
    is the one that acted; values off the policy tokens are then set to 0.
    """
    logits = model(input_ids=batch.ids, attention_mask=batch.attention).logits[:, :-1]
    if allowed is not None:
        logits = logits.masked_fill(~allowed, torch.finfo(logits.dtype).min)
    logprobs = token_logprobs(logits, batch.ids[:, 1:])
    entropy = entropy_from_logits(logits) if with_entropy else None
    if allowed is not None:
        logprobs = logprobs.masked_fill(~batch.mask, 0.0)
        entropy = entropy.masked_fill(~batch.mask, 0.0) if entropy is not None else None
    return logprobs, entropy


def micro_batches(samples: Sequence[Any], size: int) -> Iterator[list[Any]]:
    """Consecutive chunks of at most ``size``."""
    for start in range(0, len(samples), size):
        yield list(samples[start : start + size])


@torch.no_grad()
def score_samples(
    model: Any,
    samples: Sequence[Sample],
    micro_batch_size: int,
    device: str,
    pad_id: int,
    allowed: torch.Tensor | None = None,
) -> list[torch.Tensor]:
    """Per-sample token log-probs (aligned with ``ids[1:]``) under ``model``, on the CPU."""
    scored: list[torch.Tensor] = []
    for chunk in micro_batches(samples, micro_batch_size):
        batch = collate(chunk, pad_id, device)
        logprobs, _ = sequence_logprobs(model, batch, allowed=allowed)
        scored.extend(logprobs[row, : len(s.ids) - 1].float().cpu() for row, s in enumerate(chunk))
    return scored


def stack_rows(rows: Sequence[torch.Tensor], width: int, device: str) -> torch.Tensor:
    """Per-sample 1-D rows right-padded with 0 into a (len(rows), width) tensor on ``device``."""
    out = torch.zeros((len(rows), width))
    for index, row in enumerate(rows):
        out[index, : row.shape[0]] = row
    return out.to(device)
