"""TextCraft (ADaPT): craft a Minecraft item from text crafting commands.

Registers ``agentenvs/TextCraft-v0``; see :mod:`agentenvs.textcraft.env`.
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
