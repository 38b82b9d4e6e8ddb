"""The reference engine: a ``game.tw-pddl`` file played in TextWorld, as ALFWorld plays it.

Used by the differential tests and the benchmark only. It needs the
``alfworld`` package with its TextWorld + Fast Downward dependencies
(``pip install alfworld==0.4.2``; see ``scripts/install_alfworld_reference.sh``).
The wrappers are ALFWorld's own (``AlfredDemangler`` names the entities,
``AlfredInfos`` records the game file), so names and texts are what ALFWorld
agents see.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any


def reference_available() -> bool:
    """Whether TextWorld, Fast Downward and ALFWorld's wrappers can be imported."""
    return all(
        importlib.util.find_spec(name) is not None for name in ("textworld", "fast_downward", "alfworld")
    )


@dataclass
class ReferenceTurn:
    observation: str
    admissible: list[str]
    score: float
    won: bool


class ReferenceGame:
    """One game file loaded in TextWorld's PDDL engine with ALFWorld's wrappers."""

    def __init__(self, game_path: str) -> None:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

        infos = textworld.EnvInfos(won=True, admissible_commands=True, score=True, extras=["gamefile"])
        self.env = textworld.start(
            game_path, request_infos=infos, wrappers=[AlfredDemangler(shuffle=False), AlfredInfos()]
        )

    def reset(self) -> ReferenceTurn:
        return self._turn(self.env.reset(), 0.0)

    def step(self, command: str) -> ReferenceTurn:
        state, score, _done = self.env.step(command)
        return self._turn(state, score)

    @staticmethod
    def _turn(state: Any, score: float) -> ReferenceTurn:
        return ReferenceTurn(
            state.feedback, list(state["admissible_commands"]), float(score), bool(state["won"])
        )

    def close(self) -> None:
        self.env.close()
