"""SWEET-RL's ColBench config runs end to end on CPU: the real env id, the rule collaborator,
the critic fed the env's privileged reference, a tiny random model in place of Llama."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from baselines.trainers.config import load_config
from baselines.trainers.run import train

CONFIG = Path(__file__).parents[3] / "baselines" / "configs" / "sweet_rl_colbench.yaml"
TINY = [
    "policy.model=tiny",
    "policy.tiny_hidden_size=16",
    "policy.tiny_layers=1",
    "policy.tiny_vocab_size=512",
    "sampler.backend=transformers",
    "policy.device=cpu",
    "policy.dtype=float32",
    "policy.gradient_checkpointing=false",
    "env.num_groups=2",
    "env.group_size=2",
    "run.iterations=1",
    "sampler.max_new_tokens=4",
    "sampler.max_prompt_tokens=512",
    "algorithm.candidates=4",
    "algorithm.prefixes=2",
    "algorithm.pairs_per_prefix=2",
    "algorithm.success_score=0.0",
    "optim.micro_batch_size=8",
    "policy.num_threads=1",
    "sampler.template_style=compact",
    "sampler.history_window=1",
    "env.kwargs={max_turns: 2}",
]


def test_sweet_rl_colbench_config_runs_on_cpu_with_the_privileged_reference(tmp_path):
    config = load_config(CONFIG, [*TINY, f"run.out_dir={tmp_path / 'run'}"])
    assert config.env.id == "agentenvs/ColBench-v0" and config.algorithm.name == "sweet_rl"
    [record] = train(config)
    assert record["privileged_share"] == 1.0  # every turn carries the hidden reference for the critic
    assert record["actor/dpo_pairs"] > 0 and np.isfinite(record["actor/dpo_loss"])
