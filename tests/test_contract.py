"""The env contract of DESIGN.md, checked on every registered env.

- gymnasium's env checker is clean for every id;
- same seed + same responses give identical observations, rewards, state keys
  and obs keys, in this process and in fresh ones with other PYTHONHASHSEEDs;
- 10k fuzzed responses per env never raise, and an invalid turn leaves the
  state unchanged;
- reward == Σ weight · component, == Σ transition rewards + turn-level terms;
- info carries the contract's keys; ``task_id`` resets reproduce seeded ones.

Heavy checks cover up to three ids per family (``contract_ids``).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import pytest
from contract_driver import NOISE, choose_response, contract_ids, rollouts
from gymnasium.utils.env_checker import check_env

import agentenvs
from agentenvs.core import derive_rng
from agentenvs.core.env import TURN_COMPONENTS

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


def test_readme_table_documents_every_main_env():
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    table = [line for line in readme.splitlines() if line.startswith("| `agentenvs/")]
    for entry in agentenvs.ENV_ENTRIES:
        if entry.variant_of is None:
            assert any(f"`{entry.env_id}`" in row for row in table), f"README table lacks {entry.env_id}"
