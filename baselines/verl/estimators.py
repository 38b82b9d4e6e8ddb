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

from baselines.advantages import (
    ESTIMATOR_OPTIONS,
    estimator_options,
    gigpo_advantages,
    grpo_advantages,
    mt_grpo_advantages,
    rloo_advantages,
)


def turn_spans(mask_row: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of policy tokens (value 1) in one response mask row."""
    padded = np.concatenate([[0], (np.asarray(mask_row) > 0).astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(padded))
    return [(int(s), int(e)) for s, e in zip(edges[::2], edges[1::2], strict=False)]


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
    return np.array([rewards[start:end].sum() for (start, _), end in zip(spans, bounds, strict=False)])


def _spread(
    per_turn: Sequence[np.ndarray], spans: Sequence[list[tuple[int, int]]], like: torch.Tensor
) -> torch.Tensor:
    out = torch.zeros_like(like, dtype=torch.float32)
    for row, (values, row_spans) in enumerate(zip(per_turn, spans, strict=False)):
        for value, (start, end) in zip(values, row_spans, strict=False):
            out[row, start:end] = float(value)
    return out


def _prepare(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, non_tensor_batch: Any):
    rewards = token_level_rewards.detach().float().cpu().numpy()
    mask = response_mask.detach().cpu().numpy()
    spans = [turn_spans(row) for row in mask]
    turn_rewards = [_turn_rewards(i, spans[i], rewards[i], non_tensor_batch) for i in range(len(spans))]
    return spans, turn_rewards


# What make_estimators' settings default to (every option of baselines.advantages.ESTIMATOR_OPTIONS
# is accepted too; unset options keep the estimator function's default, the paper's form).
DEFAULT_SETTINGS: dict[str, Any] = {
    "omega": 1.0,
    "anchor": "state",
    "alpha": 1.0,
    "gamma": None,
    "preset": "paper",
    "reference_code": "",
}
SETTING_NAMES = frozenset(DEFAULT_SETTINGS) | {n for names in ESTIMATOR_OPTIONS.values() for n in names}


def resolve_settings(settings: dict[str, Any], config: Any) -> dict[str, Any]:
    """The settings of one estimator call: defaults, then verl's algorithm config, then ``settings``,
    then the config's ``agentenvs`` block (``+algorithm.agentenvs.preset=reference`` on the command line)."""
    merged = dict(DEFAULT_SETTINGS)
    if config is not None:
        merged["normalize"] = "std" if config.get("norm_adv_by_std_in_grpo", True) else "none"
        merged["gamma"] = config.get("gamma", None)
    merged.update(settings)
    block = config.get("agentenvs", None) if config is not None else None
    if block:
        block = dict(block)
        unknown = sorted(set(block) - SETTING_NAMES)
        if unknown:
            raise ValueError(f"unknown agentenvs settings {unknown}; known: {sorted(SETTING_NAMES)}")
        merged.update(block)
    if merged["gamma"] is None:
        merged["gamma"] = 0.95
    return merged


def make_estimators(**settings: Any) -> dict[str, Any]:
    """verl estimator functions by registry name.

    ``settings``: GiGPO's ``omega``/``anchor``/``gamma``, MT-GRPO's ``alpha``,
    ``preset`` (``"paper"`` or ``"reference"``: the released code's
    arithmetic, see :func:`baselines.advantages.reference_preset`),
    ``reference_code``, and any estimator option (``ddof``, ``eps``,
    ``eps_mode``, ``singleton``, ``episode_over``, ``mt_grpo_form``,
    ``normalize``). Every call also reads verl's algorithm config
    (:func:`resolve_settings`), so each of them can be set from Hydra.
    """
    unknown = sorted(set(settings) - SETTING_NAMES)
    if unknown:
        raise ValueError(f"unknown settings {unknown}; known: {sorted(SETTING_NAMES)}")

    def options(name: str, config: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        merged = resolve_settings(settings, config)
        return merged, estimator_options(
            name, merged, preset=merged["preset"], code=merged["reference_code"] or None
        )

    def episode_level(name: str, function: Any) -> Any:
        def estimator(
            token_level_rewards, response_mask, index=None, config=None, non_tensor_batch=None, **_: Any
        ):
            spans, turn_rewards = _prepare(token_level_rewards, response_mask, non_tensor_batch)
            _, chosen = options(name, config)
            episode = function(
                [r.sum() for r in turn_rewards], list(index), step_counts=[len(s) for s in spans], **chosen
            )
            per_turn = [np.full(len(s), a) for s, a in zip(spans, episode, strict=False)]
            advantages = _spread(per_turn, spans, token_level_rewards)
            return advantages, advantages

        return estimator

    def mt_grpo(token_level_rewards, response_mask, index=None, config=None, non_tensor_batch=None, **_: Any):
        spans, turn_rewards = _prepare(token_level_rewards, response_mask, non_tensor_batch)
        merged, chosen = options("mt_grpo", config)
        per_turn = mt_grpo_advantages(
            [r[:-1] for r in turn_rewards],
            [r[-1] if r.size else 0.0 for r in turn_rewards],
            list(index),
            alpha=float(merged["alpha"]),
            **chosen,
        )
        advantages = _spread(per_turn, spans, token_level_rewards)
        return advantages, advantages

    def gigpo(token_level_rewards, response_mask, index=None, config=None, non_tensor_batch=None, **_: Any):
        merged, chosen = options("gigpo", config)
        key_field = f"agentenvs_{merged['anchor']}_keys"
        if non_tensor_batch is None or key_field not in non_tensor_batch:
            raise ValueError(
                f"GiGPO needs per-turn anchor keys in non_tensor_batch[{key_field!r}]: "
                "use the agentenvs agent loop and baselines.verl.install() so verl passes non_tensor_batch "
                "to agentenvs estimators"
            )
        spans, turn_rewards = _prepare(token_level_rewards, response_mask, non_tensor_batch)
        keys = [list(k) for k in non_tensor_batch[key_field]]
        result = gigpo_advantages(
            turn_rewards,
            keys,
            list(index),
            gamma=float(merged["gamma"]),
            omega=float(merged["omega"]),
            **chosen,
        )
        advantages = _spread(result.advantages, spans, token_level_rewards)
        return advantages, advantages

    return {
        "agentenvs_grpo": episode_level("grpo", grpo_advantages),
        "agentenvs_rloo": episode_level("rloo", rloo_advantages),
        "agentenvs_mt_grpo": mt_grpo,
        "agentenvs_gigpo": gigpo,
    }
