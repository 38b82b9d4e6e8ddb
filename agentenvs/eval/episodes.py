"""Recorded episodes: play one with an agent, write it as JSON, replay it and compare.

A record holds what is needed to re-run the episode exactly (env id, env
kwargs, split, reset seed, task id, every response) and what the replay must
reproduce (per-turn rewards, observation and state keys, success, score).
Envs are deterministic, so a faithful replay matches to the bit; a mismatch
means the record was altered or the env changed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym

from agentenvs.agents.scripted import make_agent

RECORD_FIELDS = (
    "env_id", "env_kwargs", "split", "seed", "task_id", "agent", "responses", "rewards",
    "obs_keys", "state_keys", "success", "score", "turns", "return", "component_sums",
)  # fmt: skip


@dataclass
class EpisodeRecord:
    """One episode; ``obs_keys``/``state_keys`` start with the reset's (``turns + 1`` entries)."""

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

    @property
    def turns(self) -> int:
        return len(self.responses)

    @property
    def episode_return(self) -> float:
        return float(sum(self.rewards))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["turns"] = self.turns
        data["return"] = self.episode_return
        return {name: data[name] for name in RECORD_FIELDS}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EpisodeRecord:
        """Rebuild a record; ``TypeError`` for a non-object, ``ValueError`` naming a missing field."""
        if not isinstance(data, Mapping):
            raise TypeError("not a JSON object")
        for name in RECORD_FIELDS:
            if name not in data:
                raise ValueError(f"missing field {name!r}")
        return cls(**{name: data[name] for name in RECORD_FIELDS if name not in ("turns", "return")})


def play_episode(
    env: gym.Env, agent_name: str, *, seed: int, env_id: str, env_kwargs: Mapping[str, Any]
) -> EpisodeRecord:
    """Reset with ``seed``, build the agent ``agent_name`` for the episode (same seed), play it out.

    ``env_id`` and ``env_kwargs`` are what the record names to rebuild the env.
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
        obs_keys=[info.get("obs_key")],
        state_keys=[info.get("state_key")],
    )
    done = False
    while not done:
        response = agent.act(observation, info)
        observation, reward, terminated, truncated, info = env.step(response)
        done = terminated or truncated
        record.responses.append(response)
        record.rewards.append(float(reward))
        record.obs_keys.append(info.get("obs_key"))
        record.state_keys.append(info.get("state_key"))
        for name, value in info.get("reward_components", {}).items():
            record.component_sums[name] = record.component_sums.get(name, 0.0) + float(value)
    record.success = info.get("success")
    record.score = info.get("score")
    return record


def replay_episode(env: gym.Env, record: EpisodeRecord) -> list[str]:
    """Re-run ``record`` (reset by its task id and seed, then its responses); what differs."""
    options = {"task_id": record.task_id} if record.task_id is not None else None
    _, info = env.reset(seed=record.seed, options=options)
    mismatches = []
    _compare(mismatches, "state key after reset", info.get("state_key"), record.state_keys[:1])
    _compare(mismatches, "obs key after reset", info.get("obs_key"), record.obs_keys[:1])
    done = False
    for turn, response in enumerate(record.responses, start=1):
        if done:
            mismatches.append(f"the episode ended after {turn - 1} turns; the record has {record.turns}")
            break
        _, reward, terminated, truncated, info = env.step(response)
        done = terminated or truncated
        if turn - 1 >= len(record.rewards) or not _same_number(reward, record.rewards[turn - 1]):
            recorded = record.rewards[turn - 1] if turn - 1 < len(record.rewards) else None
            mismatches.append(f"turn {turn}: reward {reward!r}, recorded {recorded!r}")
        _compare(
            mismatches, f"turn {turn}: state key", info.get("state_key"), record.state_keys[turn : turn + 1]
        )
        _compare(mismatches, f"turn {turn}: obs key", info.get("obs_key"), record.obs_keys[turn : turn + 1])
    if not done and not mismatches:
        mismatches.append(f"the episode had not ended after the record's {record.turns} turns")
    if info.get("success") != record.success:
        mismatches.append(f"success {info.get('success')!r}, recorded {record.success!r}")
    if not _same_number(info.get("score"), record.score):
        mismatches.append(f"score {info.get('score')!r}, recorded {record.score!r}")
    return mismatches


def _compare(mismatches: list[str], what: str, actual: Any, recorded: list[Any]) -> None:
    expected = recorded[0] if recorded else None
    if actual != expected:
        mismatches.append(f"{what} {actual!r}, recorded {expected!r}")


def _same_number(actual: Any, recorded: Any) -> bool:
    if actual is None or recorded is None:
        return actual is None and recorded is None
    return math.isclose(float(actual), float(recorded), rel_tol=1e-9, abs_tol=1e-12)
