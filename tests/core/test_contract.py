"""The env contract of DESIGN.md, checked on every registered env.

- gymnasium's env checker is clean for every id;
- same seed + same responses give identical observations, rewards, state keys
  and obs keys, in this process and in fresh ones with other PYTHONHASHSEEDs;
- 10k fuzzed responses per env never raise, and an invalid turn leaves the
  state unchanged;
- reward == Σ weight · component, == Σ transition rewards + turn-level terms;
- info carries the contract's keys; ``task_id`` resets reproduce seeded ones;
- info values keep one type per key; Gymnasium's vector envs (sync, async with
  its shared memory) read exactly like single envs across episode ends;
- envs pickle and deep-copy; a restored snapshot continues bit-identically;
- ``score`` lies in [0, 1]; ``help()`` shows each env's table;
- every env declares what a model is told, one type each: ``instructions``
  (a read-only property), ``goal_in_first_observation`` (a class-level bool)
  and a protocol whose declared answer format is the one it reads.

Heavy checks cover up to three ids per family (``contract_ids``).
"""

from __future__ import annotations

import copy
import inspect
import json
import math
import os
import pickle
import pydoc
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import agentenvs
from agentenvs.core import AnswerFormat, ResponseProtocol, derive_rng
from agentenvs.core.env import TURN_COMPONENTS
from agentenvs.core.registration import PolicyUnavailable, make_expert

from contract_driver import NOISE, choose_response, contract_ids, digest, rollouts

ALL_IDS = agentenvs.ENV_IDS
HEAVY_IDS = contract_ids()
BASE_INFO_KEYS = {"task_id", "turn", "max_turns", "state_key", "obs_key", "reward_components", "transitions"}


