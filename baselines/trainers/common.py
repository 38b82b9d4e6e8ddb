"""What every reference trainer shares: config, model loading, samples, the PPO-clip update, checkpoints.

The trainers themselves (``critic_free.py``, ``ppo.py``, ``sweet_rl.py``)
read top to bottom; this module holds the parts that would otherwise be
copied between them.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from agentenvs.core import derive_rng, derive_seed
from agentenvs.vector import GroupedVectorEnv
from baselines.losses import entropy_from_logits, kl_penalty, masked_mean, ppo_clip_loss, token_logprobs
from baselines.policy import PolicyBackend, TransformersPolicy, VLLMPolicy
from baselines.prompts import PromptTemplate
from baselines.rollout import RolloutEngine, Trajectory


@dataclass
class TrainConfig:
    """Every knob of the reference trainers; YAML files under ``baselines/configs/`` set them.

    Defaults are GiGPO's (Feng et al. 2025) where the paper gives one.
    """

    # environment and groups
    env_id: str = "agentenvs/Sokoban-Verl-v0"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    num_groups: int = 16
    group_size: int = 8
    vector_backend: str = "inprocess"
    task_pool: list[str] = field(default_factory=list)  # fixed tasks, cycled; empty: split seeds
    # policy model
    model: str = (
        "tiny"  # "tiny", "random:<preset>" (realistic size, random weights) or a local model directory
    )
    tiny_hidden_size: int = 64
    tiny_layers: int = 2
    tiny_vocab_size: int = 512
    action_words: list[str] = field(default_factory=list)  # whole-word tokens of the tiny tokenizer
    constrain_to_actions: bool = False  # sample only action-word tokens (tiny from-scratch runs)
    sampler: Literal["transformers", "vllm"] = "transformers"
    vllm_gpu_memory_utilization: float = 0.4
    device: str = "cpu"
    num_threads: int = 0  # torch CPU threads; 0 keeps torch's default
    dtype: str = "float32"
    gradient_checkpointing: bool = False
    # prompts and rollouts
    template_style: Literal["full", "compact"] = "full"
    history_window: int = 2
    think: bool = True
    context: Literal["window", "full"] = "window"
    max_new_tokens: int = 512
    max_prompt_tokens: int = 4096
    temperature: float = 1.0
    # an env crash stops the run ("stop") or its episode leaves the batch ("drop", counted
    # as crashed_episodes in the metrics); never trained on as an ordinary failure
    on_crash: Literal["stop", "drop"] = "stop"
    # optimisation (actor)
    iterations: int = 150
    lr: float = 1e-6
    weight_decay: float = 0.01
    clip: float = 0.2
    kl_coef: float = 0.01
    kl_kind: Literal["low_var_kl", "k1"] = "low_var_kl"
    entropy_coef: float = 0.001
    epochs: int = 1
    minibatch_size: int = 256  # sequences per optimizer step
    micro_batch_size: int = 8  # sequences per forward pass
    grad_clip: float = 1.0
    # critic-free estimators (baselines.advantages documents every option)
    estimator: Literal["gigpo", "grpo", "rloo", "mt_grpo", "grpo_or"] = "gigpo"
    # "paper": the options below; "reference": the released code's arithmetic
    # (baselines.advantages.reference_preset) over them, for reproduction
    preset: Literal["paper", "reference"] = "paper"
    reference_code: str = ""  # a key of advantages.REFERENCE_PRESETS; empty: the estimator's usual one
    gamma: float = 0.95
    omega: float = 1.0
    normalize: Literal["std", "none"] = "std"
    ddof: int = 0
    eps: float = 1e-6
    eps_mode: Literal["cutoff", "add"] = "cutoff"
    singleton: Literal["zero", "keep"] = "zero"
    anchor: Literal["obs", "state", "similarity"] = "obs"
    similarity_threshold: float = 0.95
    similarity_order: Literal["agentenvs", "verl-agent"] = "agentenvs"  # difflib's (rep, obs) or (obs, rep)
    episode_over: Literal["trajectories", "steps"] = "trajectories"
    alpha: float = 1.0
    mt_grpo_form: Literal["paper", "released"] = "paper"
    # actor-critic (PPO / MT-PPO)
    reward_placement: Literal["turn", "outcome", "summed"] = "turn"
    critic_lr: float = 1e-5
    gae_gamma: float = 1.0
    gae_lambda: float = 1.0
    value_clip: float = 0.2
    whiten_advantages: bool = True
    # SWEET-RL
    sweet_beta: float = 0.1
    sweet_critic_lr: float = 2e-6
    sweet_critic_steps: int = 1
    sweet_candidates: int = 16
    sweet_pairs_per_prefix: int = 4
    sweet_prefixes: int = 16
    sweet_nll_coef: float = 0.01
    sweet_min_margin: float = 0.0
    sweet_success_score: float = 1.0
    sweet_pair_mode: Literal["best_vs_worse", "all_pairs"] = "best_vs_worse"
    sweet_actor_pair_mode: Literal["ranked", "random_halves"] = "ranked"
    # bookkeeping
    seed: int = 0
    task_seed_offset: int = 0
    out_dir: str = "runs/default"
    save_every: int = 10

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown config keys {unknown}")
        defaults = cls()
        typed = {}
        for name, value in values.items():
            default = getattr(defaults, name)
            # YAML reads "1e-6" as a string; numbers follow the field's type
            if (
                isinstance(default, float)
                and isinstance(value, (int, float, str))
                and not isinstance(value, bool)
            ):
                value = float(value)
            elif isinstance(default, int) and not isinstance(default, bool) and isinstance(value, str):
                value = int(value)
            typed[name] = value
        return cls(**typed)

    def with_overrides(self, assignments: Sequence[str]) -> TrainConfig:
        """Apply ``key=value`` strings; values are parsed as YAML (numbers, lists, booleans)."""
        import yaml

        values = dataclasses.asdict(self)
        for assignment in assignments:
            key, sep, raw = assignment.partition("=")
            if not sep:
                raise ValueError(f"override {assignment!r} is not key=value")
            values[key.strip()] = yaml.safe_load(raw)
        return TrainConfig.from_mapping(values)


def load_config(path: str | Path | None, overrides: Sequence[str] = ()) -> TrainConfig:
    """A config from a YAML file (or the defaults), then ``key=value`` overrides."""
    import yaml

    values = yaml.safe_load(Path(path).read_text(encoding="utf-8")) if path else {}
    return TrainConfig.from_mapping(values or {}).with_overrides(overrides)


def parse_args(description: str, argv: Sequence[str] | None = None) -> tuple[TrainConfig, bool]:
    """The command line every trainer shares: ``--config``, ``--set key=value`` (repeatable), ``--resume``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", help="YAML file under baselines/configs/")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key"
    )
    parser.add_argument("--resume", action="store_true", help="continue from <out_dir>/checkpoint.pt")
    args = parser.parse_args(argv)
    return load_config(args.config, args.set), args.resume


