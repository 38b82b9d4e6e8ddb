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
from baselines.trainers import critic_free, ppo, sweet_rl
from baselines.trainers.common import TrainConfig, build_model, frozen_copy, load_config, make_template

TINY = {
    "env_id": "agentenvs/Sokoban-Verl-v0",
    "env_kwargs": {"dim_room": [5, 5], "min_solution_length": 3, "max_turns": 4},
    "num_groups": 2,
    "group_size": 2,
    "model": "tiny",
    "tiny_hidden_size": 16,
    "tiny_layers": 1,
    "tiny_vocab_size": 512,
    "action_words": ["up", "down", "left", "right"],
    "constrain_to_actions": True,
    "num_threads": 1,
    "template_style": "compact",
    "history_window": 0,
    "max_new_tokens": 1,
    "iterations": 1,
    "lr": 1e-2,
    "minibatch_size": 4,
    "micro_batch_size": 8,
    "kl_coef": 0.01,
}


def tiny_config(tmp_path: Path, **overrides) -> TrainConfig:
    return TrainConfig.from_mapping({**TINY, "out_dir": str(tmp_path / "run"), **overrides})


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
    config = tiny_config(tmp_path, **overrides)
    [record] = critic_free.train(config)
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
    written = read_jsonl(Path(config.out_dir) / "metrics.jsonl")
    assert written == [json.loads(json.dumps(record))]


def test_policy_moves_and_resume_continues_exactly(tmp_path):
    straight = tiny_config(tmp_path, iterations=2, out_dir=str(tmp_path / "straight"), save_every=1)
    critic_free.train(straight)
    first = tiny_config(tmp_path, iterations=1, out_dir=str(tmp_path / "resumed"), save_every=1)
    critic_free.train(first)
    with pytest.raises(FileExistsError):
        critic_free.train(first)
    after_one = weights(tmp_path / "resumed")
    critic_free.train(
        tiny_config(tmp_path, iterations=2, out_dir=str(tmp_path / "resumed"), save_every=1), resume=True
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
    config = tiny_config(tmp_path, context="full", reward_placement=placement, critic_lr=1e-2)
    [record] = ppo.train(config)
    assert np.isfinite(record["critic/value_loss"]) and record["critic/value_loss"] > 0
    assert record["estimator"] == f"ppo-{placement}"
    base = frozen_copy(build_model(config, make_template(config), Path(config.out_dir) / "tokenizer")[0])
    critic = weights(Path(config.out_dir), "critic")
    assert critic["head.weight"].abs().sum() > 0  # the zero-initialised value head learnt
    policy = weights(Path(config.out_dir))
    assert any(not torch.equal(policy[k], v) for k, v in base.state_dict().items())


def test_sweet_rl_runs_critic_and_dpo_actor(tmp_path):
    config = tiny_config(
        tmp_path,
        constrain_to_actions=False,
        max_new_tokens=2,
        sweet_candidates=4,
        sweet_prefixes=2,
        sweet_pairs_per_prefix=2,
        sweet_success_score=0.0,
    )
    [record] = sweet_rl.train(config)
    assert record["privileged_share"] == 1.0  # Sokoban tells the critic the optimal moves left
    assert record["actor/dpo_pairs"] > 0 and np.isfinite(record["actor/dpo_loss"])


def test_sweet_critic_learns_to_prefer_the_better_trajectory(tmp_path):
    config = tiny_config(tmp_path, constrain_to_actions=False, sweet_critic_lr=5e-2)
    model, tokenizer = build_model(config, make_template(config))
    reference, critic = frozen_copy(model), frozen_copy(model)
    for parameter in critic.parameters():
        parameter.requires_grad_(True)
    encoder = PromptEncoder(tokenizer)

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
    optimizer = torch.optim.AdamW(critic.parameters(), lr=config.sweet_critic_lr)
    steps = [
        sweet_rl.critic_step(
            critic, reference, encoder, trajectories, [(0, 1)], optimizer, config, tokenizer.pad_token_id
        )
        for _ in range(8)
    ]
    # the critic starts as the reference, so A(τ⁺) and A(τ⁻) differ only through c: the loss starts near log 2
    assert steps[0]["critic/bt_loss"] == pytest.approx(np.log(2.0), abs=0.05)
    assert steps[-1]["critic/bt_loss"] < steps[0]["critic/bt_loss"]
    assert steps[-1]["critic/pair_accuracy"] == 1.0


def test_config_files_load_and_overrides_parse(tmp_path):
    configs = sorted(Path("baselines/configs").glob("*.yaml"))
    assert configs
    for path in configs:
        load_config(path)
    config = load_config(configs[0], ["lr=3e-6", "estimator=rloo", "task_pool=[a, b]"])
    assert config.lr == 3e-6 and config.estimator == "rloo" and config.task_pool == ["a", "b"]
    with pytest.raises(ValueError):
        load_config(None, ["no_such_key=1"])


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
            "model=tiny",
            "device=cpu",
            "dtype=float32",
            "num_threads=1",
            "num_groups=1",
            "group_size=2",
            "max_new_tokens=4",
            "tiny_vocab_size=600",
            f"out_dir={tmp_path / 'check'}",
        ],
    )
    [record] = critic_free.train(config)
    assert record["tokens_per_s"] > 0 and record["time/update_s"] > 0


