"""The Sokoban expert: optimal moves from the breadth-first solver's table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentenvs.envs.sokoban.env import SokobanEnv


class SokobanExpert:
    """Sends the next ``max_actions_per_turn`` moves of an optimal solution.

    It replans from the env's current state every turn, so it also recovers
    after other agents' moves. Once the room is deadlocked (no solution left)
    it sends ``up``, a well-formed move, until the turn limit ends the episode.
    """

    def __init__(self, env: SokobanEnv) -> None:
        self.env = env

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        moves = self.env.solution_plan() or ["up"]
        return self.env.protocol.format(moves)