# ------------------------------------------------------------------ models


def _tokenizer_corpus(config: TrainConfig, template: PromptTemplate) -> list[str]:
    """Texts the tiny tokenizer learns from: the env's first observations and rendered prompts."""
    import gymnasium as gym

    import agentenvs  # noqa: F401  (registers the ids)

    env = gym.make(config.env_id, **config.env_kwargs)
    texts = []
    for index in range(8):
        options = {"task_id": config.task_pool[index % len(config.task_pool)]} if config.task_pool else None
        observation, info = env.reset(seed=index, options=options)
        texts.append(str(observation))
        texts.append(
            template.render(
                first_observation=str(observation), history=[], observation=str(observation), turn=0
            )
        )
    env.close()
    return texts


def build_model(
    config: TrainConfig, template: PromptTemplate, saved_tokenizer: Path | None = None
) -> tuple[Any, Any]:
    """The policy model and tokenizer: tiny random (offline) or a local pretrained directory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

    from baselines.tiny import bpe_tokenizer, random_causal_lm

    if config.num_threads:
        torch.set_num_threads(config.num_threads)

    if builds_tokenizer(config):
        if saved_tokenizer is not None and saved_tokenizer.exists():
            tokenizer = PreTrainedTokenizerFast.from_pretrained(str(saved_tokenizer))
        else:
            tokenizer = bpe_tokenizer(
                _tokenizer_corpus(config, template),
                vocab_size=config.tiny_vocab_size,
                words=config.action_words,
            )
    if config.model == "tiny":
        model = random_causal_lm(
            len(tokenizer),
            hidden_size=config.tiny_hidden_size,
            num_layers=config.tiny_layers,
            seed=derive_seed("tiny-model", config.seed),
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    elif config.model.startswith("random:"):
        model = random_preset_lm(
            config.model.split(":", 1)[1],
            seed=derive_seed("random-model", config.seed),
            dtype=getattr(torch, config.dtype),
        )
    else:
        tokenizer = AutoTokenizer.from_pretrained(config.model, local_files_only=True)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(
            config.model, local_files_only=True, dtype=getattr(torch, config.dtype)
        )
        if config.gradient_checkpointing:
            model.gradient_checkpointing_enable()
    return model.to(config.device), tokenizer


RANDOM_VOCAB_SIZE = 151936  # Qwen2.5's embedding rows
RANDOM_PRESETS: dict[str, dict[str, Any]] = {
    # Qwen2.5-Instruct architectures (their published configs), for sizing runs without weights
    "qwen2.5-0.5b": {
        "hidden_size": 896,
        "intermediate_size": 4864,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "tie_word_embeddings": True,
    },
    "qwen2.5-1.5b": {
        "hidden_size": 1536,
        "intermediate_size": 8960,
        "num_hidden_layers": 28,
        "num_attention_heads": 12,
        "num_key_value_heads": 2,
        "tie_word_embeddings": True,
    },
    "qwen2.5-7b": {
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "tie_word_embeddings": False,
    },
}


def builds_tokenizer(config: TrainConfig) -> bool:
    """Whether the run learns its own offline tokenizer (tiny and random-weight models)."""
    return config.model == "tiny" or config.model.startswith("random:")


def random_preset_lm(preset: str, *, seed: int, dtype: torch.dtype) -> Any:
    """A Qwen2-architecture model of a published size with random weights (151,936-token vocabulary)."""
    from transformers import AutoModelForCausalLM, Qwen2Config

    if preset not in RANDOM_PRESETS:
        raise ValueError(f"unknown random model preset {preset!r}; known: {sorted(RANDOM_PRESETS)}")
    config = Qwen2Config(
        vocab_size=RANDOM_VOCAB_SIZE, max_position_embeddings=32768, **RANDOM_PRESETS[preset]
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed % 2**63)
        return AutoModelForCausalLM.from_config(config, dtype=dtype)


def frozen_copy(model: torch.nn.Module) -> torch.nn.Module:
    """A reference copy that never trains."""
    reference = copy.deepcopy(model).eval()
    for parameter in reference.parameters():
        parameter.requires_grad_(False)
    return reference


def make_sampler(config: TrainConfig, model: Any, tokenizer: Any) -> PolicyBackend:
    allowed = sampling_vocabulary(config, tokenizer)
    allowed_ids = allowed.nonzero().squeeze(-1).tolist() if allowed is not None else None
    if config.sampler == "vllm":
        return VLLMPolicy(
            config.model,
            gpu_memory_utilization=config.vllm_gpu_memory_utilization,
            max_model_len=config.max_prompt_tokens + config.max_new_tokens,
            eos_token_id=tokenizer.eos_token_id,
            allowed_token_ids=allowed_ids,
        )
    return TransformersPolicy(
        model, tokenizer, allowed_token_ids=allowed_ids, batch_size=max(config.micro_batch_size, 64)
    )


def make_template(config: TrainConfig) -> PromptTemplate:
    max_actions = int(
        config.env_kwargs.get("max_actions_per_turn", 3 if config.env_id == "agentenvs/Sokoban-v0" else 1)
    )
    return PromptTemplate(
        config.env_id,
        history_window=config.history_window,
        think=config.think,
        style=config.template_style,
        max_actions=max_actions,
    )


def make_engine(
    config: TrainConfig, vec: Any, sampler: PolicyBackend, tokenizer: Any, template: PromptTemplate
) -> RolloutEngine:
    return RolloutEngine(
        vec,
        sampler,
        tokenizer,
        template,
        max_new_tokens=config.max_new_tokens,
        temperature=config.temperature,
        context=config.context,
        max_prompt_tokens=config.max_prompt_tokens,
        on_crash=config.on_crash,
    )


def iteration_tasks(config: TrainConfig, iteration: int) -> tuple[int, list[str] | None]:
    """(reset seed, task ids or None) of an iteration: fresh split seeds, or the task pool cycled."""
    seed = config.task_seed_offset + iteration * config.num_groups
    if not config.task_pool:
        return seed, None
    pool = config.task_pool
    return seed, [pool[(iteration * config.num_groups + g) % len(pool)] for g in range(config.num_groups)]


# ----------------------------------------------------------------- samples


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
    for index, (trajectory, advantages) in enumerate(zip(trajectories, turn_advantages)):
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


@dataclass
class Collated:
    """Right-padded tensors; ``mask``/``advantages``/``old_logprobs`` are aligned with ``ids[:, 1:]``."""

    ids: torch.Tensor
    attention: torch.Tensor
    mask: torch.Tensor
    advantages: torch.Tensor


def collate(samples: Sequence[Sample], pad_id: int, device: str | torch.device) -> Collated:
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


def sampling_vocabulary(config: TrainConfig, tokenizer: Any) -> torch.Tensor | None:
    """The vocabulary mask sampling is restricted to: the action words (``constrain_to_actions``),
    the local tokenizer's ids (``random:`` models), else None (the whole vocabulary)."""
    if config.constrain_to_actions:
        allowed = torch.zeros(len(tokenizer), dtype=torch.bool)
        allowed[[tokenizer.convert_tokens_to_ids(word) for word in config.action_words]] = True
        return allowed.to(config.device)
    if config.model.startswith("random:"):
        # the random model's vocabulary is the real model's; only the local tokenizer's ids decode
        allowed = torch.zeros(RANDOM_VOCAB_SIZE, dtype=torch.bool)
        allowed[: len(tokenizer)] = True
        return allowed.to(config.device)
    return None


