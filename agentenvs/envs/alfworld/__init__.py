"""ALFWorld: household tasks in text (ALFWorld's games on a native engine).

Registers ``agentenvs/ALFWorld-v0``; the env needs the ``alfworld`` extra
(its data files: floor plans, object tables, goal library, PDDL domain).

Lives here: ``env`` (the env), ``world`` (facts and the domain's actions),
``pddl`` (problem files), ``goals`` (what a goal asks for: read by the env's
progress reward and by the expert), ``text`` (what ALFWorld says),
``tasks`` and ``official`` (task sources), ``reference`` (TextWorld as
the differential tests' reference), ``expert`` (the planner as an agent).

May import: ``agentenvs.core`` and this package, by the rule every
family follows (see :mod:`agentenvs.core.registration`).
"""

from agentenvs.core.registration import EnvEntry

FAMILY = "ALFWorld"
EXPERT = "agentenvs.envs.alfworld.expert:AlfworldExpert"

ENVS = (
    EnvEntry(
        name="ALFWorld",
        entry_point="agentenvs.envs.alfworld.env:ALFWorldEnv",
        family=FAMILY,
        expert=EXPERT,
        summary="ALFWorld household tasks (6 task types) on a native engine identical to TextWorld's",
        extra="alfworld",
    ),
)
