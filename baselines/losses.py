"""Training losses of the reference trainers (torch).

All token tensors are ``(batch, tokens)`` with a ``mask`` that is 1 on policy
tokens (what the model generated) and 0 on prompt, environment and padding
tokens. Aggregation is token-mean over the masked tokens of the batch, the
GiGPO/verl default.

==========================  ====================================================
function                    formula
==========================  ====================================================
ppo_clip_loss               −min(ρ A, clip(ρ, 1−ε, 1+ε) A),  ρ = exp(log π − log π_old)
kl_penalty                  k1: log π − log π_ref;  low_var_kl: e^{Δ} − Δ − 1, Δ = log π_ref − log π
entropy_from_logits         −Σ_v p_v log p_v
value_loss                  ½ max((V − G)², (clip(V, V_old ± ε) − G)²)
sweet_turn_advantage        (1/L) Σ_l [log π_θ(a^l | o, a^{<l}, c) − log π_ref(a^l | o, a^{<l})]
bradley_terry_loss          −log σ(β Σ_t A(τ⁺) − β Σ_t A(τ⁻))
dpo_loss                    −log σ(β[(log π(y⁺) − log π_ref(y⁺)) − (log π(y⁻) − log π_ref(y⁻))]) + c·NLL(y⁺)
==========================  ====================================================
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over positions where ``mask`` is 1 (0 when the mask is empty)."""
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp_min(1.0)


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log p(token_t | prefix) from next-token ``logits`` already aligned with ``tokens``."""
    return torch.gather(F.log_softmax(logits.float(), dim=-1), -1, tokens.unsqueeze(-1)).squeeze(-1)


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Per-position entropy −Σ_v p_v log p_v of the next-token distribution."""
    log_probs = F.log_softmax(logits.float(), dim=-1)
    return -(log_probs.exp() * log_probs).sum(-1)


def ppo_clip_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip: float = 0.2,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO clipped surrogate, token-mean over the policy tokens.

        L = mean_t −min(ρ_t A_t, clip(ρ_t, 1−ε, 1+ε) A_t),   ρ_t = π(a_t)/π_old(a_t)

    Returns the loss and the share of tokens where clipping was active.
    """
    ratio = torch.exp(logprobs - old_logprobs)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip, 1.0 + clip) * advantages
    loss = masked_mean(-torch.minimum(unclipped, clipped), mask)
    clip_fraction = masked_mean((clipped < unclipped).float(), mask)
    return loss, {"clip_fraction": float(clip_fraction)}


def kl_penalty(
    logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor,
    *,
    kind: Literal["low_var_kl", "k1"] = "low_var_kl",
) -> torch.Tensor:
    """Per-token KL estimate of π against the reference π_ref (samples drawn from π).

    ``k1``: log π − log π_ref (unbiased, high variance). ``low_var_kl`` (k3,
    Schulman's estimator; the GiGPO default): e^{Δ} − Δ − 1 with
    Δ = log π_ref − log π, non-negative, clamped to [−10, 10] as verl does.
    """
    if kind == "k1":
        return logprobs - ref_logprobs
    if kind == "low_var_kl":
        delta = ref_logprobs - logprobs
        return torch.clamp(torch.exp(delta) - delta - 1.0, min=-10.0, max=10.0)
    raise ValueError(f"kind must be 'low_var_kl' or 'k1', got {kind!r}")


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip: float | None = 0.2,
) -> torch.Tensor:
    """Clipped value loss: ½ mean_t max((V_t − G_t)², (V_old + clip(V_t − V_old, ±ε) − G_t)²)."""
    squared = (values - returns) ** 2
    if clip is not None:
        clipped = old_values + torch.clamp(values - old_values, -clip, clip)
        squared = torch.maximum(squared, (clipped - returns) ** 2)
    return 0.5 * masked_mean(squared, mask)


def sweet_turn_advantage(
    critic_logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor,
    mask: torch.Tensor,
    *,
    length_normalize: bool = True,
) -> torch.Tensor:
    """SWEET-RL turn advantage parameterised by the critic LM, one value per row.

        A_θ(o_t, a_t, c) = (1/L) Σ_{l=1}^{L} log[π_θ(a_t^l | o_t, a_t^{<l}, c) / π_ref(a_t^l | o_t, a_t^{<l})]

    ``critic_logprobs`` are the critic's log-probs of the turn's tokens with the
    training-time information c in its prompt; ``ref_logprobs`` the frozen
    reference's without it. ``length_normalize=False`` drops the 1/L (the
    paper's ablation, which it reports to collapse).
    """
    mask = mask.to(critic_logprobs.dtype)
    summed = ((critic_logprobs - ref_logprobs) * mask).sum(-1)
    return summed / mask.sum(-1).clamp_min(1.0) if length_normalize else summed


def bradley_terry_loss(
    chosen_advantage: torch.Tensor, rejected_advantage: torch.Tensor, *, beta: float = 0.1
) -> torch.Tensor:
    """SWEET-RL critic loss over trajectory pairs of one task.

        L = −mean log σ(β Σ_t A_θ(τ⁺) − β Σ_t A_θ(τ⁻))

    Inputs are the per-pair sums of turn advantages (or, in the reference
    code's variant, the mean log-ratio over all agent tokens of each trajectory).
    """
    return -F.logsigmoid(beta * (chosen_advantage - rejected_advantage)).mean()


def dpo_loss(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    *,
    beta: float = 0.1,
    chosen_nll: torch.Tensor | None = None,
    nll_coef: float = 0.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Direct preference optimisation on sequence log-probs (sums over the response tokens).

        L = −mean log σ(β[(log π(y⁺) − log π_ref(y⁺)) − (log π(y⁻) − log π_ref(y⁻))]) + c · NLL(y⁺)

    SWEET-RL's actor uses β = 0.1 and c = 0.01 with ``chosen_nll`` the
    per-token-mean negative log-likelihood of the chosen turns.
    """
    margin = beta * ((policy_chosen - ref_chosen) - (policy_rejected - ref_rejected))
    loss = -F.logsigmoid(margin).mean()
    if chosen_nll is not None and nll_coef:
        loss = loss + nll_coef * chosen_nll.mean()
    return loss, {"preference_accuracy": float((margin > 0).float().mean())}