def micro_batches(samples: Sequence[Sample], size: int) -> Iterator[list[Sample]]:
    for start in range(0, len(samples), size):
        yield list(samples[start : start + size])


@torch.no_grad()
def score_samples(
    model: Any,
    samples: Sequence[Sample],
    config: TrainConfig,
    pad_id: int,
    allowed: torch.Tensor | None = None,
) -> list[torch.Tensor]:
    """Per-sample token log-probs (aligned with ``ids[1:]``) under ``model``, on the CPU."""
    scored: list[torch.Tensor] = []
    for chunk in micro_batches(samples, config.micro_batch_size):
        batch = collate(chunk, pad_id, config.device)
        logprobs, _ = sequence_logprobs(model, batch, allowed=allowed)
        scored.extend(logprobs[row, : len(s.ids) - 1].float().cpu() for row, s in enumerate(chunk))
    return scored


def _stack(rows: Sequence[torch.Tensor], width: int, device: str) -> torch.Tensor:
    out = torch.zeros((len(rows), width))
    for index, row in enumerate(rows):
        out[index, : row.shape[0]] = row
    return out.to(device)


def ppo_update(
    model: Any,
    reference: Any | None,
    optimizer: torch.optim.Optimizer,
    samples: Sequence[Sample],
    config: TrainConfig,
    pad_id: int,
    iteration: int,
    allowed: torch.Tensor | None = None,
) -> dict[str, float]:
    """PPO-clip epochs over ``samples`` with KL to ``reference`` and an entropy bonus.

        L = mean_tokens[ −min(ρA, clip(ρ, 1±ε)A) + β·KL(π‖π_ref) − c_H·H(π) ]

    Token-mean over each minibatch; gradients clipped to ``grad_clip``.
    """
    if not samples:
        return {"actor/loss": 0.0, "actor/kl": 0.0, "actor/entropy": 0.0, "actor/clip_fraction": 0.0}
    old = score_samples(model, samples, config, pad_id, allowed)
    ref = (
        score_samples(reference, samples, config, pad_id, allowed)
        if reference is not None and config.kl_coef
        else None
    )
    rng = derive_rng("ppo-minibatches", config.seed, iteration)
    totals = {"loss": 0.0, "kl": 0.0, "entropy": 0.0, "clip_fraction": 0.0}
    weight_sum = 0.0
    model.train()
    for _ in range(config.epochs):
        order = rng.permutation(len(samples))
        for start in range(0, len(order), config.minibatch_size):
            chosen = order[start : start + config.minibatch_size]
            minibatch_tokens = float(sum(samples[i].mask.sum() for i in chosen))
            optimizer.zero_grad(set_to_none=True)
            for micro in micro_batches(list(chosen), config.micro_batch_size):
                chunk = [samples[i] for i in micro]
                batch = collate(chunk, pad_id, config.device)
                width = batch.ids.shape[1] - 1
                old_logprobs = _stack([old[i] for i in micro], width, config.device)
                logprobs, entropy = sequence_logprobs(
                    model, batch, with_entropy=config.entropy_coef > 0, allowed=allowed
                )
                policy_loss, stats = ppo_clip_loss(
                    logprobs, old_logprobs, batch.advantages, batch.mask, clip=config.clip
                )
                loss = policy_loss
                kl_value = torch.zeros(())
                if ref is not None:
                    ref_logprobs = _stack([ref[i] for i in micro], width, config.device)
                    kl_value = masked_mean(
                        kl_penalty(logprobs, ref_logprobs, kind=config.kl_kind), batch.mask
                    )
                    loss = loss + config.kl_coef * kl_value
                entropy_value = masked_mean(entropy, batch.mask) if entropy is not None else torch.zeros(())
                loss = loss - config.entropy_coef * entropy_value
                share = float(batch.mask.sum()) / max(minibatch_tokens, 1.0)
                (loss * share).backward()
                totals["loss"] += float(loss.detach()) * share
                totals["kl"] += float(kl_value.detach()) * share
                totals["entropy"] += float(entropy_value.detach()) * share
                totals["clip_fraction"] += stats["clip_fraction"] * share
            weight_sum += 1.0
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
    return {f"actor/{name}": value / max(weight_sum, 1.0) for name, value in totals.items()}