def test_random_presets_and_their_sampling_vocabulary():
    from baselines.trainers.common import RANDOM_PRESETS, random_preset_lm, sampling_vocabulary

    assert {"qwen2.5-1.5b", "qwen2.5-7b"} <= set(RANDOM_PRESETS)
    with pytest.raises(ValueError, match="unknown random model preset"):
        random_preset_lm("gpt-5", seed=0, dtype=torch.float32)

    class Tokenizer:
        def __len__(self) -> int:
            return 300

    allowed = sampling_vocabulary(
        load_config("baselines/configs/gpu_check.yaml", ["device=cpu"]), Tokenizer()
    )
    assert allowed.shape == (151936,) and int(allowed.sum()) == 300 and bool(allowed[:300].all())


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["nonsense", "baselines/configs/gigpo_alfworld.yaml", "/tmp"],
        ["ppo", "baselines/configs/mt_ppo_sokoban.yaml", "/no/such/model"],
    ],
)
def test_train_script_rejects_bad_arguments(args):
    import subprocess

    result = subprocess.run(["bash", "scripts/train.sh", *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2


@pytest.mark.slow
def test_random_weight_model_path_trains_with_the_full_vocabulary(tmp_path, monkeypatch):
    from baselines.trainers import common

    monkeypatch.setitem(
        common.RANDOM_PRESETS,
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
        tmp_path, model="random:test", constrain_to_actions=False, max_new_tokens=2, dtype="float32"
    )
    [record] = critic_free.train(config)
    assert record["response_tokens"] > 0 and np.isfinite(record["actor/loss"])


def test_experiment_summary_counts_episodes_to_threshold():
    from baselines.experiments.grpo_vs_gigpo import episodes_to_threshold, moving_average, summarise

    np.testing.assert_allclose(moving_average([0.0, 1.0, 1.0, 0.0], 2), [0.0, 0.5, 1.0, 0.5])
    records = [{"success": s, "episodes_seen": 64 * (i + 1), "anchor/singleton_share": 0.2} for i, s in enumerate([0.1, 0.5, 0.7, 0.9])]
    assert episodes_to_threshold(records, 0.55, window=2) == 192
    assert episodes_to_threshold(records, 0.95, window=2) is None
    summary = summarise({"gigpo": {0: records}}, 0.55, 2)["estimators"]["gigpo"]
    assert summary["runs_reaching_threshold"] == 1 and summary["mean_final_success"] == pytest.approx(0.8)
