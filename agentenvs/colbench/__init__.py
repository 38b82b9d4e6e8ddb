"""ColBench (SWEET-RL): collaborative programming with a simulated person who knows the hidden spec.

Registers ``agentenvs/ColBench-v0`` (backend programming, hidden tests run in
a sandbox; :mod:`agentenvs.colbench.backend.env`) and ``agentenvs/ColBench-Frontend-v0``
(web pages rendered in Chromium; :mod:`agentenvs.colbench.frontend.env`, needs
the ``colbench`` extra and Debian's ``chromium``). The expert is
:class:`agentenvs.colbench.expert.ColBenchExpert` (``env.unwrapped.expert()``).

Layout, each part importing only from the parts above it (and ``agentenvs.core``):

==========================  ===================================================
``sources``                 what both task kinds share: hidden facts, the split
                            draw, built-in ids, the official files' layout
``protocol``,               the answer marker and its parsing; the simulated
``collaborators``,          person; the dialogue loop both envs run; the
``dialogue``, ``expert``    expert and the answer-at-once baseline
``backend/``                Python functions: tasks, families, the sandbox and
                            its jail, scoring, the env (``ColBench-v0``)
``frontend/``               web pages: tasks, Chromium rendering, the env
                            (``ColBench-Frontend-v0``)
==========================  ===================================================

``backend`` never imports ``frontend`` and ``frontend`` never imports
``backend``; nothing above them imports either.
"""

from agentenvs.core.registration import EnvEntry

ENVS = (
    EnvEntry(
        name="ColBench",
        entry_point="agentenvs.colbench.backend.env:ColBenchEnv",
        summary="Ask a person about the hidden details of a Python function they want, then write it; "
        "hidden tests run in a sandbox (ColBench backend programming, expert: ColBenchExpert).",
    ),
    EnvEntry(
        name="ColBench-Frontend",
        entry_point="agentenvs.colbench.frontend.env:ColBenchFrontendEnv",
        summary="Ask a person about the design of a web page they want, then write its HTML; scored by "
        "visual similarity of the Chromium renders (ColBench frontend design, expert: ColBenchExpert).",
        extra="colbench",
    ),
)
