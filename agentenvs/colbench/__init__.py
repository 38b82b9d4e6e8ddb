"""ColBench (SWEET-RL): collaborative programming with a simulated person who knows the hidden spec.

Registers ``agentenvs/ColBench-v0`` (backend programming, hidden tests run in
a sandbox; :mod:`agentenvs.colbench.env`) and ``agentenvs/ColBench-Frontend-v0``
(web pages rendered in Chromium; :mod:`agentenvs.colbench.frontend_env`, needs
the ``colbench`` extra and Debian's ``chromium``). The expert of both is
:class:`agentenvs.colbench.expert.ColBenchExpert`, named by their registry
entries (``make_expert(env)``).

May import: ``agentenvs.core`` and this package, by the rule every
family follows (see :mod:`agentenvs.core.registration`).
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
