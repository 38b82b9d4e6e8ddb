"""Every reference trainer runs end to end on CPU with a tiny random model; checkpoints resume exactly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from baselines.metrics import main as metrics_main
from baselines.metrics import read_jsonl
from baselines.rollout import PromptEncoder, Trajectory, Turn
from baselines.trainers.config import ConfigError, TrainConfig, load_config
from baselines.trainers.models import build_model, frozen_copy
from baselines.trainers.run import TrainingRun, train
from baselines.trainers.sampler import make_template

ROOT = Path(__file__).parents[2]
TINY = {
    "env": {
        "id": "agentenvs/Sokoban-Verl-v0",
        "kwargs": {"dim_room": [5, 5], "min_solution_length": 3, "max_turns": 4},
        "num_groups": 2,
        "group_size": 2,
    },
    "policy": {
        "model": "tiny",
        "tiny_hidden_size": 16,
        "tiny_layers": 1,
        "tiny_vocab_size": 512,
        "action_words": ["up", "down", "left", "right"],
        "constrain_to_actions": True,
        "num_threads": 1,
    },
    "sampler": {"template_style": "compact", "history_window": 0, "max_new_tokens": 1},
    "optim": {"lr": 1e-2, "minibatch_size": 4, "micro_batch_size": 8, "kl_coef": 0.01},
    "run": {"iterations": 1},
}


def tiny_config(tmp_path: Path, **sections: dict) -> TrainConfig:
    """TINY with each given section's keys merged in, writing under ``tmp_path/run``."""
    values = {name: dict(keys) for name, keys in TINY.items()}
    values["run"]["out_dir"] = str(tmp_path / "run")
    for name, keys in sections.items():
        values.setdefault(name, {}).update(keys)
    return TrainConfig.from_mapping(values)


SWEET = {"name": "sweet_rl", "candidates": 4, "prefixes": 2, "pairs_per_prefix": 2, "success_score": 0.0}


def weights(path: Path, module: str = "policy") -> dict[str, torch.Tensor]:
    return torch.load(path / "checkpoint.pt", weights_only=True)["modules"][module]


@pytest.mark.parametrize(
    "overrides",
    [
        {"estimator": "gigpo", "anchor": "state"},
        {"estimator": "gigpo", "anchor": "obs"},
        {"estimator": "gigpo", "anchor": "similarity", "similarity_threshold": 0.9},
        {"estimator": "grpo"},
        {"estimator": "grpo_or"},
        {"estimator": "rloo"},
        {"estimator": "mt_grpo", "alpha": 0.5},
    ],
    ids=lambda o: "-".join(str(v) for v in o.values()),
)
def test_critic_free_trainers_run_and_log(tmp_path, overrides):
    config = tiny_config(tmp_path, algorithm={"name": "critic_free", **overrides})
    [record] = train(config)
    for key in (
        "success",
        "score",
        "return",
        "component/outcome",
        "component/step_penalty",
        "anchor/singleton_share",
        "anchor/size_histogram",
        "anchor/grouping_disagreement",
        "time/generation_s",
        "time/env_s",
        "time/update_s",
        "tokens_per_s",
        "actor/kl",
        "actor/loss",
    ):
        assert key in record, key
    assert np.isfinite(record["actor/loss"])
    written = read_jsonl(Path(config.run.out_dir) / "metrics.jsonl")
    assert written == [json.loads(json.dumps(record))]


