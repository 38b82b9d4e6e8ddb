"""TextCraft (ADaPT): craft a Minecraft item from text crafting commands.

Registers ``agentenvs/TextCraft-v0``; see :mod:`agentenvs.textcraft.env`.

Lives here: ``env`` (the env), ``world`` (inventory and commands),
``recipes`` (the recipe book), ``planning`` (the recipe planner: the env's
progress reward and the task generator read it), ``tasks`` (the task source),
``expert`` (the planner's next command as an agent).

The ``ENVS`` entries below name the env, its expert and its random policy
by import strings, so registering imports nothing of the family.

May import: ``agentenvs.core`` and this package; never a sibling
family, ``agentenvs.agents``/``eval``/``cli``, ``baselines`` or
``leaderboard``. The env side (env, world, tasks) never imports the expert;
the expert imports the env side.
"""

from agentenvs.core.registration import EnvEntry

FAMILY = "TextCraft"
EXPERT = "agentenvs.textcraft.expert:TextCraftExpert"

ENVS = (
    EnvEntry(
        name="TextCraft",
        entry_point="agentenvs.textcraft.env:TextCraftEnv",
        family=FAMILY,
        expert=EXPERT,
        summary="Craft a Minecraft item from the listed crafting commands (ADaPT's TextCraft)",
        extra="textcraft",
    ),
)
