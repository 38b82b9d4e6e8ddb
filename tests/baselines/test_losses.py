"""Losses of the reference trainers against values computed by hand."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from baselines.losses import (
    bradley_terry_loss,
    dpo_loss,
    entropy_from_logits,
    kl_penalty,
    masked_mean,
    ppo_clip_loss,
    sweet_turn_advantage,
    token_logprobs,
    value_loss,
)


def test_masked_mean_ignores_masked_tokens_and_empty_mask():
    values = torch.tensor([[1.0, 100.0], [3.0, 5.0]])
    mask = torch.tensor([[1, 0], [1, 1]])
    assert masked_mean(values, mask).item() == pytest.approx(3.0)
    assert masked_mean(values, torch.zeros_like(mask)).item() == 0.0


def test_ppo_clip_loss_by_hand():
    old = torch.zeros(1, 3)
    new = torch.tensor([[0.0, math.log(1.5), math.log(1.5)]])
    adv = torch.tensor([[2.0, 1.0, -1.0]])
    loss, stats = ppo_clip_loss(new, old, adv, torch.ones(1, 3), clip=0.2)
    # token 0: ratio 1 -> −2; token 1: clipped at 1.2 -> −1.2; token 2: min(−1.5, −1.2) = −1.5 -> +1.5
    assert loss.item() == pytest.approx((-2.0 - 1.2 + 1.5) / 3)
    assert stats["clip_fraction"] == pytest.approx(1 / 3)


def test_ppo_clip_gradient_vanishes_beyond_the_clip():
    new = torch.tensor([[math.log(1.5)]], requires_grad=True)
    loss, _ = ppo_clip_loss(new, torch.zeros(1, 1), torch.ones(1, 1), torch.ones(1, 1))
    loss.backward()
    assert new.grad.item() == 0.0


def test_kl_penalty_estimators():
    logp = torch.tensor([0.0, math.log(0.5)])
    ref = torch.tensor([0.0, 0.0])
    low_var = kl_penalty(logp, ref)
    # Δ = log π_ref − log π = log 2 -> 2 − log 2 − 1
    assert low_var[0].item() == 0.0
    assert low_var[1].item() == pytest.approx(1.0 - math.log(2.0))
    assert kl_penalty(logp, ref, kind="k1")[1].item() == pytest.approx(math.log(0.5))
    with pytest.raises(ValueError):
        kl_penalty(logp, ref, kind="k2")


def test_token_logprobs_and_entropy():
    logits = torch.log(torch.tensor([[[0.25, 0.75]]]))
    assert token_logprobs(logits, torch.tensor([[1]])).item() == pytest.approx(math.log(0.75))
    uniform = torch.zeros(1, 1, 4)
    assert entropy_from_logits(uniform).item() == pytest.approx(math.log(4.0))


def test_value_loss_clipped_by_hand():
    values = torch.tensor([[1.0]])
    old = torch.tensor([[0.0]])
    returns = torch.tensor([[2.0]])
    # unclipped (1−2)² = 1; clipped V = 0.2 -> (0.2−2)² = 3.24; max = 3.24
    assert value_loss(values, old, returns, torch.ones(1, 1), clip=0.2).item() == pytest.approx(0.5 * 3.24)
    assert value_loss(values, old, returns, torch.ones(1, 1), clip=None).item() == pytest.approx(0.5)


def test_sweet_turn_advantage_is_mean_log_ratio():
    critic = torch.tensor([[-1.0, -2.0, -9.0]])
    ref = torch.tensor([[-2.0, -2.0, 0.0]])
    mask = torch.tensor([[1, 1, 0]])
    assert sweet_turn_advantage(critic, ref, mask).item() == pytest.approx(0.5)
    assert sweet_turn_advantage(critic, ref, mask, length_normalize=False).item() == pytest.approx(1.0)


def test_bradley_terry_loss_and_its_gradient_direction():
    tie = bradley_terry_loss(torch.tensor([0.3]), torch.tensor([0.3]), beta=0.1)
    assert tie.item() == pytest.approx(math.log(2.0))
    chosen = torch.tensor([0.0], requires_grad=True)
    bradley_terry_loss(chosen, torch.tensor([1.0]), beta=0.1).backward()
    assert chosen.grad.item() < 0  # descending raises the preferred trajectory's advantage


def test_dpo_loss_by_hand_with_nll_term():
    zero = torch.zeros(2)
    loss, stats = dpo_loss(zero, zero, zero, zero, beta=0.1)
    assert loss.item() == pytest.approx(math.log(2.0))
    chosen = torch.tensor([1.0, 1.0])
    loss, stats = dpo_loss(
        chosen, zero, zero, zero, beta=0.1, chosen_nll=torch.tensor([2.0, 4.0]), nll_coef=0.01
    )
    expected = -math.log(1 / (1 + math.exp(-0.1))) + 0.01 * 3.0
    assert loss.item() == pytest.approx(expected)
    assert stats["preference_accuracy"] == 1.0
