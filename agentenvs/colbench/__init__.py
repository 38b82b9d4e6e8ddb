"""ColBench (SWEET-RL): collaborative programming with a simulated person who knows the hidden spec.

Registers ``agentenvs/ColBench-v0`` (backend programming, hidden tests run in
a sandbox; :mod:`agentenvs.colbench.env`) and ``agentenvs/ColBench-Frontend-v0``
(web pages rendered in Chromium; :mod:`agentenvs.colbench.frontend_env`, needs
the ``colbench`` extra and Debian's ``chromium``). The expert of both is
:class:`agentenvs.colbench.expert.ColBenchExpert`, named by their registry
entries (``make_expert(env)``).

The ``ENVS`` entries below name the env, its expert and its random policy
by import strings, so registering imports nothing of the family.

May import: ``agentenvs.core`` and this package; never a sibling
family, ``agentenvs.agents``/``eval``/``cli``, ``baselines`` or
``leaderboard``. The env side (env, world, tasks) never imports the expert;
the expert imports the env side.
"""

from agentenvs.core.registration import EnvEntry

FAMILY = "ColBench"
EXPERT = "agentenvs.colbench.expert:ColBenchExpert"

ENVS = (
    EnvEntry(
        name="ColBench",
        entry_point="agentenvs.colbench.env:ColBenchEnv",
        family=FAMILY,
        expert=EXPERT,
        summary="Ask a person about the hidden details of a Python function they want, then write it; "
        "hidden tests run in a sandbox (ColBench backend programming, expert: ColBenchExpert).",
    ),
    EnvEntry(
        name="ColBench-Frontend",
        entry_point="agentenvs.colbench.frontend_env:ColBenchFrontendEnv",
        family=FAMILY,
        expert=EXPERT,
        summary="Ask a person about the design of a web page they want, then write its HTML; scored by "
        "visual similarity of the Chromium renders (ColBench frontend design, expert: ColBenchExpert).",
        extra="colbench",
    ),
)
