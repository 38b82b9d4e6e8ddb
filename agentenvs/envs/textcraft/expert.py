"""TextCraft's expert: sends the recipe planner's next command for the current inventory.

The planner (:mod:`agentenvs.envs.textcraft.planning`) lives on the world side,
since the env's progress reward and the task generator read it too; this
module only turns its plan into a response.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentenvs.envs.textcraft.planning import plan_commands

if TYPE_CHECKING:
    from agentenvs.envs.textcraft.env import TextCraftEnv


class TextCraftExpert:
    """Sends the planner's next command for the env's current inventory."""

    def __init__(self, env: TextCraftEnv) -> None:
        self.env = env

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        world = self.env.world
        commands = plan_commands(world.book, world.goal, world.inventory)
        return self.env.protocol.format(commands[0])
