"""ALFWorld: household tasks in text (ALFWorld's games on a native engine).

Registers ``agentenvs/ALFWorld-v0``; the env needs the ``alfworld`` extra
(its data files: floor plans, object tables, goal library, PDDL domain).
"""

from agentenvs.core.registration import EnvEntry

FAMILY = "ALFWorld"
EXPERT = "agentenvs.alfworld.expert:AlfworldExpert"

ENVS = (
    EnvEntry(
        name="ALFWorld",
        entry_point="agentenvs.alfworld.env:ALFWorldEnv",
        family=FAMILY,
        expert=EXPERT,
        summary="ALFWorld household tasks (6 task types) on a native engine identical to TextWorld's",
        extra="alfworld",
    ),
)
