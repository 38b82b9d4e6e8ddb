"""The SkyRL-gym adapter, driven through SkyRL-gym's own ``make``, ``init``/``step``, registry and metrics,
turn by turn against the same episode in ``gym.make``."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import numpy as np
import pytest

skyrl_gym = pytest.importorskip(
    "skyrl_gym", reason="skyrl-gym is in the test extra (pip install -e '.[test]')"
)
from omegaconf import DictConfig  # noqa: E402  (skyrl-gym's own dependency)
from skyrl_gym.metrics import aggregate_for_environment  # noqa: E402

from agentenvs.core.prompting import chat_messages  # noqa: E402
from agentenvs.core.registration import UnknownEnvError, main_ids  # noqa: E402
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
        ({"env_id": "agentenvs/Sokoban-v0", "seed": np.float64(1.0)}, "non-negative integer"),
        ({"env_id": "agentenvs/Sokoban-v0", "seed": np.True_}, "non-negative integer"),
        ({"env_id": "agentenvs/Sokoban-v0", "seed": np.int64(-1)}, "non-negative integer"),
        ({"env_id": "agentenvs/Sokoban-v0", "seed": 1, "env_kwargs": "{max_turns: 2"}, "not valid JSON"),
        ({"env_id": "agentenvs/Sokoban-v0", "seed": 1, "env_kwargs": "[2]"}, "must be a JSON object"),
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
        assert env.max_turns == json.loads(written["extra_info"]["env_kwargs"]).get("max_turns", 3)
        env.close()


def init_through_skyrl(extras: dict, prompt: list | None = None) -> tuple[list, int]:
    """``skyrl_gym.make`` and ``init`` as SkyRL's generator calls them: the conversation and ``max_turns``."""
    env = skyrl_gym.make(ENV_CLASS, env_config=DictConfig({}), extras=extras)
    try:
        conversation, _ = env.init(prompt or [])
        return conversation, env.max_turns
    finally:
        env.close()


def reset_info(env_id: str, seed: int, **env_kwargs) -> dict:
    """The reset ``info`` of the same episode made by ``gym.make``."""
    env = gym.make(env_id, **env_kwargs)
    try:
        return env.reset(seed=seed)[1]
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["CartPole-v1", "FrozenLake-v1", "MiniGrid-Empty-5x5-v0"])
def test_an_id_outside_agentenvs_registry_is_refused_in_one_line_naming_it(env_id):
    if env_id.startswith("MiniGrid"):
        pytest.importorskip("minigrid", reason="minigrid comes with the BabyAI extra")
    assert env_id in gym.registry  # gymnasium knows it: only agentenvs' registry can refuse it
    for env_config, extra_info in [({}, {"env_id": env_id, "seed": 1}), ({"env_id": env_id}, {"seed": 1})]:
        with pytest.raises(UnknownEnvError) as refused:
            skyrl_gym.make(ENV_CLASS, env_config=DictConfig(env_config), extras={"extra_info": extra_info})
        message = str(refused.value)
        assert repr(env_id) in message and "registered agentenvs id" in message and "\n" not in message


@pytest.mark.parametrize("env_id", main_ids())
def test_max_turns_after_init_is_the_episodes_own_limit(env_id):
    limits = {}
    for seed in (11, 12):
        _, limits[seed] = init_through_skyrl({"extra_info": {"env_id": env_id, "seed": seed}})
        assert limits[seed] == reset_info(env_id, seed)["max_turns"], (env_id, seed)
    if env_id == "agentenvs/BabyAI-v0":  # each level sets its own limit at reset (the two seeds)
        assert limits == {11: 64, 12: 576}


@pytest.mark.parametrize("seed", [np.int64(4), np.int32(4), np.uint16(4)])
def test_numpy_integer_seeds_play_the_task_of_the_same_int(seed):
    env_id = "agentenvs/Sokoban-v0"
    expected = init_through_skyrl({"extra_info": {"env_id": env_id, "seed": 4}})
    assert init_through_skyrl({"extra_info": {"env_id": env_id, "seed": seed}}) == expected
    (row,) = dataset_rows(env_id, [seed])
    assert type(row["extra_info"]["seed"]) is int and row["prompt"] == expected[0]


def test_rows_of_every_env_share_one_parquet_file_and_keep_their_own_kwargs(tmp_path):
    datasets = pytest.importorskip("datasets", reason="datasets comes with the test extra (through verl)")
    # the pair first: Arrow merged their kwargs dicts into {'max_turns': 6, 'split': None}
    cases = [("agentenvs/BabyAI-v0", 3, {"max_turns": 6}), ("agentenvs/TextCraft-v0", 5, {"split": "test"})]
    kinds = [{"max_turns": 2}, {"split": "test"}, {}, {"split": "valid", "max_turns": 3}]
    cases += [(env_id, 1, kinds[index % len(kinds)]) for index, env_id in enumerate(main_ids())]
    rows = [row for env_id, seed, kwargs in cases for row in dataset_rows(env_id, [seed], env_kwargs=kwargs)]
    path = tmp_path / "mixed.parquet"
    datasets.Dataset.from_list(rows).to_parquet(str(path))
    loaded = datasets.load_dataset("parquet", data_files=str(path), keep_in_memory=True)["train"]
    assert len(loaded) == len(cases)
    for row, written, (env_id, seed, kwargs) in zip(loaded, rows, cases, strict=True):
        # SkyRL's PromptDataset: the prompt and env_class out, every other column becomes the env's extras
        prompt, env_class = row.pop("prompt"), row.pop("env_class")
        assert env_class == ENV_CLASS
        conversation, max_turns = init_through_skyrl(row, prompt)
        assert conversation == written["prompt"] == prompt, env_id
        assert max_turns == reset_info(env_id, seed, **kwargs)["max_turns"], env_id
        if "max_turns" in kwargs:
            assert max_turns == kwargs["max_turns"], env_id
        assert json.loads(row["extra_info"]["env_kwargs"]) == kwargs  # JSON text: one string column
    # a mapping is still read as the kwargs (rows written before they were JSON text)
    extras = {"extra_info": {"env_id": "agentenvs/BabyAI-v0", "seed": 3, "env_kwargs": {"max_turns": 6}}}
    assert init_through_skyrl(extras) == (rows[0]["prompt"], 6)
