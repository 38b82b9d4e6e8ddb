"""Rollouts of a run: prompt template, sampling backend, grouped envs, engine, each iteration's tasks.

Imports ``baselines.policy``, ``baselines.prompts``, ``baselines.rollout``, ``agentenvs.vector`` and
gymnasium (the template reads the env it builds).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from agentenvs.vector import GroupedVectorEnv
from baselines.policy import PolicyBackend, TransformersPolicy, VLLMPolicy
from baselines.prompts import PromptTemplate
from baselines.rollout import RolloutEngine
from baselines.trainers.config import TrainConfig
from baselines.trainers.models import sampling_vocabulary


def make_sampler(config: TrainConfig, model: Any, tokenizer: Any) -> PolicyBackend:
    """The sampling backend (``sampler.backend``), restricted to :func:`sampling_vocabulary`."""
    allowed = sampling_vocabulary(config, tokenizer)
    allowed_ids = allowed.nonzero().squeeze(-1).tolist() if allowed is not None else None
    if config.sampler.backend == "vllm":
        return VLLMPolicy(
            config.policy.model,
            gpu_memory_utilization=config.sampler.vllm_gpu_memory_utilization,
            max_model_len=config.sampler.max_prompt_tokens + config.sampler.max_new_tokens,
            eos_token_id=tokenizer.eos_token_id,
            allowed_token_ids=allowed_ids,
        )
    return TransformersPolicy(
        model, tokenizer, allowed_token_ids=allowed_ids, batch_size=max(config.optim.micro_batch_size, 64)
    )


def make_template(config: TrainConfig) -> PromptTemplate:
    """The run's prompt template, from the env the run trains on (``env.id`` with ``env.kwargs``)."""
    env = gym.make(config.env.id, disable_env_checker=True, **config.env.kwargs)
    try:
        return PromptTemplate.for_env(
            env,
            history_window=config.sampler.history_window,
            think=config.sampler.think,
            style=config.sampler.template_style,
        )
    finally:
        env.close()


def make_engine(
    config: TrainConfig, vec: Any, sampler: PolicyBackend, tokenizer: Any, template: PromptTemplate
) -> RolloutEngine:
    """The multi-turn rollout engine over ``vec`` with the sampler section's settings."""
    return RolloutEngine(
        vec,
        sampler,
        tokenizer,
        template,
        max_new_tokens=config.sampler.max_new_tokens,
        temperature=config.sampler.temperature,
        context=config.sampler.context,
        max_prompt_tokens=config.sampler.max_prompt_tokens,
        on_crash=config.sampler.on_crash,
    )


def make_vector_env(config: TrainConfig) -> GroupedVectorEnv:
    """The grouped rollout envs of a run: ``num_groups`` tasks × ``group_size`` copies."""
    return GroupedVectorEnv(
        config.env.id,
        num_groups=config.env.num_groups,
        group_size=config.env.group_size,
        backend=config.env.vector_backend,
        env_kwargs=config.env.kwargs,
    )


def iteration_tasks(config: TrainConfig, iteration: int) -> tuple[int, list[str] | None]:
    """(reset seed, task ids or None) of an iteration: fresh split seeds, or the task pool cycled.

    ``seed = task_seed_offset + iteration · G``; ``task g = pool[(iteration · G + g) mod |pool|]``,
    G = num_groups.
    """
    groups = config.env.num_groups
    seed = config.env.task_seed_offset + iteration * groups
    pool = config.env.task_pool
    if not pool:
        return seed, None
    return seed, [pool[(iteration * groups + g) % len(pool)] for g in range(groups)]