def test_every_family_registers_an_env():
    assert ALL_IDS, "no env registered"
    assert len(set(ALL_IDS)) == len(ALL_IDS)
    assert all(env_id.startswith("agentenvs/") and env_id.endswith("-v0") for env_id in ALL_IDS)


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_env_checker_is_clean(env_id):
    env = gym.make(env_id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    problems = [str(w.message) for w in caught if not issubclass(w.category, DeprecationWarning)]
    assert not problems, problems
    env.close()


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_env_declares_what_a_model_is_told(env_id):
    env = gym.make(env_id)
    base, family = env.unwrapped, type(env.unwrapped)
    assert isinstance(inspect.getattr_static(family, "instructions"), property)
    with pytest.raises(AttributeError):
        base.instructions = "other text"
    assert isinstance(base.instructions, str) and base.instructions.strip()
    assert type(family.goal_in_first_observation) is bool
    assert isinstance(base.protocol, ResponseProtocol)
    answer = base.protocol.answer_format
    assert isinstance(answer, AnswerFormat)  # which checks its own fields (tests/core/test_protocol.py)
    # a response laid out as declared, with as many actions as declared, reads well formed and whole
    words = [f"step{k}" for k in range(answer.max_actions)]
    body = f" {answer.separator} ".join(words) if answer.separator else words[0]
    block = f"<{answer.action_tags[0]}>{body}</{answer.action_tags[0]}>" if answer.action_tags else body
    parsed = base.protocol.parse(f"<{answer.think_tag}>plan</{answer.think_tag}>{block}")
    assert parsed.well_formed and parsed.error is None and len(parsed.actions) == answer.max_actions
    assert all(word in action for word, action in zip(words, parsed.actions, strict=False))
    env.close()


@pytest.mark.parametrize("env_id", HEAVY_IDS)
def test_info_keys_and_reward_is_weighted_sum(env_id):
    env = gym.make(env_id)
    base = env.unwrapped
    weights = base.reward_weights
    for seed in range(3):
        rng = derive_rng("contract-info", env_id, seed)
        _, info = env.reset(seed=seed)
        assert BASE_INFO_KEYS <= set(info)
        assert info["reward_components"] == {} and info["transitions"] == [] and info["turn"] == 0
        done = False
        while not done:
            _, reward, terminated, truncated, info = env.step(choose_response(env, info, rng))
            done = terminated or truncated
            components = info["reward_components"]
            assert BASE_INFO_KEYS <= set(info)
            assert set(components) == set(weights)
            assert math.isclose(reward, sum(weights[k] * v for k, v in components.items()), abs_tol=1e-9)
            if components.get("invalid_action"):  # nothing applied: the whole reward is the turn's
                assert info["transitions"] == []
            else:
                turn_terms = sum(weights[k] * components[k] for k in TURN_COMPONENTS if k in components)
                from_steps = sum(t["reward"] for t in info["transitions"])
                assert math.isclose(reward, from_steps + turn_terms, abs_tol=1e-9)
            if info["transitions"]:
                assert info["transitions"][-1]["next_state_key"] == info["state_key"]
            assert ("success" in info and "score" in info) == done
        assert info["turn"] <= info["max_turns"]
    env.close()


@pytest.mark.parametrize("env_id", HEAVY_IDS)
def test_task_id_reset_reproduces_seeded_reset(env_id):
    env = gym.make(env_id)
    obs, info = env.reset(seed=5)
    obs_again, info_again = env.reset(options={"task_id": info["task_id"]})
    assert info_again["task_id"] == info["task_id"]
    assert info_again["state_key"] == info["state_key"]
    assert obs_again == obs
    with pytest.raises(ValueError):
        env.reset(options={"task_id": "no-such-task"})
    with pytest.raises(ValueError):
        env.reset(options={"bogus_option": 1})
    env.close()


@pytest.mark.parametrize("env_id", HEAVY_IDS)
def test_splits_never_share_task_ids(env_id):
    source = gym.make(env_id).unwrapped.task_source
    seen: dict[str, str] = {}
    for split in source.splits:
        for index in range(min(source.size(split), 2000)):
            task_id = source.task_id(split, index)
            assert seen.setdefault(task_id, split) == split, f"{task_id} in {seen[task_id]} and {split}"


def test_rollouts_identical_across_processes_and_hash_seeds():
    here = json.loads(json.dumps({env_id: rollouts(env_id) for env_id in HEAVY_IDS}))
    driver = Path(__file__).with_name("contract_driver.py")
    for hash_seed in ("0", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        out = subprocess.run(
            [sys.executable, str(driver), *HEAVY_IDS], env=env, capture_output=True, text=True, timeout=600
        )
        assert out.returncode == 0, out.stderr[-2000:]
        there = json.loads(out.stdout)
        for env_id in HEAVY_IDS:
            assert there[env_id] == here[env_id], f"{env_id} differs with PYTHONHASHSEED={hash_seed}"


def fuzz_response(rng, admissible: list[str] | None) -> object:
    kind = int(rng.integers(6))
    if kind == 0:
        return NOISE[int(rng.integers(len(NOISE)))]
    if kind == 1:
        return "".join(chr(int(c)) for c in rng.integers(1, 0xD7FF, size=int(rng.integers(0, 60))))
    if kind == 2 and admissible:
        action = admissible[int(rng.integers(len(admissible)))]
        cut = int(rng.integers(len(action) + 1))
        return f"<action>{action[:cut]}{chr(int(rng.integers(33, 127)))}{action[cut:]}</action>"
    if kind == 3:
        tags = ["<action>", "</action>", "<think>", "</think>", "||", "[", "]", "click", "search", "up"]
        return "".join(tags[int(i)] for i in rng.integers(0, len(tags), size=int(rng.integers(1, 8))))
    if kind == 4:
        return bytes(int(b) for b in rng.integers(0, 256, size=int(rng.integers(0, 40))))
    return None if rng.random() < 0.5 else 12345


@pytest.mark.parametrize("env_id", HEAVY_IDS)
def test_fuzzed_responses_never_raise_and_invalid_turns_change_nothing(env_id):
    env = gym.make(env_id).unwrapped
    rng = derive_rng("contract-fuzz", env_id)
    _, info = env.reset(seed=0)
    seed = 0
    invalid = 0
    for _ in range(10_000):
        before = info["state_key"]
        _, reward, terminated, truncated, info = env.step(fuzz_response(rng, info.get("admissible_actions")))
        assert isinstance(reward, float) and math.isfinite(reward)
        if info["reward_components"].get("invalid_action"):
            invalid += 1
            assert info["state_key"] == before
            assert info["transitions"] == []
        if terminated or truncated:
            seed += 1
            _, info = env.reset(seed=seed)
    assert invalid > 1000


def test_the_env_table_page_documents_every_main_env():
    page = (Path(__file__).parents[2] / "docs" / "reference" / "env-table.md").read_text()
    table = [line for line in page.splitlines() if line.startswith("| `agentenvs/")]
    for entry in agentenvs.ENV_ENTRIES:
        if entry.variant_of is None:
            assert any(f"`{entry.env_id}`" in row for row in table), (
                f"docs/reference/env-table.md lacks {entry.env_id}"
            )


# ------------------------------------------------ Gymnasium's vector envs
MAIN_IDS = [entry.env_id for entry in agentenvs.ENV_ENTRIES if entry.variant_of is None]
VECTOR_TURNS = 5  # short episodes, so every env ends several of them


def _make_vector(env_id: str, how: str) -> gym.vector.VectorEnv:
    if how in ("sync", "async"):
        return gym.make_vec(env_id, num_envs=2, vectorization_mode=how, max_turns=VECTOR_TURNS)
    factory = VectorFactory(env_id)
    vector_class = gym.vector.SyncVectorEnv if how == "SyncVectorEnv" else gym.vector.AsyncVectorEnv
    return vector_class([factory, factory])


class VectorFactory:
    """A picklable env constructor for the vector envs' defaults."""

    def __init__(self, env_id: str) -> None:
        self.env_id = env_id

    def __call__(self) -> gym.Env:
        return gym.make(self.env_id, max_turns=VECTOR_TURNS)


@pytest.mark.parametrize("how", ["sync", "async", "SyncVectorEnv", "AsyncVectorEnv"])
@pytest.mark.parametrize("env_id", MAIN_IDS)
def test_gymnasium_vector_envs_match_single_envs_across_episode_ends(env_id, how):
    """Each sub-env of a vector env reads exactly like a single env fed the same responses,
    through episode ends and Gymnasium's autoresets (default shared memory in async mode)."""
    vector = _make_vector(env_id, how)
    mirrors = [VectorFactory(env_id)() for _ in range(2)]
    observations, _ = vector.reset(seed=0)
    mirror_infos = []
    for index, mirror in enumerate(mirrors):
        observation, info = mirror.reset(seed=index)
        assert observations[index] == observation
        mirror_infos.append(info)
    rngs = [derive_rng("contract-vector", env_id, index) for index in range(2)]
    ends = np.zeros(2, dtype=int)
    restart = [False, False]
    for _ in range(40):
        responses = [choose_response(mirrors[i], mirror_infos[i], rngs[i]) for i in range(2)]
        observations, rewards, terminated, truncated, _ = vector.step(responses)
        for index, mirror in enumerate(mirrors):
            if restart[index]:  # Gymnasium's next-step autoreset: a seedless reset
                observation, mirror_infos[index] = mirror.reset()
                reward, ended = 0.0, (False, False)
            else:
                observation, reward, *ended, mirror_infos[index] = mirror.step(responses[index])
            assert observations[index] == observation
            assert rewards[index] == reward and (terminated[index], truncated[index]) == tuple(ended)
            restart[index] = any(ended)
            ends[index] += any(ended)
        if ends.min() >= 2:
            break
    assert ends.min() >= 2
    vector.close()


def _type_paths(value, path, types):
    if isinstance(value, dict):
        for key, item in value.items():
            _type_paths(item, f"{path}.{key}", types)
    else:
        types.setdefault(path, set()).add(type(value))


@pytest.mark.parametrize("env_id", HEAVY_IDS)
def test_info_values_keep_one_type_per_key(env_id):
    env = gym.make(env_id, max_turns=30)  # long enough to reach dead ends (a deadlocked Sokoban room)
    types: dict[str, set[type]] = {}
    for seed in range(6):
        rng = derive_rng("contract-types", env_id, seed)
        _, info = env.reset(seed=seed)
        _type_paths(info, "info", types)
        done = False
        while not done:
            _, _, terminated, truncated, info = env.step(choose_response(env, info, rng))
            _type_paths(info, "info", types)
            done = terminated or truncated
    mixed = {path: sorted(t.__name__ for t in kinds) for path, kinds in types.items() if len(kinds) > 1}
    assert not mixed, mixed
    env.close()


# ------------------------------------------------ pickling and snapshots
def _play(env: gym.Env, responses: list[str]) -> list:
    """What stepping ``responses`` returns (observations digested), until the episode ends."""
    record = []
    for response in responses:
        observation, reward, terminated, truncated, info = env.step(response)
        record.append((digest(observation), reward, terminated, truncated, json.dumps(info, sort_keys=True)))
        if terminated or truncated:
            break
    return record


def _responses(env: gym.Env, info: dict, rng, count: int) -> list[str]:
    return [choose_response(env, info, rng) for _ in range(count)]


@pytest.mark.parametrize("env_id", MAIN_IDS)
def test_env_pickles_and_deep_copies_before_and_after_reset(env_id):
    env = gym.make(env_id)
    for copied in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env)):
        assert copied.reset(seed=3)[0] == env.reset(seed=3)[0]
    _, info = env.reset(seed=4)
    rng = derive_rng("contract-pickle", env_id)
    _, _, terminated, truncated, info = env.step(choose_response(env, info, rng))
    if terminated or truncated:  # a one-turn episode (an answer ends a Search episode): copy at a start
        _, info = env.reset(seed=5)
    data = pickle.dumps(env)
    assert len(data) < 2_000_000, "an env pickles its shared data instead of a handle"
    responses = _responses(env, info, rng, 6)
    copies = [pickle.loads(data), copy.deepcopy(env)]
    expected = _play(env, responses)
    for copied in copies:
        snapshot = copied.unwrapped.snapshot()
        assert _play(copied, responses) == expected
        copied.reset(options={"snapshot": snapshot})  # a copy's snapshots work as the original's
        assert _play(copied, responses) == expected
    env.close()


