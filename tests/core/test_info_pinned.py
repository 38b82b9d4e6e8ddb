"""The info dict of every turn pinned, for several families, with rewards and observations beside it.

``tests/fixtures/info_pinned.json`` holds, per case, every turn's info (keys,
values and the type name of each value), reward, flags and an observation
digest, recorded before the shared step path (``AgentEnv.step`` / ``_info``)
was cut for speed. A change to that path that alters any key, value, type or
reward of any family fails here. The episodes mix the expert's turns with
random admissible actions and text that names no action, so valid, invalid,
multi-action and final turns all occur.

Rerecord (only for a deliberate change of behaviour):
``python tests/core/test_info_pinned.py --record``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.agents.scripted import make_agent
from agentenvs.core.keys import stable_digest

FIXTURE = Path(__file__).parents[1] / "fixtures" / "info_pinned.json"
NOT_AN_ACTION = "Let me think about it first."

# (env id, kwargs, seed); the Search worlds are small so the case builds in seconds
CASES: list[tuple[str, dict[str, Any], int]] = [
    ("agentenvs/Sokoban-v0", {}, 0),
    ("agentenvs/Sokoban-v0", {}, 3),
    ("agentenvs/TextCraft-v0", {}, 0),
    ("agentenvs/TextCraft-v0", {}, 5),
    ("agentenvs/BabyAI-GoToRedBall-v0", {}, 0),
    ("agentenvs/BabyAI-GoToRedBall-v0", {}, 2),
    ("agentenvs/Search-NQ-v0", {"corpus_passages": 3000}, 0),
    ("agentenvs/Search-HotpotQA-v0", {"corpus_passages": 3000, "reward_preset": "mt-ppo"}, 1),
    ("agentenvs/Search-NQ-v0", {"corpus_passages": 3000, "reward_preset": "search-r1"}, 2),
    ("agentenvs/Search-PopQA-v0", {"corpus_passages": 3000, "reward_preset": "mt-grpo"}, 3),
]

# The built-in worlds in a private cache, with no data folder.
pytestmark = pytest.mark.usefixtures("private_search_cache")


def case_name(case: tuple[str, dict[str, Any], int]) -> str:
    env_id, kwargs, seed = case
    return f"{env_id.split('/')[1]}{json.dumps(kwargs, sort_keys=True)}@{seed}"


def described(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` as JSON data, with the exact type name of each value beside it (JSON alone would merge
    a tuple into a list and an int into a float)."""
    return {"values": json.loads(json.dumps(info)), "types": {k: type(v).__name__ for k, v in info.items()}}


def play(case: tuple[str, dict[str, Any], int]) -> list[dict[str, Any]]:
    """Reset then turns: the expert's moves, every third turn a random admissible action or no action."""
    env_id, kwargs, seed = case
    env = gym.make(env_id, **kwargs)
    try:
        expert = make_agent("expert", env)
        random_agent = make_agent("random", env, seed=seed)
        rng = np.random.default_rng(seed)
        obs, info = env.reset(seed=seed)
        turns = [{"observation": stable_digest(obs), "info": described(info)}]
        done = False
        while not done:
            draw = rng.random()
            if len(turns) % 3 == 2:
                response = NOT_AN_ACTION if draw < 0.5 else random_agent.act(obs, info)
            else:
                response = expert.act(obs, info)
            obs, reward, terminated, truncated, info = env.step(response)
            turns.append({
                "response": response, "observation": stable_digest(obs), "reward": reward,
                "terminated": terminated, "truncated": truncated, "info": described(info),
            })  # fmt: skip
            done = terminated or truncated
        return turns
    finally:
        env.close()


@pytest.fixture(scope="module")
def pinned() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES, ids=case_name)
def test_every_turns_info_reward_and_observation_is_as_recorded(case, pinned) -> None:
    recorded = pinned[case_name(case)]
    played = json.loads(json.dumps(play(case)))
    assert len(played) == len(recorded)
    for turn, (now, then) in enumerate(zip(played, recorded, strict=False)):
        assert now == then, f"turn {turn} differs"


def test_the_cases_cover_invalid_multi_action_and_final_turns(pinned) -> None:
    turns = [turn for case in CASES for turn in pinned[case_name(case)][1:]]
    components = [turn["info"]["values"]["reward_components"] for turn in turns]
    assert any(c.get("invalid_action") == 1.0 for c in components)
    assert any(len(turn["info"]["values"]["transitions"]) > 1 for turn in turns)
    assert any("privileged" in turn["info"]["values"] for turn in turns)
    assert any("admissible_actions" in turn["info"]["values"] for turn in turns)
    assert sum(turn["terminated"] or turn["truncated"] for turn in turns) == len(CASES)


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        raise SystemExit("usage: python tests/core/test_info_pinned.py --record")
    FIXTURE.write_text(json.dumps({case_name(c): play(c) for c in CASES}, indent=1) + "\n", encoding="utf-8")
