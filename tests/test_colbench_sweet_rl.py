"""SWEET-RL's ColBench config runs end to end on CPU: the real env id, the rule collaborator,
the critic fed the env's privileged reference, a tiny random model in place of Llama."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from baselines.trainers import sweet_rl
from baselines.trainers.common import load_config

CONFIG = Path(__file__).parents[1] / "baselines" / "configs" / "sweet_rl_colbench.yaml"
TINY = [
    "model=tiny",
    "tiny_hidden_size=16",
    "tiny_layers=1",
    "tiny_vocab_size=512",
    "sampler=transformers",
    "device=cpu",
    "dtype=float32",
    "gradient_checkpointing=false",
    "num_groups=2",
    "group_size=2",
    "iterations=1",
    "max_new_tokens=4",
    "max_prompt_tokens=512",
    "sweet_candidates=4",
    "sweet_prefixes=2",
    "sweet_pairs_per_prefix=2",
    "sweet_success_score=0.0",
    "micro_batch_size=8",
    "num_threads=1",
    "template_style=compact",
    "history_window=1",
    "env_kwargs={max_turns: 2}",
]


def test_sweet_rl_colbench_config_runs_on_cpu_with_the_privileged_reference(tmp_path):
    config = load_config(CONFIG, [*TINY, f"out_dir={tmp_path / 'run'}"])
    assert config.env_id == "agentenvs/ColBench-v0"
    [record] = sweet_rl.train(config)
    assert record["privileged_share"] == 1.0  # every turn carries the hidden reference for the critic
    assert record["actor/dpo_pairs"] > 0 and np.isfinite(record["actor/dpo_loss"])
