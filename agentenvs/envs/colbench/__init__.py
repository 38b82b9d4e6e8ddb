"""ColBench (SWEET-RL): collaborative programming with a simulated person who knows the hidden spec.

Registers ``agentenvs/ColBench-v0`` (backend programming, hidden tests run in
a sandbox; :mod:`agentenvs.envs.colbench.backend.env`) and ``agentenvs/ColBench-Frontend-v0``
(web pages rendered in Chromium; :mod:`agentenvs.envs.colbench.frontend.env`, needs
the ``colbench`` extra and Debian's ``chromium``). The expert of both is
:class:`agentenvs.envs.colbench.expert.ColBenchExpert`, named by their registry
entries (``make_expert(env)``).

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

May import: ``agentenvs.core`` and this package, by the rule every
family follows (see :mod:`agentenvs.core.registration`).
"""

from agentenvs.core.registration import EnvEntry

FAMILY = "ColBench"
EXPERT = "agentenvs.envs.colbench.expert:ColBenchExpert"

ENVS = (
    EnvEntry(
        name="ColBench",
        entry_point="agentenvs.envs.colbench.backend.env:ColBenchEnv",
        family=FAMILY,
        expert=EXPERT,
        summary="Ask a person about the hidden details of a Python function they want, then write it; "
        "hidden tests run in a sandbox (ColBench backend programming, expert: ColBenchExpert).",
    ),
    EnvEntry(
        name="ColBench-Frontend",
        entry_point="agentenvs.envs.colbench.frontend.env:ColBenchFrontendEnv",
        family=FAMILY,
        expert=EXPERT,
        summary="Ask a person about the design of a web page they want, then write its HTML; scored by "
        "visual similarity of the Chromium renders (ColBench frontend design, expert: ColBenchExpert).",
        extra="colbench",
    ),
)
