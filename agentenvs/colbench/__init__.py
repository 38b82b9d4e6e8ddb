"""ColBench (SWEET-RL): collaborative programming with a simulated person who knows the hidden spec.

Registers ``agentenvs/ColBench-v0`` (backend programming, hidden tests run in
a sandbox); see :mod:`agentenvs.colbench.env`. The expert is
:class:`agentenvs.colbench.expert.ColBenchExpert` (``env.unwrapped.expert()``).
"""

from agentenvs.core.registration import EnvEntry

ENVS = (
    EnvEntry(
        name="ColBench",
        entry_point="agentenvs.colbench.env:ColBenchEnv",
        summary="Ask a person about the hidden details of a Python function they want, then write it; "
        "hidden tests run in a sandbox (ColBench backend programming, expert: ColBenchExpert).",
    ),
)
