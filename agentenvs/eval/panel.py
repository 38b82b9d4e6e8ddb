"""Evaluation panels: the fixed episodes every model is scored on.

A panel names, per env, the episodes to play: ``episodes`` (task id, seed)
pairs from the env's ``split``, episode ``i`` being the split's task ``i``
(cycling when the split is smaller) reset with seed ``i``. The env is built
with its registered kwargs only, so every submission plays the same envs.

Each env's *digest* covers what makes its episodes comparable: the package
version, the env id, its registered kwargs, the split, and every panel
episode's (task id, seed, reset state key, reset obs key). A change to an
env's tasks or texts changes its digest, and the leaderboard then refuses
submissions made on the old one. The panel digest covers the env digests.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import gymnasium as gym

import agentenvs
from agentenvs.core.env import agent_env
from agentenvs.core.keys import stable_digest


@dataclass(frozen=True)
class PanelSpec:
    """A named panel: which split, how many episodes per env."""

    name: str
    split: str
    episodes: int


PANELS: dict[str, PanelSpec] = {
    "test": PanelSpec("test", "test", 50),
    "smoke": PanelSpec("smoke", "test", 3),
}


@dataclass(frozen=True)
class PanelEpisode:
    env_id: str
    task_id: str
    seed: int

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.env_id, self.task_id, self.seed)


@dataclass(frozen=True)
class EnvPanel:
    """One env's share of a panel."""

    env_id: str
    split: str
    episodes: tuple[PanelEpisode, ...]
    digest: str


def panel_spec(name: str) -> PanelSpec:
    if name not in PANELS:
        raise ValueError(f"unknown panel {name!r}; known: {sorted(PANELS)}")
    return PANELS[name]


def make_panel_env(env_id: str, split: str) -> gym.Env:
    """The env a panel episode runs in: registered kwargs, the panel's split."""
    return gym.make(env_id, disable_env_checker=True, split=split)


@functools.cache
def env_panel(env_id: str, spec: PanelSpec) -> EnvPanel:
    """``env_id``'s share of panel ``spec`` (resets every episode once, for the digest; cached)."""
    env = make_panel_env(env_id, spec.split)
    try:
        source = agent_env(env).task_source
        size = source.size(spec.split)
        episodes = []
        fingerprint = []
        for index in range(spec.episodes):
            task_id = source.task_id(spec.split, index % size)
            _, info = env.reset(seed=index, options={"task_id": task_id})
            episodes.append(PanelEpisode(env_id, str(task_id), index))
            fingerprint.append((str(task_id), index, info["state_key"], info["obs_key"]))
    finally:
        env.close()
    registered = dict(gym.spec(env_id).kwargs)
    digest = stable_digest(
        {
            "version": agentenvs.__version__,
            "env_id": env_id,
            "kwargs": repr(sorted(registered.items())),
            "split": spec.split,
            "episodes": fingerprint,
        }
    )
    return EnvPanel(env_id, spec.split, tuple(episodes), digest)


def panel_digest(spec: PanelSpec, env_digests: dict[str, str]) -> str:
    """One digest for the panel's name, split, size and every env's digest."""
    return stable_digest(
        {"panel": spec.name, "split": spec.split, "episodes": spec.episodes, "envs": env_digests}
    )
