"""TextCraft (ADaPT): craft a Minecraft item from text crafting commands.

Registers ``agentenvs/TextCraft-v0``; see :mod:`agentenvs.envs.textcraft.env`.

Lives here: ``env`` (the env), ``world`` (inventory and commands),
``recipes`` (the recipe book), ``planning`` (the recipe planner: the env's
progress reward and the task generator read it), ``tasks`` (the task source),
``expert`` (the planner's next command as an agent).

May import: ``agentenvs.core`` and this package, by the rule every
family follows (see :mod:`agentenvs.core.registration`).
"""

from agentenvs.core.registration import EnvEntry

FAMILY = "TextCraft"
EXPERT = "agentenvs.envs.textcraft.expert:TextCraftExpert"

ENVS = (
    EnvEntry(
        name="TextCraft",
        entry_point="agentenvs.envs.textcraft.env:TextCraftEnv",
        family=FAMILY,
        expert=EXPERT,
        summary="Craft a Minecraft item from the listed crafting commands (ADaPT's TextCraft)",
        extra="textcraft",
    ),
)
