"""SWEET-RL (Zhou et al. 2025): an asymmetric critic with training-time information, DPO actor.

The critic is a copy of the base LM that reads the env's training-time
information c (``info["privileged"]``: the goal product, the hidden spec, the
optimal remaining moves...), which the actor never sees. Its turn advantage
is its own mean log-probability ratio against the frozen reference:

    A_θ(o_t, a_t, c) = (1/L) Σ_l log[π_θ(a_t^l | o_t, a_t^{<l}, c) / π_ref(a_t^l | o_t, a_t^{<l})]

Per iteration (the loop is ``run.TrainingRun``'s; ``context: window``: every
turn keeps the prompt text it was sampled from):

1. advantages:

   a. critic: pairs (best fully successful trajectory, each strictly worse
      one) of each task group (``pair_mode``; ``all_pairs`` is the frontend
      setting: every two trajectories ≥ ``min_margin`` apart); Bradley–Terry
      loss −log σ(β Σ_t A_θ(τ⁺) − β Σ_t A_θ(τ⁻)), β = 0.1, ``critic_steps`` steps;
   b. for ``prefixes`` turn prefixes, sample ``candidates`` candidate turns
      from the actor, rank them by the critic's advantage, pair the top half
      against the bottom half (``pairs_per_prefix`` pairs,
      ``actor_pair_mode``: fixed ranks or the released random draws);

2. update: one DPO step (β = 0.1) with an NLL term (0.01) on the chosen
   turns; the actor's prompts never contain c.

``preset: reference`` takes both pairings from sweet_rl's scripts
(``reference_code`` ``sweet-rl-backend``, the default, or ``sweet-rl-frontend``).
Envs without privileged information give the critic an empty c (the paper's
"without training-time information" ablation).

Run::

    python -m baselines.trainers --config baselines/configs/sweet_rl_colbench.yaml
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import torch

from agentenvs.core import derive_rng, derive_seed
from baselines.advantages import (
    DEFAULT_REFERENCE,
    ranked_candidate_pairs,
    reference_preset,
    sweet_preference_pairs,
)
from baselines.losses import bradley_terry_loss, dpo_loss, sweet_turn_advantage
from baselines.rollout import PromptEncoder, RolloutBatch, Trajectory, Turn
from baselines.trainers.config import AlgorithmOptions
from baselines.trainers.models import frozen_copy
from baselines.trainers.samples import Sample, collate, micro_batches, response_sample, sequence_logprobs

if TYPE_CHECKING:
    from baselines.trainers.run import TrainingRun


@dataclass
class SweetRLOptions(AlgorithmOptions):
    """The critic's and the actor's pairs, β, the NLL weight and the critic's learning rate."""

    name: ClassVar[str] = "sweet_rl"
    beta: float = 0.1
    critic_lr: float = 2e-6
    critic_steps: int = 1
    candidates: int = 16
    pairs_per_prefix: int = 4
    prefixes: int = 16
    nll_coef: float = 0.01
    min_margin: float = 0.0
    success_score: float = 1.0
    pair_mode: Literal["best_vs_worse", "all_pairs"] = "best_vs_worse"
    actor_pair_mode: Literal["ranked", "random_halves"] = "ranked"
    # "paper": the pair options above; "reference": sweet_rl's scripts (reference_code)
    preset: Literal["paper", "reference"] = "paper"
    reference_code: str = ""


def critic_prompt_text(turn: Turn) -> str:
    """The actor's prompt with the training-time information written above it."""
    hidden = (
        json.dumps(turn.privileged, sort_keys=True, default=str) if turn.privileged is not None else "none"
    )
    return f"Training-time information (hidden from the agent): {hidden}\n\n{turn.prompt_text}"


