"""Scripted agents: the random agent sends only admissible actions, expert dispatch, episode records."""

from __future__ import annotations

from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.agents import AgentUnavailable, make_agent
from agentenvs.core import Agent, EnvEntry, registration
from agentenvs.core.registration import entry_of, load_import_string
from agentenvs.envs.sokoban.expert import SokobanExpert
from agentenvs.eval.episodes import EpisodeRecord, play_episode
from agentenvs.eval.replay import replay_records

from fixtures.counter_env import CounterEnv
from fixtures.registry import register_for_test

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


def test_expert_is_the_one_the_registry_names_and_solves_sokoban() -> None:
    env = gym.make(SOKOBAN, split="test")
    env.reset(seed=0)
    expert = make_agent("expert", env)
    assert isinstance(expert, Agent)
    assert type(expert) is load_import_string(entry_of(SOKOBAN).expert) is SokobanExpert
    for seed in range(10):
        record = play_episode(env, "expert", seed=seed, env_id=SOKOBAN, env_kwargs={})
        assert record.success is True and record.score == 1.0


# The counter fixture as a family of its own, naming its expert and its random policy.
COUNTER = EnvEntry(
    name="TestCounter",
    entry_point="fixtures.counter_env:CounterEnv",
    summary="count to the target",
    family="Counter",
    expert="fixtures.counter_env:CountTowardsTarget",
    random_policy="fixtures.counter_env:AlwaysIncrement",
)


@pytest.fixture
def counter_id(monkeypatch: pytest.MonkeyPatch) -> str:
    return register_for_test(monkeypatch, COUNTER)


def test_a_family_registered_outside_the_package_gets_the_policies_its_entry_names(counter_id: str) -> None:
    env = gym.make(counter_id, split="test")
    assert registration.family_of(counter_id) == "Counter"
    for seed in range(5):
        assert play_episode(env, "expert", seed=seed, env_id=counter_id, env_kwargs={}).success is True
    observation, info = env.reset(seed=0)
    responses = {make_agent("random", env, seed).act(observation, info) for seed in range(8)}
    assert responses == {"<action>inc</action>"}  # the entry's policy, not the uniform default


def test_expert_of_an_entry_without_one_is_unavailable(
    counter_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    without = replace(registration.entry_of(counter_id), expert=None)
    monkeypatch.setitem(registration.ENTRIES, counter_id, without)
    with pytest.raises(AgentUnavailable, match="TestCounter-v0 ships no expert"):
        make_agent("expert", gym.make(counter_id))


def test_an_env_built_from_its_class_is_told_how_to_get_an_expert(counter_id: str) -> None:
    told = r"built from its class.*gym.make\('agentenvs/TestCounter-v0'\)"
    with pytest.raises(AgentUnavailable, match=told):
        make_agent("expert", CounterEnv())
    with pytest.raises(AgentUnavailable, match="register an EnvEntry"):
        make_agent("expert", SampledCounterEnv())  # a class no entry names
    assert make_agent("random", CounterEnv(), seed=0).__class__.__name__ == "RandomAgent"  # needs no entry


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
