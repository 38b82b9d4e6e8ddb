"""The agentenvs estimators in verl's advantage-estimator form (torch tensors over a verl batch).

A verl multi-turn sample is one whole trajectory: ``response_mask`` is 1 on
the policy's tokens and 0 on the environment's, so the runs of 1s are the
turns. Per-turn data comes from the agent loop
(:mod:`baselines.verl.agent_loop`) through ``non_tensor_batch``:
``agentenvs_turn_rewards`` (one reward per turn) and
``agentenvs_state_keys`` / ``agentenvs_obs_keys`` (the key of the state each
turn acted from). Without them, a turn's reward is the sum of
``token_level_rewards`` from its first token to the next turn's first token.

Every function has verl's estimator signature
``(token_level_rewards, response_mask, index, config, non_tensor_batch=None,
**kwargs) -> (advantages, returns)`` and computes with the numpy estimators
of :mod:`baselines.advantages`; every policy token of turn k carries turn
k's advantage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from baselines.advantages import gigpo_advantages, grpo_advantages, mt_grpo_advantages, rloo_advantages


def turn_spans(mask_row: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of policy tokens (value 1) in one response mask row."""
    padded = np.concatenate([[0], (np.asarray(mask_row) > 0).astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(padded))
    return [(int(s), int(e)) for s, e in zip(edges[::2], edges[1::2])]


def _turn_rewards(
    row: int, spans: list[tuple[int, int]], rewards: np.ndarray, non_tensor_batch: Any
) -> np.ndarray:
    if non_tensor_batch is not None and "agentenvs_turn_rewards" in non_tensor_batch:
        given = np.asarray(non_tensor_batch["agentenvs_turn_rewards"][row], dtype=np.float64)
        if given.shape[0] != len(spans):
            raise ValueError(
                f"sample {row}: {given.shape[0]} turn rewards but {len(spans)} policy turns in the mask"
            )
        return given
    bounds = [s for s, _ in spans[1:]] + [rewards.shape[0]]
    return np.array([rewards[start:end].sum() for (start, _), end in zip(spans, bounds)])


def _spread(
    per_turn: Sequence[np.ndarray], spans: Sequence[list[tuple[int, int]]], like: torch.Tensor
) -> torch.Tensor:
    out = torch.zeros_like(like, dtype=torch.float32)
    for row, (values, row_spans) in enumerate(zip(per_turn, spans)):
        for value, (start, end) in zip(values, row_spans):
            out[row, start:end] = float(value)
    return out


def _prepare(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, non_tensor_batch: Any):
    rewards = token_level_rewards.detach().float().cpu().numpy()
    mask = response_mask.detach().cpu().numpy()
    spans = [turn_spans(row) for row in mask]
    turn_rewards = [_turn_rewards(i, spans[i], rewards[i], non_tensor_batch) for i in range(len(spans))]
    return spans, turn_rewards


def _normalization(config: Any) -> str:
    return "std" if config is None or config.get("norm_adv_by_std_in_grpo", True) else "none"


def make_estimators(
    *, omega: float = 1.0, anchor: str = "state", alpha: float = 1.0, ddof: int = 0
) -> dict[str, Any]:
    """verl estimator functions by registry name, with GiGPO's ω/anchor and MT-GRPO's α bound."""

    def grpo(token_level_rewards, response_mask, index=None, config=None, non_tensor_batch=None, **_: Any):
        spans, turn_rewards = _prepare(token_level_rewards, response_mask, non_tensor_batch)
        episode = grpo_advantages(
            [r.sum() for r in turn_rewards], list(index), normalize=_normalization(config), ddof=ddof
        )
        advantages = _spread([np.full(len(s), a) for s, a in zip(spans, episode)], spans, token_level_rewards)
        return advantages, advantages

    def rloo(token_level_rewards, response_mask, index=None, config=None, non_tensor_batch=None, **_: Any):
        spans, turn_rewards = _prepare(token_level_rewards, response_mask, non_tensor_batch)
        episode = rloo_advantages([r.sum() for r in turn_rewards], list(index))
        advantages = _spread([np.full(len(s), a) for s, a in zip(spans, episode)], spans, token_level_rewards)
        return advantages, advantages

    def mt_grpo(token_level_rewards, response_mask, index=None, config=None, non_tensor_batch=None, **_: Any):
        spans, turn_rewards = _prepare(token_level_rewards, response_mask, non_tensor_batch)
        per_turn = mt_grpo_advantages(
            [r[:-1] for r in turn_rewards],
            [r[-1] if r.size else 0.0 for r in turn_rewards],
            list(index),
            alpha=alpha,
            normalize=_normalization(config),
            ddof=ddof,
        )
        advantages = _spread(per_turn, spans, token_level_rewards)
        return advantages, advantages

    def gigpo(token_level_rewards, response_mask, index=None, config=None, non_tensor_batch=None, **_: Any):
        key_field = f"agentenvs_{anchor}_keys"
        if non_tensor_batch is None or key_field not in non_tensor_batch:
            raise ValueError(
                f"GiGPO needs per-turn anchor keys in non_tensor_batch[{key_field!r}]: use the agentenvs agent loop "
                "and baselines.verl.install() so verl passes non_tensor_batch to agentenvs estimators"
            )
        spans, turn_rewards = _prepare(token_level_rewards, response_mask, non_tensor_batch)
        keys = [list(k) for k in non_tensor_batch[key_field]]
        gamma = float(config.get("gamma", 0.95)) if config is not None else 0.95
        result = gigpo_advantages(
            turn_rewards,
            keys,
            list(index),
            gamma=gamma,
            omega=omega,
            normalize=_normalization(config),
            ddof=ddof,
        )
        advantages = _spread(result.advantages, spans, token_level_rewards)
        return advantages, advantages

    return {
        "agentenvs_grpo": grpo,
        "agentenvs_rloo": rloo,
        "agentenvs_mt_grpo": mt_grpo,
        "agentenvs_gigpo": gigpo,
    }
