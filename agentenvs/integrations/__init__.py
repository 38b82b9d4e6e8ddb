"""Adapters to other RL libraries, one module per library, each behind its own extra.

An adapter may import ``agentenvs.core`` and reach the env families only through
``gym.make`` and the registry; it never imports ``baselines`` or ``leaderboard``.

- ``skyrl_gym``: any id as a SkyRL-gym ``BaseTextEnv``, registered as ``"agentenvs"`` (extra ``skyrl-gym``).
- ``openenv``: any id as an OpenEnv environment server, ``agentenvs serve ID`` (extra ``openenv``).
"""
