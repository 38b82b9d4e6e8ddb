"""Plays deterministic mixed rollouts (admissible, malformed and hostile responses)
on registered envs; the contract tests run it in-process and in fresh interpreters.

Run as a script: ``python tests/core/contract_driver.py ID [ID ...]`` prints one JSON
document with the rollouts of every id.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import defaultdict
from typing import Any

import gymnasium as gym

import agentenvs
from agentenvs.core import derive_rng

NOISE = [
    "",
    "<action>",
    "</action><action>",
    "<think>no action here</think>",
    "definitely not an action",
    "<action>fly to the moon</action>",
    "\x00\xff\ud7ff",
    "<action>" + "z" * 5000 + "</action>",
]


def contract_ids(per_family: int = 3) -> list[str]:
    """Ids the heavy contract tests cover: up to ``per_family`` per env family."""
    chosen: dict[str, list[str]] = defaultdict(list)
    for entry in agentenvs.ENV_ENTRIES:
        ids = chosen[entry.family]
        if len(ids) < per_family:
            ids.append(entry.env_id)
    return [env_id for ids in chosen.values() for env_id in ids]


def choose_response(env: gym.Env, info: dict[str, Any], rng) -> str:
    """Mostly a well-formed admissible action; sometimes noise."""
    admissible = info.get("admissible_actions")
    base = env.unwrapped
    if rng.random() < 0.75:
        if admissible:
            action = admissible[int(rng.integers(len(admissible)))]
            return base.protocol.format(action)
        if hasattr(base, "sample_action"):
            return base.protocol.format(base.sample_action(rng))
    return NOISE[int(rng.integers(len(NOISE)))]


def digest(text: Any) -> str:
    if not isinstance(text, str):
        text = repr(text)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def rollouts(env_id: str, seeds: range = range(3), max_turns: int = 12) -> list[dict[str, Any]]:
    env = gym.make(env_id)
    records = []
    for seed in seeds:
        rng = derive_rng("contract", env_id, seed)
        obs, info = env.reset(seed=seed)
        steps = [[digest(obs), info["state_key"], info["obs_key"], info["task_id"]]]
        for _ in range(max_turns):
            response = choose_response(env, info, rng)
            obs, reward, terminated, truncated, info = env.step(response)
            steps.append(
                [
                    digest(response),
                    digest(obs),
                    reward,
                    terminated,
                    truncated,
                    info["state_key"],
                    info["obs_key"],
                    info["reward_components"],
                    info.get("score"),
                    info.get("success"),
                ]
            )
            if terminated or truncated:
                break
        records.append({"seed": seed, "steps": steps})
    env.close()
    return records


if __name__ == "__main__":
    print(json.dumps({env_id: rollouts(env_id) for env_id in sys.argv[1:]}))
