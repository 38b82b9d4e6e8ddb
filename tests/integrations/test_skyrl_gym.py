"""The SkyRL-gym adapter, driven through SkyRL-gym's own ``make``, ``init``/``step``, registry and metrics,
turn by turn against the same episode in ``gym.make``."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

skyrl_gym = pytest.importorskip(
    "skyrl_gym", reason="skyrl-gym is in the test extra (pip install -e '.[test]')"
)
from omegaconf import DictConfig  # noqa: E402  (skyrl-gym's own dependency)
from skyrl_gym.metrics import aggregate_for_environment  # noqa: E402

from agentenvs.core.prompting import chat_messages  # noqa: E402
from agentenvs.integrations.skyrl_gym import ENV_CLASS, AgentenvsTextEnv, dataset_rows  # noqa: E402

from expert_episodes import Episode, expert_episode  # noqa: E402

# (id, seed) pairs whose expert episode takes more than one turn
EXPERT_CASES = [("agentenvs/Sokoban-v0", 4), ("agentenvs/TextCraft-v0", 3), ("agentenvs/Search-v0", 1)]


def skyrl_env(env_id: str, seed: int, **extra_info) -> AgentenvsTextEnv:
    # SkyRL's generator passes its own max_turns (default 1) in every row's extras; the env's governs
    extras = {"extra_info": {"env_id": env_id, "seed": seed, **extra_info}, "max_turns": 1}
    return skyrl_gym.make(ENV_CLASS, env_config=DictConfig({}), extras=extras)


def replay_through_skyrl(episode: Episode) -> None:
    """Step ``episode``'s responses through SkyRL-gym and require gym.make's episode, turn by turn."""
    env = skyrl_env(episode.env_id, episode.seed)
    try:
        conversation, _ = env.init([])
        assert conversation == chat_messages(episode.instructions, episode.observations[0], episode.infos[0])
        assert env.max_turns == episode.infos[0]["max_turns"]
        for turn, response in enumerate(episode.responses, start=1):
            out = env.step(response)
            info, expected = out["metadata"]["info"], episode.infos[turn]
            assert out["reward"] == episode.rewards[turn - 1]
            for key in ("reward_components", "state_key", "obs_key", "transitions", "turn", "task_id"):
                assert info[key] == expected[key], (turn, key)
            assert info.get("privileged") == expected.get("privileged")
            done = episode.terminated[turn - 1] or episode.truncated[turn - 1]
            assert out["done"] is done
            assert out["metadata"]["terminated"] is episode.terminated[turn - 1]
            assert out["metadata"]["truncated"] is episode.truncated[turn - 1]
            observed = chat_messages(episode.instructions, episode.observations[turn], expected)[-1]
            assert out["metadata"]["observation"] == observed["content"]
            assert out["observations"] == ([] if done else [observed])
        final = episode.infos[-1]
        metrics = env.get_metrics()
        assert metrics["turns"] == len(episode.responses)
        assert math.isclose(metrics["return"], sum(episode.rewards))
        assert metrics["success"] == float(final["success"]) and metrics["score"] == final["score"]
        for name in final["reward_components"]:
            total = sum(info["reward_components"][name] for info in episode.infos[1:])
            assert math.isclose(metrics[f"component/{name}"], total)
    finally:
        env.close()


@pytest.mark.parametrize("env_id, seed", EXPERT_CASES)
def test_an_expert_episode_through_skyrl_gym_is_gym_makes_turn_by_turn(env_id, seed):
    episode = expert_episode(env_id, seed)
    assert len(episode.responses) >= 2 and episode.infos[-1]["success"]
    replay_through_skyrl(episode)


def test_a_truncated_episode_maps_truncation_and_the_invalid_turns():
    env_id = "agentenvs/Sokoban-v0"
    gym_env = gym.make(env_id)
    observation, info = gym_env.reset(seed=2)
    episode = Episode(env_id, 2, gym_env.unwrapped.instructions, [observation], [info])
    hostile = ["", "<action>fly</action>", "\ud800 lone surrogate", "[" * 200_000]
    for response in hostile:
        observation, reward, terminated, truncated, info = gym_env.step(response)
        episode.responses.append(response)
        episode.observations.append(observation)
        episode.infos.append(info)
        episode.rewards.append(float(reward))
        episode.terminated.append(terminated)
        episode.truncated.append(truncated)
        if terminated or truncated:
            break
    gym_env.close()
    assert episode.truncated[-1] and not episode.terminated[-1]
    replay_through_skyrl(episode)


def test_the_registry_names_the_adapter_and_skyrl_aggregates_its_metrics():
    assert skyrl_gym.spec(ENV_CLASS).entry_point == "agentenvs.integrations.skyrl_gym:AgentenvsTextEnv"
    metrics = []
    for seed in (4, 5):
        episode = expert_episode("agentenvs/Sokoban-v0", seed)
        env = skyrl_env("agentenvs/Sokoban-v0", seed)
        env.init([])
        for response in episode.responses:
            env.step(response)
        metrics.append(env.get_metrics())
        env.close()
    aggregated = aggregate_for_environment(ENV_CLASS, metrics)
    assert aggregated["success"] == 1.0
    assert math.isclose(aggregated["return"], (metrics[0]["return"] + metrics[1]["return"]) / 2)


def test_dataset_rows_hold_the_prompt_init_returns_and_task_ids_pick_tasks():
    rows = dataset_rows("agentenvs/TextCraft-v0", [3, 8], env_kwargs={"max_turns": 5})
    assert [row["env_class"] for row in rows] == [ENV_CLASS, ENV_CLASS]
    for row in rows:
        extras = {key: value for key, value in row.items() if key not in ("prompt", "env_class")}
        env = skyrl_gym.make(row["env_class"], env_config=DictConfig({}), extras=extras)
        conversation, meta = env.init(row["prompt"])
        assert conversation == row["prompt"] and env.max_turns == 5
        task_id = meta["info"]["task_id"]
        env.close()
        # SkyRL's generator passes its per-class config (skyrl_gym_cfg.agentenvs) as a DictConfig
        config = DictConfig({"env_id": "agentenvs/TextCraft-v0", "env_kwargs": {"max_turns": 5}})
        by_task = skyrl_gym.make(ENV_CLASS, env_config=config, extras={"extra_info": {"task_id": task_id}})
        assert by_task.init([]) == (conversation, meta) and by_task.max_turns == 5
        by_task.close()
    assert rows[0]["prompt"] != rows[1]["prompt"]


@pytest.mark.parametrize(
    "extra_info, message",
    [
        ({"seed": 1}, "registered agentenvs id"),
        ({"env_id": "agentenvs/Nope-v0", "seed": 1}, "registered agentenvs id"),
        ({"env_id": "agentenvs/Sokoban-v0"}, "exactly one of 'seed' and 'task_id'"),
        ({"env_id": "agentenvs/Sokoban-v0", "seed": 1, "task_id": "x"}, "exactly one"),
        ({"env_id": "agentenvs/Sokoban-v0", "seed": 1.5}, "non-negative integer"),
        ({"env_id": "agentenvs/Sokoban-v0", "seed": True}, "non-negative integer"),
        ({"env_id": "agentenvs/Sokoban-v0", "seed": -3}, "non-negative integer"),
        ({"env_id": "agentenvs/Sokoban-v0", "task_id": 7}, "must be a string"),
    ],
)
def test_a_row_that_names_no_task_is_refused_with_its_reason(extra_info, message):
    with pytest.raises(ValueError, match=message):
        skyrl_gym.make(ENV_CLASS, env_config={}, extras={"extra_info": extra_info})


def test_rows_written_to_parquet_and_read_as_skyrls_dataset_reads_them_play_the_same(tmp_path):
    datasets = pytest.importorskip("datasets", reason="datasets comes with the test extra (through verl)")
    rows = dataset_rows("agentenvs/Sokoban-v0", [4]) + dataset_rows(
        "agentenvs/Sokoban-v0", [5], env_kwargs={"max_turns": 2}
    )
    path = tmp_path / "train.parquet"
    datasets.Dataset.from_list(rows).to_parquet(str(path))
    loaded = datasets.load_dataset("parquet", data_files=str(path), keep_in_memory=True)["train"]
    for row, written in zip(loaded, rows, strict=False):
        # SkyRL's PromptDataset: the prompt and env_class out, every other column becomes the env's extras
        prompt, env_class = row.pop("prompt"), row.pop("env_class")
        env = skyrl_gym.make(env_class, env_config=DictConfig({}), extras=row)
        assert env.init(prompt)[0] == written["prompt"] == prompt
        assert env.max_turns == written["extra_info"].get("env_kwargs", {}).get("max_turns", 3)
        env.close()