def test_policy_moves_and_resume_continues_exactly(tmp_path):
    straight = tiny_config(
        tmp_path, run={"iterations": 2, "out_dir": str(tmp_path / "straight"), "save_every": 1}
    )
    train(straight)
    first = tiny_config(
        tmp_path, run={"iterations": 1, "out_dir": str(tmp_path / "resumed"), "save_every": 1}
    )
    train(first)
    with pytest.raises(FileExistsError):
        train(first)
    after_one = weights(tmp_path / "resumed")
    train(
        tiny_config(tmp_path, run={"iterations": 2, "out_dir": str(tmp_path / "resumed"), "save_every": 1}),
        resume=True,
    )
    resumed, reference = weights(tmp_path / "resumed"), weights(tmp_path / "straight")
    assert any(not torch.equal(after_one[k], resumed[k]) for k in resumed)
    for name in reference:
        assert torch.equal(reference[name], resumed[name]), name
    lines = read_jsonl(tmp_path / "resumed" / "metrics.jsonl")
    assert [r["iteration"] for r in lines] == [0, 1]
    assert lines[1]["return"] == read_jsonl(tmp_path / "straight" / "metrics.jsonl")[1]["return"]


@pytest.mark.parametrize("placement", ["turn", "outcome", "summed"])
def test_ppo_trains_actor_and_critic(tmp_path, placement):
    config = tiny_config(
        tmp_path,
        sampler={"context": "full"},
        algorithm={"name": "ppo", "reward_placement": placement, "critic_lr": 1e-2},
    )
    [record] = train(config)
    assert np.isfinite(record["critic/value_loss"]) and record["critic/value_loss"] > 0
    assert record["estimator"] == f"ppo-{placement}"
    out = Path(config.run.out_dir)
    base = frozen_copy(build_model(config, make_template(config), out / "tokenizer")[0])
    critic = weights(out, "critic")
    assert critic["head.weight"].abs().sum() > 0  # the zero-initialised value head learnt
    policy = weights(out)
    assert any(not torch.equal(policy[k], v) for k, v in base.state_dict().items())


def test_sweet_rl_runs_critic_and_dpo_actor(tmp_path):
    config = tiny_config(
        tmp_path, policy={"constrain_to_actions": False}, sampler={"max_new_tokens": 2}, algorithm=SWEET
    )
    [record] = train(config)
    assert record["privileged_share"] == 1.0  # Sokoban tells the critic the optimal moves left
    assert record["actor/dpo_pairs"] > 0 and np.isfinite(record["actor/dpo_loss"])


def test_sweet_critic_learns_to_prefer_the_better_trajectory(tmp_path):
    config = tiny_config(
        tmp_path, policy={"constrain_to_actions": False}, algorithm={"name": "sweet_rl", "critic_lr": 5e-2}
    )
    sweet = TrainingRun(config).algorithm
    tokenizer, encoder = sweet.run.tokenizer, PromptEncoder(sweet.run.tokenizer)

    def trajectory(score: float, action: str) -> Trajectory:
        text = "#####\n#_P_#\n"
        turn = Turn(
            text,
            encoder.first(text),
            tokenizer(action, add_special_tokens=False)["input_ids"],
            action,
            text,
            "o",
            "s",
            privileged={"optimal_moves_left": 3},
        )
        return Trajectory(0, 0, "t", [turn], success=score == 1.0, score=score)

    trajectories = [trajectory(1.0, "left"), trajectory(0.0, "right")]
    steps = [sweet.critic_step(trajectories, [(0, 1)]) for _ in range(8)]
    # the critic starts as the reference, so A(τ⁺) and A(τ⁻) differ only through c: the loss starts near log 2
    assert steps[0]["critic/bt_loss"] == pytest.approx(np.log(2.0), abs=0.05)
    assert steps[-1]["critic/bt_loss"] < steps[0]["critic/bt_loss"]
    assert steps[-1]["critic/pair_accuracy"] == 1.0


def test_config_files_load_and_overrides_parse(tmp_path):
    configs = sorted(Path("baselines/configs").glob("*.yaml"))
    assert configs
    for path in configs:
        load_config(path)
    critic_free = Path("baselines/configs/mini_sokoban.yaml")
    config = load_config(critic_free, ["optim.lr=3e-6", "algorithm.estimator=rloo", "env.task_pool=[a, b]"])
    assert (
        config.optim.lr == 3e-6
        and config.algorithm.estimator == "rloo"
        and config.env.task_pool == ["a", "b"]
    )
    with pytest.raises(ValueError):
        load_config(critic_free, ["optim.no_such_key=1"])


