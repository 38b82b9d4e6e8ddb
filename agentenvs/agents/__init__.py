"""Agents: what answers an env's observations.

=================  ============================================================
module             what lives there
=================  ============================================================
``scripted``       the scripted agents, built by name with ``make_agent(name,
                   env, seed)``: ``random`` (one action drawn uniformly from
                   ``info["admissible_actions"]``, or the env's
                   ``sample_action(rng)`` where it cannot enumerate them,
                   wrapped by the env's protocol) and ``expert`` (the env's
                   own oracle policy, the one its registry entry names:
                   ``make_expert(env)`` in :mod:`agentenvs.core.registration`)
``local``          a local transformers model as a chat backend
``openai_server``  that local model behind an OpenAI-compatible HTTP server
=================  ============================================================

Every scripted agent follows :class:`agentenvs.core.agent.Agent`: ``act(observation,
info) -> response``. An agent is built for one env; build a fresh one per
episode (with that episode's seed) so each episode can be reproduced on its
own.

May import: ``agentenvs.core`` (the env families only through ``gym.make``
and their registry entries). It never imports :mod:`agentenvs.eval` (which
plays and checks agents' episodes, and imports this package), ``leaderboard``
or ``baselines``.
"""

from agentenvs.agents.scripted import AGENTS, AgentUnavailable, RandomAgent, make_agent

__all__ = ["AGENTS", "AgentUnavailable", "RandomAgent", "make_agent"]
