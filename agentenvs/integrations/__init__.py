"""Adapters from agentenvs ids to other RL libraries' environment interfaces, one module per library.

Each module lives behind an extra of its own that pins the library version
its tests run (``pip install "agentenvs[trl]"``), and speaks to the envs only
through the public contract: ``gym.make``/the registry, ``env.unwrapped``'s
declared ``instructions`` and ``protocol``, the documented ``info`` keys and
:mod:`agentenvs.core.prompting`. Nothing here imports ``baselines`` or
``leaderboard``, and importing this package imports no library.

- :mod:`agentenvs.integrations.trl`: TRL's ``GRPOTrainer`` (its ``rollout_func``; extra ``trl``).
- :mod:`agentenvs.integrations.verifiers`: verifiers' ``MultiTurnEnv`` and rubric (``load_environment``; extra
  ``verifiers``).
- :mod:`agentenvs.integrations.skyrl_gym`: any id as a SkyRL-gym ``BaseTextEnv``, registered as
  ``"agentenvs"`` (extra ``skyrl-gym``).
- :mod:`agentenvs.integrations.openenv`: any id as an OpenEnv environment server, ``agentenvs serve ID``
  (extra ``openenv``).

May import: ``agentenvs.core`` (prompting, the env contract); the families only through ``gym.make``.
"""
