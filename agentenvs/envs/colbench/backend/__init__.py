"""ColBench backend programming (``agentenvs/ColBench-v0``): a Python function the person has in mind.

Lives here: :mod:`~agentenvs.envs.colbench.backend.tasks` (built-in and official
tasks), :mod:`~agentenvs.envs.colbench.backend.families` (the built-in task
families and their hidden parameters), :mod:`~agentenvs.envs.colbench.backend.sandbox`
and :mod:`~agentenvs.envs.colbench.backend.jail` (untrusted answers run in jailed
processes), :mod:`~agentenvs.envs.colbench.backend.scoring` (the hidden tests'
rules) and :mod:`~agentenvs.envs.colbench.backend.env` (the env).

May import: ``agentenvs.core`` and the shared modules of
:mod:`agentenvs.envs.colbench` (``sources``, ``protocol``, ``collaborators``,
``dialogue``); never :mod:`agentenvs.envs.colbench.frontend`. ``jail.py`` runs
as a script without site-packages and imports only the standard library.
"""
