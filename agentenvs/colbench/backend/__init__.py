"""ColBench backend programming (``agentenvs/ColBench-v0``): a Python function the person has in mind.

Lives here: :mod:`~agentenvs.colbench.backend.tasks` (built-in and official
tasks), :mod:`~agentenvs.colbench.backend.families` (the built-in task
families and their hidden parameters), :mod:`~agentenvs.colbench.backend.sandbox`
and :mod:`~agentenvs.colbench.backend.jail` (untrusted answers run in jailed
processes), :mod:`~agentenvs.colbench.backend.scoring` (the hidden tests'
rules) and :mod:`~agentenvs.colbench.backend.env` (the env).

May import: ``agentenvs.core`` and the shared modules of
:mod:`agentenvs.colbench` (``sources``, ``protocol``, ``collaborators``,
``dialogue``); never :mod:`agentenvs.colbench.frontend`. ``jail.py`` runs
as a script without site-packages and imports only the standard library.
"""