def response_logprobs(
    model: Any, samples: Sequence[Sample], micro_batch_size: int, device: str, pad_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T−1) token log-probs and the policy-token mask of ``samples`` (with grad when enabled)."""
    rows, masks = [], []
    width = max(len(s.ids) for s in samples) - 1
    for chunk in micro_batches(samples, micro_batch_size):
        batch = collate(chunk, pad_id, device)
        logprobs, _ = sequence_logprobs(model, batch)
        pad = width - logprobs.shape[1]
        rows.append(torch.nn.functional.pad(logprobs, (0, pad)))
        masks.append(torch.nn.functional.pad(batch.mask, (0, pad)))
    return torch.cat(rows), torch.cat(masks)


def pair_options(options: SweetRLOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    """Options of the critic pairs and the actor pairs: the config's, or the released script's.

    With ``preset: reference`` the pairs follow sweet_rl's scripts
    (``reference_code`` ``sweet-rl-backend``, the default, or ``sweet-rl-frontend``);
    the released actor pairs come from one seeded random stream over the
    whole dataset, here one stream per iteration seeded from the run's seed.
    """
    critic = {
        "mode": options.pair_mode,
        "success_score": options.success_score,
        "min_margin": options.min_margin,
    }
    actor = {"mode": options.actor_pair_mode, "num_pairs": options.pairs_per_prefix}
    if options.preset == "reference":
        code = options.reference_code or None
        critic.update(reference_preset("sweet_critic", code))
        actor.update(reference_preset("sweet_actor", code))
    return critic, actor


@dataclass
class Preferences:
    """The actor's DPO pairs of one iteration: (turn prefix, preferred response, rejected response)."""

    pairs: list[tuple[Turn, list[int], list[int]]]


