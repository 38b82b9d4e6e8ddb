"""The built-in scripted agents (random, expert) and the name registry.

Both are the policies an env's registry entry names (``EnvEntry.random_policy``,
``EnvEntry.expert``), found through the env's spec: see
:func:`agentenvs.core.registration.make_expert`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from agentenvs.core.agent import Agent
from agentenvs.core.keys import derive_rng
from agentenvs.core.registration import PolicyUnavailable, UnknownEnvError, make_expert, make_random_policy


class AgentUnavailable(Exception):
    """The named agent cannot act in this env (no expert, nothing to sample from)."""


class RandomAgent:
    """Uniform over the admissible actions; the env's ``sample_action`` otherwise.

    Draws come from a numpy Generator derived from ``seed`` alone, so an agent
    rebuilt with the same seed sends the same responses to the same infos.
    """

    def __init__(self, env: gym.Env, seed: int) -> None:
        self.env = env.unwrapped
        self.rng: np.random.Generator = derive_rng("agentenvs.agents.random", seed)
        self._sample_action: Callable[[np.random.Generator], str] | None = getattr(
            self.env, "sample_action", None
        )

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        admissible = info.get("admissible_actions")
        if admissible:
            action = admissible[int(self.rng.integers(len(admissible)))]
        elif self._sample_action is not None:
            action = self._sample_action(self.rng)
        else:
            raise AgentUnavailable(
                f"{type(self.env).__name__} lists no admissible actions and has no sample_action(rng)"
            )
        return self.env.protocol.format(action)


def _expert(env: gym.Env, seed: int) -> Agent:
    """The expert the env's registry entry names; it is deterministic, so the seed goes unused."""
    try:
        return make_expert(env)
    except (PolicyUnavailable, UnknownEnvError) as exc:
        raise AgentUnavailable(str(exc)) from None


AGENTS: dict[str, Callable[[gym.Env, int], Agent]] = {
    "random": make_random_policy,
    "expert": _expert,
}


def make_agent(name: str, env: gym.Env, seed: int = 0) -> Agent:
    """The built-in agent ``name`` for ``env``.

    Raises ``ValueError`` for an unknown name and :class:`AgentUnavailable`
    when the env cannot host it (its entry names no expert, or the env was
    built from its class, so no entry names one; the random agent raises it from
    ``act`` when the env offers neither admissible actions nor
    ``sample_action``).
    """
    try:
        factory = AGENTS[name]
    except KeyError:
        raise ValueError(f"unknown agent {name!r}; choose one of {sorted(AGENTS)}") from None
    return factory(env, seed)
