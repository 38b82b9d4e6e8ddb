"""One recorded episode, :class:`EpisodeRecord`: what ``agentenvs run --out``, ``agentenvs eval``,
the bundle and the leaderboard hold.

A record holds what is needed to re-run the episode exactly (env id, env
kwargs, split, reset seed, task id, every response) and what the replay must
reproduce (per-turn rewards, observation and state keys, success, score,
return, component sums), plus usage (prompt and completion tokens, seconds in
the model and in the env) and how the episode ended. Envs are deterministic,
so a faithful replay (:mod:`agentenvs.eval.replay`) matches; a mismatch means
the record was altered or the env changed.

Its JSON form (:meth:`EpisodeRecord.to_json`) is the bundle's episode line;
:meth:`EpisodeRecord.from_json` reads one back through the bundle's
validation: ``kind="episode"`` for a bundle (:data:`~agentenvs.eval.bundle.EPISODE_SCHEMA`),
``kind="record"`` for a results file of ``agentenvs run``, which may name env
kwargs and predates the usage fields (:data:`~agentenvs.eval.bundle.RECORD_SCHEMA`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, SupportsFloat

import gymnasium as gym

from agentenvs.agents.scripted import make_agent
from agentenvs.eval.bundle import validate

CONTEXT_OVERFLOW = "context_overflow"


@dataclass
class EpisodeRecord:
    """One episode; ``obs_keys``/``state_keys`` start with the reset's (``turns + 1`` entries).

    ``end_reason``: ``terminated``, ``truncated``, or ``context_overflow``
    (the model's prompt no longer fit: a failure with score 0, the env still
    running); None in records written before it was recorded.
    ``terminated`` and ``truncated``: the two flags the env returned on the
    last turn (both False after a context overflow; both may be True, and then
    ``end_reason`` is ``terminated``); None in records written before they
    were recorded.
    """

    env_id: str
    env_kwargs: dict[str, Any]
    split: str | None
    seed: int
    task_id: str | None
    agent: str
    responses: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    obs_keys: list[str] = field(default_factory=list)
    state_keys: list[str] = field(default_factory=list)
    success: bool | None = None
    score: float | None = None
    component_sums: dict[str, float] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_s: float = 0.0
    env_s: float = 0.0
    end_reason: str | None = None
    terminated: bool | None = None
    truncated: bool | None = None
    # what a record read back claimed for ``turns`` and ``return`` (None for one played here); not
    # trusted, the replay checks them against the responses and the replayed rewards
    claimed_turns: int | None = field(default=None, compare=False, repr=False)
    claimed_return: float | None = field(default=None, compare=False, repr=False)

    @property
    def turns(self) -> int:
        return len(self.responses)

    @property
    def episode_return(self) -> float:
        return float(sum(self.rewards))

    @property
    def overflowed(self) -> bool:
        return self.end_reason == CONTEXT_OVERFLOW

    def add_step(self, response: str, reward: SupportsFloat, info: Mapping[str, Any]) -> None:
        """Append one turn: its response, reward, keys and reward components."""
        self.responses.append(response)
        self.rewards.append(float(reward))
        self.obs_keys.append(info["obs_key"])
        self.state_keys.append(info["state_key"])
        for name, value in info.get("reward_components", {}).items():
            self.component_sums[name] = self.component_sums.get(name, 0.0) + float(value)

    def to_json(self) -> dict[str, Any]:
        """The bundle's episode line (``turns`` and ``return`` computed; how it ended only where known)."""
        data = {name: _copied(getattr(self, name)) for name in _JSON_FIELDS}
        for name in ("end_reason", "terminated", "truncated"):
            if data[name] is None:
                del data[name]
        data["turns"] = self.turns
        data["return"] = self.episode_return
        return data

    @classmethod
    def from_json(cls, data: Any, *, kind: Literal["episode", "record"] = "record") -> EpisodeRecord:
        """A record from its JSON form, validated as ``kind`` (``"episode"`` or ``"record"``).

        ``BundleError`` (a ``ValueError``) names what the bundle's validation refuses.
        """
        if kind not in ("episode", "record"):
            raise ValueError(f"kind must be 'episode' or 'record', got {kind!r}")
        validate(kind, data)
        return cls.from_validated(data)

    @classmethod
    def from_validated(cls, data: Mapping[str, Any]) -> EpisodeRecord:
        """A record from a JSON form already validated (a whole bundle or submission validates its
        episodes)."""
        values = {name: _copied(data[name]) for name in _JSON_FIELDS if name in data}
        return cls(**values, claimed_turns=data["turns"], claimed_return=data["return"])


# the fields the JSON form holds as they are (``turns`` and ``return`` are computed from the others)
_JSON_FIELDS = tuple(spec.name for spec in fields(EpisodeRecord) if not spec.name.startswith("claimed_"))


def _copied(value: Any) -> Any:
    """A fresh container (lists and dicts copied one level), so a record never aliases its source."""
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def play_episode(
    env: gym.Env, agent_name: str, *, seed: int, env_id: str, env_kwargs: Mapping[str, Any]
) -> EpisodeRecord:
    """Reset with ``seed``, build the agent ``agent_name`` for the episode (same seed), play it out.

    ``env_id`` and ``env_kwargs`` are what the record names to rebuild the env.
    A scripted agent counts no tokens, and the record holds no timings, so the
    same episode gives the same record, byte for byte.
    """
    observation, info = env.reset(seed=seed)
    agent = make_agent(agent_name, env, seed)
    record = EpisodeRecord(
        env_id=env_id,
        env_kwargs=dict(env_kwargs),
        split=getattr(env.unwrapped, "split", None),
        seed=seed,
        task_id=info.get("task_id"),
        agent=agent_name,
        obs_keys=[info["obs_key"]],
        state_keys=[info["state_key"]],
    )
    terminated = truncated = False
    while not (terminated or truncated):
        response = agent.act(observation, info)
        observation, reward, terminated, truncated, info = env.step(response)
        record.add_step(response, reward, info)
    record.success = info.get("success")
    record.score = info.get("score")
    record.end_reason = "terminated" if terminated else "truncated"
    record.terminated, record.truncated = bool(terminated), bool(truncated)
    return record
