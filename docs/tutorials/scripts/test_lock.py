"""The Lock family's own tests: its rules, its task source, its expert, hostile replies.

The suite's contract tests (``tests/core/test_contract.py``) cover what every
family shares: they run on every registered id, this one included.
"""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers agentenvs/Lock-v0)
from agentenvs.core.registration import make_expert

ENV_ID = "agentenvs/Lock-v0"


@pytest.fixture
def env():
    env = gym.make(ENV_ID, split="test")
    yield env
    env.close()


def test_reset_shows_the_dials_and_a_hint_per_dial(env):
    observation, info = env.reset(options={"task_id": "lock-3/test/000"})
    assert observation == "Dials: 0 0 0\nHints: dial 1 higher, dial 2 set, dial 3 higher"
    assert info["privileged"] == {"code": [7, 0, 9]}
    assert info["admissible_actions"] == ["up 1", "up 2", "up 3"]


def test_a_move_turns_one_dial_and_pays_its_progress(env):
    env.reset(options={"task_id": "lock-3/test/000"})
    observation, reward, terminated, truncated, info = env.step("<action>UP 1</action>")  # case folded
    assert observation.startswith("Dials: 1 0 0") and not (terminated or truncated)
    assert info["reward_components"]["progress"] == pytest.approx(1 / 27)
    assert reward == pytest.approx(0.5 / 27)


@pytest.mark.parametrize(
    "response",
    [
        "down 1",
        "up 4",
        "up 0",
        "turn 1",
        "up " + "9" * 5000,
        "up 1.5",
        "up \ud800",
        "up\u200b 1",
        "\u202eup 1",
        "",
    ],
)
def test_what_names_no_move_is_invalid_and_changes_nothing(env, response):
    _, info = env.reset(options={"task_id": "lock-3/test/000"})
    observation, reward, _, _, after = env.step(response)
    assert after["reward_components"]["invalid_action"] == 1.0 and reward == pytest.approx(-0.1)
    assert after["state_key"] == info["state_key"] and observation.startswith("Invalid action")


def test_the_state_key_covers_the_hidden_code(env):
    keys = {env.reset(options={"task_id": f"lock-3/test/{i:03d}"})[1]["state_key"] for i in range(100)}
    assert len(keys) == 100  # every dial reads 0 0 0 at reset; only the codes differ


def test_splits_are_disjoint_and_hold_every_code_but_000(env):
    source = env.unwrapped.task_source
    codes = [
        source.load(source.task_id(split, i)) for split in source.splits for i in range(source.size(split))
    ]
    assert len(codes) == len(set(codes)) == 999 and (0, 0, 0) not in codes


def test_the_expert_opens_every_lock_in_the_fewest_turns():
    for split in ("train", "valid", "test"):
        env = gym.make(ENV_ID, split=split)
        expert = make_expert(env)
        for seed in range(env.unwrapped.task_source.size(split)):
            observation, info = env.reset(seed=seed)
            fewest = sum(info["privileged"]["code"])  # every dial starts at 0
            total, done = 0.0, False
            while not done:
                observation, reward, terminated, truncated, info = env.step(expert.act(observation, info))
                total, done = total + reward, terminated or truncated
            assert info["success"] and info["turn"] == fewest
            # progress is potential-based: it sums to Φ(end) − Φ(start) = fewest / 27, whatever the route
            assert math.isclose(total, 1.0 + 0.5 * fewest / 27)
