"""Adapters to other RL libraries, one module per library, each behind its own extra.

- ``skyrl_gym``: any id as a SkyRL-gym ``BaseTextEnv``, registered as ``"agentenvs"`` (extra ``skyrl-gym``).
- ``openenv``: any id as an OpenEnv environment server, ``agentenvs serve ID`` (extra ``openenv``).

May import: ``agentenvs.core``, reaching the env families only through ``gym.make`` and the
registry; never the baselines or the leaderboard.
"""