@pytest.mark.parametrize("env_id", HEAVY_IDS)
def test_restore_then_the_same_responses_continue_bit_identically(env_id):
    env = gym.make(env_id)
    rng = derive_rng("contract-snapshot", env_id)
    for seed in range(3):
        observation, info = env.reset(seed=seed)
        for _ in range(seed * 7):  # snapshots at turn 0, 7 and 14 (or early in a next episode)
            observation, _, terminated, truncated, info = env.step(choose_response(env, info, rng))
            if terminated or truncated:
                observation, info = env.reset(seed=seed + 100)
        snapshot = env.unwrapped.snapshot()
        data = pickle.dumps(snapshot)
        assert len(data) < 65_536
        responses = _responses(env, info, rng, 8)
        expected = _play(env, responses)
        expected_next_task = env.reset()[1]["task_id"]  # seedless: drawn from the env's RNG

        for target in (env, gym.make(env_id)):
            restored, restored_info = target.reset(options={"snapshot": pickle.loads(data)})
            assert digest(restored) == digest(observation)
            assert restored_info["state_key"] == info["state_key"]
            assert restored_info["turn"] == info["turn"]
            assert _play(target, responses) == expected
            assert target.reset()[1]["task_id"] == expected_next_task
    env.close()


def test_snapshots_restore_only_into_their_own_env_class():
    sokoban = gym.make("agentenvs/Sokoban-v0")
    sokoban.reset(seed=0)
    other_id = next(env_id for env_id in MAIN_IDS if not env_id.startswith("agentenvs/Sokoban"))
    with pytest.raises(ValueError, match="not a snapshot"):
        gym.make(other_id).reset(options={"snapshot": sokoban.unwrapped.snapshot()})
    with pytest.raises(ValueError, match="exclude"):
        sokoban.reset(options={"snapshot": sokoban.unwrapped.snapshot(), "task_id": "x"})
    with pytest.raises(RuntimeError, match="reset"):
        gym.make("agentenvs/Sokoban-v0").unwrapped.snapshot()


