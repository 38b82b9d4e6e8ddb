"""ColBench frontend design (``agentenvs/ColBench-Frontend-v0``): a web page the person has in mind.

Lives here: :mod:`~agentenvs.envs.colbench.frontend.tasks` (generated landing
pages with hidden design choices, and the official files),
:mod:`~agentenvs.envs.colbench.frontend.render` (Chromium renders and their
similarity) and :mod:`~agentenvs.envs.colbench.frontend.env` (the env).

May import: ``agentenvs.core``, the shared modules of :mod:`agentenvs.envs.colbench`
(``sources``, ``protocol``, ``collaborators``, ``dialogue``) and Pillow
(renders need Debian's ``chromium``, no Python package); never
:mod:`agentenvs.envs.colbench.backend`.
"""
