"""The MT-GRPO search config points at the real Search id and trains one step on CPU with a tiny model."""

from __future__ import annotations

import gymnasium as gym
import pytest

pytest.importorskip("torch")

from baselines.trainers.config import load_config  # noqa: E402
from baselines.trainers.run import train  # noqa: E402


def test_mt_grpo_search_config_runs_on_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTENVS_CACHE", str(tmp_path / "cache"))
    config = load_config(
        "baselines/configs/mt_grpo_search.yaml",
        [
            "policy.model=tiny",
            "sampler.backend=transformers",
            "policy.device=cpu",
            "policy.dtype=float32",
            "policy.num_threads=1",
            "env.num_groups=1",
            "env.group_size=2",
            "sampler.max_new_tokens=4",
            "policy.tiny_vocab_size=600",
            "run.iterations=1",
            "optim.minibatch_size=2",
            "optim.micro_batch_size=1",
            "env.kwargs={corpus_passages: 3000}",
            f"run.out_dir={tmp_path / 'run'}",
        ],
    )
    assert config.env.id in gym.registry and config.algorithm.estimator == "mt_grpo"
    env = gym.make(config.env.id, **config.env.kwargs).unwrapped
    assert env.max_turns == 2 and env.reward_preset == "mt-grpo"
    records = train(config)
    assert records and records[-1]["iteration"] == 0
