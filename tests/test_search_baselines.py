"""The MT-GRPO search config points at the real Search id and trains one step on CPU with a tiny model."""

from __future__ import annotations

import gymnasium as gym
import pytest

pytest.importorskip("torch")

from baselines.trainers import critic_free  # noqa: E402
from baselines.trainers.common import load_config  # noqa: E402


def test_mt_grpo_search_config_runs_on_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTENVS_CACHE", str(tmp_path / "cache"))
    config = load_config(
        "baselines/configs/mt_grpo_search.yaml",
        [
            "model=tiny", "sampler=transformers", "device=cpu", "dtype=float32", "num_threads=1", "num_groups=1", "group_size=2",
            "max_new_tokens=4", "tiny_vocab_size=600", "iterations=1", "minibatch_size=2", "micro_batch_size=1",
            "env_kwargs={corpus_passages: 3000}", f"out_dir={tmp_path / 'run'}",
        ],
    )
    assert config.env_id in gym.registry and config.estimator == "mt_grpo"
    env = gym.make(config.env_id, **config.env_kwargs).unwrapped
    assert env.max_turns == 2 and env.reward_preset == "mt-grpo"
    records = critic_free.train(config)
    assert records and records[-1]["iteration"] == 0
