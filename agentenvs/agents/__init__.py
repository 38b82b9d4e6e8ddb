"""Scripted agents: ``make_agent(name, env, seed)`` builds one by name.

=========  ==============================================================
name       what it sends
=========  ==============================================================
random     one action drawn uniformly from ``info["admissible_actions"]``
           (or the env's ``sample_action(rng)`` where it cannot enumerate
           them), wrapped by the env's protocol so it is well formed
expert     the env's own oracle policy, the one its registry entry names
           (``make_expert(env)`` in :mod:`agentenvs.core.registration`)
=========  ==============================================================

Every agent follows :class:`agentenvs.core.Agent`: ``act(observation, info)
-> response``. An agent is built for one env; build a fresh one per episode
(with that episode's seed) so each episode can be reproduced on its own.

:func:`play_episode` runs an agent for one episode into an
:class:`EpisodeRecord` (what ``agentenvs run --out`` writes);
:func:`replay_episode` re-runs a record and lists what no longer matches.
"""

from agentenvs.agents.episodes import EpisodeRecord, play_episode, replay_episode
from agentenvs.agents.scripted import AGENTS, AgentUnavailable, RandomAgent, make_agent

__all__ = [
    "AGENTS",
    "AgentUnavailable",
    "EpisodeRecord",
    "RandomAgent",
    "make_agent",
    "play_episode",
    "replay_episode",
]
