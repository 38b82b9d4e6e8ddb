"""Make the new family's env by its id, let its registered expert play, and print what happened.

::

    python docs/tutorials/scripts/play_lock.py

Prints the registry entry, the first expert episode of the test split turn
by turn, and how many test tasks the expert opens.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

import agentenvs  # noqa: F401  (registers every family found under agentenvs/, the new one included)
from agentenvs.core import Agent
from agentenvs.core.registration import entry_of, make_expert

ENV_ID = "agentenvs/Lock-v0"


def play(env: gym.Env, expert: Agent, seed: int, show: bool = False) -> dict[str, Any]:
    """One expert episode; its last info. With ``show``, print every turn."""
    observation, info = env.reset(seed=seed)
    if show:
        print(f"reset  {info['task_id']}  state {info['state_key'][:12]}\n{observation}")
    done = False
    while not done:
        response = expert.act(observation, info)
        observation, reward, terminated, truncated, info = env.step(response)
        done = terminated or truncated
        if show:
            print(f"turn {info['turn']:2d}  {response}  reward {reward:+.4f}")
    if show:
        print(observation)
    return info


def main() -> int:
    entry = entry_of(ENV_ID)
    print(f"{entry.env_id}: family {entry.family}, expert {entry.expert}")
    env = gym.make(ENV_ID, split="test")
    expert = make_expert(env)
    play(env, expert, seed=0, show=True)
    tasks = env.unwrapped.task_source.size("test")
    finals = [play(env, expert, seed) for seed in range(tasks)]
    opened = sum(info["success"] for info in finals)
    turns = sum(info["turn"] for info in finals) / tasks
    print(f"expert: {opened} of {tasks} test locks opened, {turns:.2f} turns on average")
    return 0 if opened == tasks else 1


if __name__ == "__main__":
    raise SystemExit(main())
