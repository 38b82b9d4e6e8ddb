"""Expert episodes played in ``gym.make``: what the integration tests replay through other libraries.

The one place those tests name the scripted agents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.agents.scripted import make_agent


@dataclass
class Episode:
    """One episode as ``gym.make`` gave it: ``infos[0]`` is the reset's, ``infos[t]`` turn t's."""

    env_id: str
    seed: int
    instructions: str
    observations: list[Any] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    terminated: list[bool] = field(default_factory=list)
    truncated: list[bool] = field(default_factory=list)


def expert_episode(env_id: str, seed: int, **env_kwargs: Any) -> Episode:
    """The expert's episode from ``reset(seed=seed)``, every turn recorded."""
    env = gym.make(env_id, **env_kwargs)
    try:
        observation, info = env.reset(seed=seed)
        episode = Episode(env_id, seed, env.unwrapped.instructions, [observation], [info])
        agent = make_agent("expert", env)
        done = False
        while not done:
            response = agent.act(observation, info)
            observation, reward, terminated, truncated, info = env.step(response)
            episode.responses.append(response)
            episode.observations.append(observation)
            episode.infos.append(info)
            episode.rewards.append(float(reward))
            episode.terminated.append(bool(terminated))
            episode.truncated.append(bool(truncated))
            done = terminated or truncated
        return episode
    finally:
        env.close()