# ------------------------------------------------------------- checkpoints


def save_checkpoint(
    out_dir: str | Path, iteration: int, modules: dict[str, Any], optimizers: dict[str, torch.optim.Optimizer]
) -> Path:
    """Write ``<out_dir>/checkpoint.pt`` (weights, optimizer states, the iteration reached)."""
    path = Path(out_dir) / "checkpoint.pt"
    state = {
        "iteration": iteration,
        "modules": {name: module.state_dict() for name, module in modules.items()},
        "optimizers": {name: optimizer.state_dict() for name, optimizer in optimizers.items()},
    }
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(path)
    return path


def load_checkpoint(
    out_dir: str | Path, modules: dict[str, Any], optimizers: dict[str, torch.optim.Optimizer]
) -> int:
    """Restore a checkpoint into ``modules``/``optimizers``; the next iteration to run (0 if none)."""
    path = Path(out_dir) / "checkpoint.pt"
    if not path.exists():
        return 0
    state = torch.load(path, map_location="cpu", weights_only=True)
    for name, module in modules.items():
        module.load_state_dict(state["modules"][name])
    for name, optimizer in optimizers.items():
        optimizer.load_state_dict(state["optimizers"][name])
    return int(state["iteration"]) + 1


def prepare_run(config: TrainConfig, resume: bool) -> Path:
    """Create the run folder and record the config (refuses to overwrite a finished run unless resuming)."""
    out = Path(config.out_dir)
    if out.exists() and (out / "checkpoint.pt").exists() and not resume:
        raise FileExistsError(f"{out} holds a run; pass --resume to continue it or choose another out_dir")
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(
        json.dumps(dataclasses.asdict(config), indent=2, sort_keys=True), encoding="utf-8"
    )
    return out


def load_policy(config: TrainConfig, out: Path, resume: bool) -> tuple[PromptTemplate, Any, Any]:
    """The prompt template, policy model and tokenizer of a run (the tokenizer kept in ``out``)."""
    template = make_template(config)
    model, tokenizer = build_model(config, template, saved_tokenizer=out / "tokenizer" if resume else None)
    if builds_tokenizer(config):
        tokenizer.save_pretrained(str(out / "tokenizer"))
    return template, model, tokenizer


def make_vector_env(config: TrainConfig) -> GroupedVectorEnv:
    """The grouped rollout envs of a run: ``num_groups`` tasks × ``group_size`` copies."""
    return GroupedVectorEnv(
        config.env_id,
        num_groups=config.num_groups,
        group_size=config.group_size,
        backend=config.vector_backend,
        env_kwargs=config.env_kwargs,
    )