# ------------------------------------------------ consistency across families
@pytest.mark.parametrize("env_id", HEAVY_IDS)
def test_score_is_in_the_unit_interval(env_id):
    env = gym.make(env_id)
    try:
        expert = make_expert(env)
    except PolicyUnavailable:
        expert = None
    rng = derive_rng("contract-score", env_id)
    for seed in range(3):
        observation, info = env.reset(seed=seed)
        done = False
        while not done:
            response = expert.act(observation, info) if expert else choose_response(env, info, rng)
            observation, _, terminated, truncated, info = env.step(response)
            done = terminated or truncated
        assert isinstance(info["score"], float) and 0.0 <= info["score"] <= 1.0


@pytest.mark.parametrize("env_id", MAIN_IDS)
def test_help_shows_the_env_table_and_arguments(env_id):
    env_class = type(gym.make(env_id).unwrapped)
    text = pydoc.render_doc(env_class, renderer=pydoc.plaintext)
    assert "Args:" in text
    assert "\n====" in env_class.__doc__, "help() lacks the observation/action/reward table"
    for name in env_class.default_reward_weights:
        assert name in text


@pytest.mark.parametrize("env_id", MAIN_IDS)
def test_the_observation_mode_kwarg_is_obs_mode_in_every_family(env_id):
    parameters = inspect.signature(type(gym.make(env_id).unwrapped)).parameters
    modes = {name for name in parameters if name.endswith("mode") and name != "render_mode"}
    assert modes <= {"obs_mode"} | ({"observation_mode"} if "obs_mode" in modes else set())


@pytest.mark.parametrize("env_id", HEAVY_IDS)
def test_every_state_of_an_expert_episode_restores_exactly(env_id):
    """Snapshots after every turn of expert episodes (doors opened, objects carried, goods bought):
    restoring each one and replaying the rest of the episode gives the same tail."""
    env = gym.make(env_id)
    try:
        expert = make_expert(env)
    except PolicyUnavailable:
        pytest.skip(f"{env_id} ships no expert")
    for seed in range(6):
        observation, info = env.reset(seed=seed)
        snapshots, responses, records = [], [], []
        done = False
        while not done:
            snapshots.append(env.unwrapped.snapshot())
            responses.append(expert.act(observation, info))
            observation, reward, terminated, truncated, info = env.step(responses[-1])
            info_text = json.dumps(info, sort_keys=True)
            records.append((digest(observation), reward, terminated, truncated, info_text))
            done = terminated or truncated
        for turn in range(len(snapshots) - 1, -1, -1):  # latest first: each restore goes back in time
            env.reset(options={"snapshot": snapshots[turn]})
            assert _play(env, responses[turn:]) == records[turn:], f"seed {seed}, turn {turn}"
