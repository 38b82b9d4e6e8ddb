"""Scripted agents: the random agent sends only admissible actions, expert dispatch, episode records."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from fixtures.counter_env import CounterEnv

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.agents import AgentUnavailable, make_agent
from agentenvs.core import Agent
from agentenvs.eval.episodes import EpisodeRecord, play_episode
from agentenvs.eval.replay import replay_records

SOKOBAN = "agentenvs/Sokoban-v0"


class UnlistedCounterEnv(CounterEnv):
    """Cannot enumerate its actions."""

    def admissible_actions(self) -> None:
        return None


class SampledCounterEnv(UnlistedCounterEnv):
    """Cannot enumerate its actions but can draw one."""

    def sample_action(self, rng: np.random.Generator) -> str:
        return ("dec", "inc")[int(rng.integers(2))]


def random_responses(env: gym.Env, seed: int, episodes: int = 5) -> list[tuple[str, list[str]]]:
    """Every (response, admissible list it answered) of a few random-agent episodes."""
    sent = []
    for episode in range(episodes):
        observation, info = env.reset(seed=seed + episode)
        agent = make_agent("random", env, seed + episode)
        done = False
        while not done:
            response = agent.act(observation, info)
            sent.append((response, list(info["admissible_actions"])))
            observation, _, terminated, truncated, info = env.step(response)
            done = terminated or truncated
    return sent


def test_random_agent_sends_only_well_formed_admissible_actions() -> None:
    env = gym.make(SOKOBAN)
    protocol = env.unwrapped.protocol
    sent = random_responses(env, seed=0, episodes=30)
    for response, admissible in sent:
        parsed = protocol.parse(response)
        assert parsed.well_formed and parsed.error is None
        assert len(parsed.actions) == 1 and parsed.actions[0] in admissible
    chosen = {protocol.parse(response).actions[0] for response, _ in sent}
    assert chosen == set(sent[0][1])  # uniform over the list: every action turns up in 90 draws


def test_random_agent_is_reproducible_from_its_seed() -> None:
    env = gym.make(SOKOBAN)
    assert random_responses(env, seed=5) == random_responses(env, seed=5)
    assert random_responses(env, seed=5) != random_responses(env, seed=6)


def test_random_agent_falls_back_to_sample_action() -> None:
    env = SampledCounterEnv()
    observation, info = env.reset(seed=0)
    assert "admissible_actions" not in info
    agent = make_agent("random", env, seed=0)
    responses = {agent.act(observation, info) for _ in range(20)}
    assert responses == {"<action>dec</action>", "<action>inc</action>"}


def test_random_agent_without_actions_to_choose_from_says_so() -> None:
    env = UnlistedCounterEnv()
    observation, info = env.reset(seed=0)
    agent = make_agent("random", env, seed=0)
    with pytest.raises(AgentUnavailable, match="no admissible actions and has no sample_action"):
        agent.act(observation, info)


def test_expert_dispatches_to_the_env_and_solves_sokoban() -> None:
    env = gym.make(SOKOBAN, split="test")
    env.reset(seed=0)
    expert = make_agent("expert", env)
    assert isinstance(expert, Agent)
    assert type(expert) is type(env.unwrapped.expert())
    for seed in range(10):
        record = play_episode(env, "expert", seed=seed, env_id=SOKOBAN, env_kwargs={})
        assert record.success is True and record.score == 1.0


def test_expert_of_an_env_without_one_is_unavailable() -> None:
    class NoExpert(CounterEnv):
        def expert(self) -> Any:
            return super(CounterEnv, self).expert()

    with pytest.raises(AgentUnavailable, match="ships no expert"):
        make_agent("expert", NoExpert())


def test_unknown_agent_name() -> None:
    with pytest.raises(ValueError, match="unknown agent 'oracle'"):
        make_agent("oracle", gym.make(SOKOBAN))


def test_episode_record_round_trip_and_replay() -> None:
    env = gym.make(SOKOBAN)
    record = play_episode(env, "random", seed=3, env_id=SOKOBAN, env_kwargs={})
    assert record.turns == len(record.rewards) == len(record.obs_keys) - 1 == len(record.state_keys) - 1
    assert record.episode_return == pytest.approx(sum(record.rewards))
    again = EpisodeRecord.from_json(record.to_json())
    assert again == record
    assert [replayed.problems for replayed in replay_records([again])] == [[]]
    again.rewards[-1] += 1.0
    again.state_keys[1] = "0" * 32
    [problems] = [replayed.problems for replayed in replay_records([again])]
    assert any(problem.startswith("state_keys differ from turn 1: ") for problem in problems)
    assert any(problem.startswith(f"rewards differ from turn {again.turns - 1}: ") for problem in problems)
    with pytest.raises(ValueError, match="must contain .*'rewards'"):
        EpisodeRecord.from_json({k: v for k, v in record.to_json().items() if k != "rewards"})