class SweetRL:
    """Asymmetric Bradley–Terry critic, DPO actor on critic-ranked candidate turns."""

    Options = SweetRLOptions
    context: ClassVar[str | None] = "window"  # the critic and the actor train on turn prefixes
    label = "sweet_rl"

    def __init__(self, run: TrainingRun) -> None:
        self.run = run
        self.options = run.config.algorithm_options(SweetRLOptions)
        self.reference = frozen_copy(run.model)
        self.critic = copy.deepcopy(run.model)
        self.critic_optimizer = run.add_trained("critic", self.critic, self.options.critic_lr)
        self.encoder = PromptEncoder(run.tokenizer)
        self.critic_pairs, self.actor_pairs = pair_options(self.options)

    def resolved_options(self) -> dict[str, Any]:
        options = self.options
        resolved: dict[str, Any] = {
            "algorithm": options.name,
            "preset": options.preset,
            "critic_pairs": self.critic_pairs,
            "actor_pairs": self.actor_pairs,
            **{
                name: getattr(options, name)
                for name in ("beta", "critic_lr", "critic_steps", "candidates", "prefixes", "nll_coef")
            },
        }
        if options.preset == "reference":
            resolved["reference_code"] = options.reference_code or DEFAULT_REFERENCE["sweet_critic"]
        return resolved

    def _logprobs(self, model: Any, samples: Sequence[Sample]) -> tuple[torch.Tensor, torch.Tensor]:
        config = self.run.config
        return response_logprobs(
            model, samples, config.optim.micro_batch_size, config.policy.device, self.run.pad_id
        )

    def turn_advantages(self, turns: Sequence[Turn], responses: Sequence[Sequence[int]]) -> torch.Tensor:
        """A_θ of each (turn prefix, response): critic with c against the reference without it."""
        critic_samples = [
            response_sample(self.encoder.first(critic_prompt_text(t)), r)
            for t, r in zip(turns, responses, strict=False)
        ]
        actor_samples = [response_sample(t.prompt_ids, r) for t, r in zip(turns, responses, strict=False)]
        critic_logprobs, critic_mask = self._logprobs(self.critic, critic_samples)
        with torch.no_grad():
            ref_logprobs, ref_mask = self._logprobs(self.reference, actor_samples)
        # Both layouts hold the same response tokens, after prompts of different lengths.
        aligned_ref = torch.zeros_like(critic_logprobs)
        for row in range(len(turns)):
            aligned_ref[row, critic_mask[row]] = ref_logprobs[row, ref_mask[row]]
        return sweet_turn_advantage(critic_logprobs, aligned_ref, critic_mask)

    def critic_step(
        self, trajectories: Sequence[Trajectory], pairs: Sequence[tuple[int, int]]
    ) -> dict[str, float]:
        """One Bradley–Terry step on (preferred, rejected) trajectory pairs.

        L = −log σ(β Σ_t A(τ⁺) − β Σ_t A(τ⁻))
        """
        involved = sorted({i for pair in pairs for i in pair})
        turns = [turn for i in involved for turn in trajectories[i].turns]
        owners = np.array([i for i in involved for _ in trajectories[i].turns])
        advantages = self.turn_advantages(turns, [t.response_ids for t in turns])
        totals = {i: advantages[torch.from_numpy(owners == i)].sum() for i in involved}
        chosen = torch.stack([totals[a] for a, _ in pairs])
        rejected = torch.stack([totals[b] for _, b in pairs])
        loss = bradley_terry_loss(chosen, rejected, beta=self.options.beta)
        self.critic_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.critic.parameters(), self.run.config.optim.grad_clip)
        self.critic_optimizer.step()
        return {
            "critic/bt_loss": float(loss.detach()),
            "critic/pair_accuracy": float((chosen > rejected).float().mean()),
        }

    def advantages(self, batch: RolloutBatch, iteration: int) -> tuple[Preferences, dict[str, Any]]:
        options, seed = self.options, self.run.config.run.seed
        trajectories = batch.trajectories
        # ---- critic: Bradley–Terry on (preferred, rejected) trajectories of one task
        pairs = sweet_preference_pairs(
            [t.score for t in trajectories], [t.group for t in trajectories], **self.critic_pairs
        )
        stats = {"critic/pairs": float(len(pairs)), "critic/bt_loss": 0.0, "critic/pair_accuracy": 0.0}
        for _ in range(options.critic_steps if pairs else 0):
            stats.update(self.critic_step(trajectories, pairs))

        # ---- candidates for sampled prefixes, ranked by the critic's advantage
        all_turns = [turn for t in trajectories for turn in t.turns]
        rng = derive_rng("sweet-prefixes", seed, iteration)
        chosen_prefixes = [
            all_turns[i]
            for i in rng.choice(len(all_turns), size=min(options.prefixes, len(all_turns)), replace=False)
        ]
        candidates = self.run.sampler.generate(
            [t.prompt_ids for t in chosen_prefixes for _ in range(options.candidates)],
            max_new_tokens=self.run.config.sampler.max_new_tokens,
            temperature=self.run.config.sampler.temperature,
            seed=derive_seed("sweet-candidates", seed, iteration) >> 1,
        )
        prefix_of = [t for t in chosen_prefixes for _ in range(options.candidates)]
        pair_rng = random.Random(derive_seed("sweet-actor-pairs", seed, iteration))
        with torch.no_grad():
            scores = self.turn_advantages(prefix_of, candidates).cpu().numpy()
        preferred: list[tuple[Turn, list[int], list[int]]] = []
        for p, turn in enumerate(chosen_prefixes):
            block = slice(p * options.candidates, (p + 1) * options.candidates)
            for a, b in ranked_candidate_pairs(scores[block], rng=pair_rng, **self.actor_pairs):
                good, bad = candidates[block][a], candidates[block][b]
                if good != bad and good and bad:
                    preferred.append((turn, good, bad))
        stats["privileged_share"] = float(np.mean([turn.privileged is not None for turn in all_turns]))
        return Preferences(preferred), stats

    def update(self, prepared: Preferences, iteration: int) -> dict[str, float]:
        """One DPO step with an NLL term on the preferred turns."""
        preferred = prepared.pairs
        stats = {
            "actor/dpo_pairs": float(len(preferred)),
            "actor/dpo_loss": 0.0,
            "actor/preference_accuracy": 0.0,
        }
        if not preferred:
            return stats
        model = self.run.model
        good_samples = [response_sample(t.prompt_ids, g) for t, g, _ in preferred]
        bad_samples = [response_sample(t.prompt_ids, b) for t, _, b in preferred]
        policy_good, good_mask = self._logprobs(model, good_samples)
        policy_bad, bad_mask = self._logprobs(model, bad_samples)
        with torch.no_grad():
            ref_good, _ = self._logprobs(self.reference, good_samples)
            ref_bad, _ = self._logprobs(self.reference, bad_samples)
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
        loss, dpo_stats = dpo_loss(
            *sums, beta=self.options.beta, chosen_nll=nll, nll_coef=self.options.nll_coef
        )
        self.run.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), self.run.config.optim.grad_clip)
        self.run.optimizer.step()
        stats["actor/dpo_loss"] = float(loss.detach())
        stats["actor/preference_accuracy"] = dpo_stats["preference_accuracy"]
        return stats


ALGORITHM = SweetRL