def test_plot_command_draws_learning_curves(tmp_path):
    pytest.importorskip("matplotlib")
    run = tmp_path / "run" / "metrics.jsonl"
    run.parent.mkdir()
    run.write_text(
        "".join(
            json.dumps({"iteration": i, "episodes_seen": 8 * (i + 1), "success": i / 4}) + "\n"
            for i in range(4)
        )
    )
    out = tmp_path / "curves.png"
    assert metrics_main(["plot", str(run), "--metric", "success", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_gpu_check_config_runs_with_a_tiny_model_on_cpu(tmp_path):
    config = load_config(
        "baselines/configs/gpu_check.yaml",
        [
            "policy.model=tiny",
            "policy.device=cpu",
            "policy.dtype=float32",
            "policy.num_threads=1",
            "env.num_groups=1",
            "env.group_size=2",
            "sampler.max_new_tokens=4",
            "policy.tiny_vocab_size=600",
            f"run.out_dir={tmp_path / 'check'}",
        ],
    )
    [record] = train(config)
    assert record["tokens_per_s"] > 0 and record["time/update_s"] > 0


def test_random_presets_and_their_sampling_vocabulary():
    from baselines.trainers.models import RANDOM_PRESETS, random_preset_lm, sampling_vocabulary

    assert {"qwen2.5-1.5b", "qwen2.5-7b"} <= set(RANDOM_PRESETS)
    with pytest.raises(ValueError, match="unknown random model preset"):
        random_preset_lm("gpt-5", seed=0, dtype=torch.float32)

    class Tokenizer:
        def __len__(self) -> int:
            return 300

    allowed = sampling_vocabulary(
        load_config("baselines/configs/gpu_check.yaml", ["policy.device=cpu"]), Tokenizer()
    )
    assert allowed.shape == (151936,) and int(allowed.sum()) == 300 and bool(allowed[:300].all())


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["baselines/configs/no_such_config.yaml", "/tmp"],
        ["baselines/configs/mt_ppo_sokoban.yaml", "/no/such/model"],
    ],
)
def test_train_script_rejects_bad_arguments(args):
    import subprocess

    result = subprocess.run(
        ["bash", "scripts/train.sh", *args], check=False, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2


@pytest.mark.slow
def test_random_weight_model_path_trains_with_the_full_vocabulary(tmp_path, monkeypatch):
    from baselines.trainers import models

    monkeypatch.setitem(
        models.RANDOM_PRESETS,
        "test",
        {
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "tie_word_embeddings": True,
        },
    )
    config = tiny_config(
        tmp_path,
        policy={"model": "random:test", "constrain_to_actions": False, "dtype": "float32"},
        sampler={"max_new_tokens": 2},
    )
    [record] = train(config)
    assert record["response_tokens"] > 0 and np.isfinite(record["actor/loss"])


def test_experiment_summary_counts_episodes_to_threshold():
    from baselines.experiments.common import episodes_to_threshold, moving_average
    from baselines.experiments.estimators import summarise

    np.testing.assert_allclose(moving_average([0.0, 1.0, 1.0, 0.0], 2), [0.0, 0.5, 1.0, 0.5])
    records = [
        {"success": s, "episodes_seen": 64 * (i + 1), "anchor/singleton_share": 0.2}
        for i, s in enumerate([0.1, 0.5, 0.7, 0.9])
    ]
    assert episodes_to_threshold(records, 0.55, window=2) == 192
    assert episodes_to_threshold(records, 0.95, window=2) is None
    summary = summarise({"gigpo": {0: records}}, 0.55, 2)["estimators"]["gigpo"]
    assert summary["runs_reaching_threshold"] == 1 and summary["mean_final_success"] == pytest.approx(0.8)


PARITY_RUNS = {
    "gigpo-state": {"algorithm": {"name": "critic_free", "estimator": "gigpo", "anchor": "state"}},
    "grpo-reference": {"algorithm": {"name": "critic_free", "estimator": "grpo", "preset": "reference"}},
    "mt_grpo": {"algorithm": {"name": "critic_free", "estimator": "mt_grpo", "alpha": 0.5}},
    "ppo-turn": {
        "sampler": {"context": "full"},
        "algorithm": {"name": "ppo", "reward_placement": "turn", "critic_lr": 1e-2},
    },
    "sweet": {
        "policy": {"constrain_to_actions": False},
        "sampler": {"max_new_tokens": 2},
        "algorithm": SWEET,
    },
}


def _same_numbers(ours, recorded, where=""):
    if isinstance(recorded, dict):
        assert set(ours) == set(recorded), where
        for key in recorded:
            _same_numbers(ours[key], recorded[key], f"{where}/{key}")
    elif isinstance(recorded, float):
        assert ours == pytest.approx(recorded, rel=1e-5, abs=1e-7), where
    else:
        assert ours == recorded, where


@pytest.mark.parametrize("name", sorted(PARITY_RUNS))
def test_every_algorithm_logs_what_its_trainer_logged_before_the_shared_loop(tmp_path, name):
    """Two fixed-seed iterations give the metrics the per-algorithm trainers recorded (timings aside)."""
    recorded = json.loads((ROOT / "tests/fixtures/trainers/pre_refactor_metrics.json").read_text())["runs"][
        name
    ]
    config = tiny_config(tmp_path, run={"iterations": 2, "save_every": 1}, **PARITY_RUNS[name])
    records = [
        {key: value for key, value in record.items() if not key.startswith("time/") and key != "tokens_per_s"}
        for record in json.loads(json.dumps(train(config)))
    ]
    assert len(records) == len(recorded) == 2
    for ours, theirs in zip(records, recorded, strict=False):
        _same_numbers(ours, theirs, name)


def test_a_run_records_the_resolved_config_and_the_options_after_the_preset(tmp_path):
    config = tiny_config(
        tmp_path, algorithm={"name": "critic_free", "estimator": "grpo", "preset": "reference"}
    )
    train(config)
    out = Path(config.run.out_dir)
    assert load_config(out / "config.json") == config  # the recorded config reruns the run
    options = json.loads((out / "options.json").read_text())
    # verl-agent's arithmetic replaced the paper-form defaults (ddof 0, cutoff, singleton zero, trajectories)
    assert options["preset"] == "reference" and options["reference_code"] == "verl-agent"
    assert options["estimator_options"] == {
        "normalize": "std",
        "ddof": 1,
        "eps": 1e-6,
        "eps_mode": "add",
        "singleton": "keep",
        "episode_over": "steps",
    }
    paper = tiny_config(tmp_path / "paper", algorithm={"name": "critic_free", "estimator": "grpo"})
    train(paper)
    assert (
        json.loads((Path(paper.run.out_dir) / "options.json").read_text())["estimator_options"]["ddof"] == 0
    )


def test_ppo_has_no_preset_so_none_is_recorded_and_one_is_refused(tmp_path):
    config = tiny_config(tmp_path, sampler={"context": "full"}, algorithm={"name": "ppo"})
    has_presets = r"algorithm 'ppo' has no option 'preset'.*critic_free, hicra, sweet_rl"
    with pytest.raises(ConfigError, match=has_presets):
        config.with_overrides(["algorithm.preset=reference"])
    train(config)
    out = Path(config.run.out_dir)
    assert "preset" not in json.loads((out / "options.json").read_text())
    assert "preset" not in json.loads((out / "config.json").read_text())["algorithm"]


def test_sweet_rl_refuses_whole_trajectory_rollouts(tmp_path):
    config = tiny_config(tmp_path, sampler={"context": "full"}, algorithm={"name": "sweet_rl"})
    with pytest.raises(ConfigError, match="sampler.context=window"):
        TrainingRun(config)
    assert not Path(config.run.out_dir).exists()  # refused before anything was written


ONE_FILE_ALGORITHM = '''
"""Vanilla policy gradient on group-centred returns: the docstring's recipe for a new algorithm."""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from baselines.trainers.config import AlgorithmOptions
from baselines.trainers.samples import build_samples


@dataclass
class CentredOptions(AlgorithmOptions):
    name: ClassVar[str] = "centred_pg"
    scale: float = 1.0


class CentredPG:
    Options = CentredOptions
    context: ClassVar[str | None] = None
    label = "centred_pg"

    def __init__(self, run):
        self.run = run

    def resolved_options(self):
        return {"algorithm": "centred_pg", "scale": self.run.config.algorithm.scale}

    def advantages(self, batch, iteration):
        returns = np.array([t.episode_return for t in batch.trajectories])
        groups = np.array([t.group for t in batch.trajectories])
        centred = [returns[i] - returns[groups == groups[i]].mean() for i in range(len(returns))]
        scale = self.run.config.algorithm.scale
        turns = [np.full(len(t.turns), scale * a) for t, a in zip(batch.trajectories, centred)]
        samples = build_samples(batch.trajectories, turns, self.run.config.sampler.context)
        return samples, {"centred/max": float(np.max(np.abs(centred)))}

    def update(self, samples, iteration):
        return self.run.ppo_clip_update(samples, None, iteration)


ALGORITHM = CentredPG
'''


def test_a_new_algorithm_is_one_file_found_by_its_name(tmp_path, monkeypatch):
    import sys

    import baselines.trainers as package

    (tmp_path / "centred_pg.py").write_text(ONE_FILE_ALGORITHM, encoding="utf-8")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    try:
        config = tiny_config(tmp_path, algorithm={"name": "centred_pg", "scale": 2.0})
        with pytest.raises(ConfigError, match="'centred_pg' has no option 'gamma'"):
            config.with_overrides(["algorithm.gamma=0.5"])
        [record] = train(config)
        assert (
            record["estimator"] == "centred_pg"
            and "centred/max" in record
            and np.isfinite(record["actor/loss"])
        )
        assert json.loads((Path(config.run.out_dir) / "options.json").read_text())["scale"] == 2.0
    finally:
        sys.modules.pop("baselines.trainers.centred_pg", None)


def test_a_resumed_ppo_run_restores_the_critic_and_both_optimizers(tmp_path):
    sections = {"sampler": {"context": "full"}, "algorithm": {"name": "ppo", "critic_lr": 1e-2}}

    def run(name: str, iterations: int, resume: bool = False) -> None:
        out = {"iterations": iterations, "out_dir": str(tmp_path / name), "save_every": 1}
        train(tiny_config(tmp_path, run=out, **sections), resume=resume)

    run("straight", 2)
    run("resumed", 1)
    run("resumed", 2, resume=True)
    for module in ("policy", "critic"):
        straight, resumed = weights(tmp_path / "straight", module), weights(tmp_path / "resumed", module)
        assert all(torch.equal(straight[name], resumed[name]) for name in straight), module
    straight_log = read_jsonl(tmp_path / "straight" / "metrics.jsonl")
    resumed_log = read_jsonl(tmp_path / "resumed" / "metrics.jsonl")
    assert [r["critic/value_loss"] for r in resumed_log] == [r["critic/value_loss"] for r in straight_log]


def test_similarity_anchors_record_the_difflib_order_the_preset_chose(tmp_path):
    algorithm = {"name": "critic_free", "anchor": "similarity", "similarity_threshold": 0.9}
    paper = TrainingRun(tiny_config(tmp_path / "paper", algorithm=algorithm))
    assert paper.algorithm.resolved_options()["similarity_options"] == {
        "threshold": 0.9,
        "order": "agentenvs",
    }
    reference = TrainingRun(
        tiny_config(tmp_path / "reference", algorithm={**algorithm, "preset": "reference"})
    )
    recorded = json.loads((reference.out / "options.json").read_text())
    assert recorded["similarity_options"] == {"threshold": 0.9, "order": "verl-agent"}
