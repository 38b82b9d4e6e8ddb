"""Lock: open a combination lock from higher/lower hints (the worked example of a new family).

Registers ``agentenvs/Lock-v0``; see :mod:`agentenvs.envs.lock.env`.

Lives here: ``world`` (the dials and the hidden code), ``tasks`` (the task
source), ``env`` (the env), ``expert`` (turns the first wrong dial towards
the code).

May import: ``agentenvs.core`` and this package, by the rule every
family follows (see :mod:`agentenvs.core.registration`).
"""

from agentenvs.core.registration import EnvEntry

ENVS = (
    EnvEntry(
        name="Lock",
        entry_point="agentenvs.envs.lock.env:LockEnv",
        family="Lock",
        summary="Open a three-dial combination lock from higher/lower hints",
        expert="agentenvs.envs.lock.expert:LockExpert",
        random_policy="agentenvs.agents.scripted:RandomAgent",
    ),
)
