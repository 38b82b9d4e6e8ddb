"""The ALFWorld expert: reads the goal and the full fact state, names the next command.

It follows the subgoal order of ALFWorld's handcoded expert (find the object,
take it, transform it at the appliance, bring it to the receptacle; for
``look_at_obj_in_light``, take it to a lamp and switch the lamp on), but
knows where everything is instead of searching. It plans from the current
state at every turn, so it recovers from any detour another policy took.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentenvs.alfworld.pddl import Formula
from agentenvs.alfworld.world import AlfredWorld

TRANSFORMS = {
    "ishot": ("heat", "microwavetype"),
    "iscool": ("cool", "fridgetype"),
    "isclean": ("clean", "sinkbasintype"),
}


@dataclass(frozen=True)
class GoalTargets:
    """What a goal asks for: object type, receptacle type, lamp type, state, count."""

    object_type: str
    receptacle_type: str | None
    lamp_type: str | None
    state: str | None  # "ishot" / "iscool" / "isclean"
    count: int


def _atoms(formula: Formula) -> list[Formula]:
    kind = formula[0]
    if kind == "atom":
        return [formula]
    if kind in ("and", "or"):
        return [atom for part in formula[1:] for atom in _atoms(part)]
    if kind in ("exists", "forall"):
        return _atoms(formula[2])
    return []


def goal_targets(goal: Formula) -> GoalTargets:
    """Read the targets out of one of ALFWorld's six goal shapes."""
    atoms = _atoms(goal)
    object_types: dict[str, str] = {}
    receptacle_type = None
    toggleable_vars = set()
    state = None
    for atom in atoms:
        predicate, args = atom[1], atom[2:]
        if predicate == "objecttype":
            object_types[args[0]] = args[1]
        elif predicate == "receptacletype" and not receptacle_type:
            receptacle_type = args[1]
        elif predicate in ("toggleable", "istoggled"):
            toggleable_vars.add(args[0])
        elif predicate in TRANSFORMS:
            state = predicate
    lamp_vars = [var for var in object_types if var in toggleable_vars]
    lamp_type = object_types[lamp_vars[0]] if lamp_vars else None
    carried = [kind for var, kind in object_types.items() if var not in toggleable_vars]
    if not carried:
        raise ValueError("the goal names no object to carry")
    if lamp_type is not None:
        receptacle_type = None
    return GoalTargets(carried[0], receptacle_type, lamp_type, state, count=len(carried))


class ExpertPlanner:
    """Next command towards the goal of ``world`` (``None`` once it holds)."""

    def __init__(self, world: AlfredWorld) -> None:
        self.world = world
        self.targets = goal_targets(world.goal)

    def next_command(self) -> str | None:
        world, targets = self.world, self.targets
        if world.goal_reached():
            return None
        held = world.held
        wanted = [o for o in sorted(world.object_type) if world.object_type[o] == targets.object_type]
        carrying = [o for o in held if o in wanted]
        if held and not carrying:
            return self._put_down(held[0])
        if targets.lamp_type is not None:
            if not carrying:
                return self._take(wanted)
            return self._switch_on_lamp()
        destination = self._destination(wanted)
        if not carrying:
            return self._take(
                [o for o in wanted if destination not in world.receptacles_of(o) or not self._ready(o)]
            )
        obj = carrying[0]
        if not self._ready(obj):
            verb, appliance_type = TRANSFORMS[targets.state]
            appliance = self._first_of_type(appliance_type)
            return self._go(appliance) or f"{verb} {world.names[obj]} with {world.names[appliance]}"
        return (
            self._go(destination)
            or self._open(destination)
            or f"move {world.names[obj]} to {world.names[destination]}"
        )

    # ----------------------------------------------------------------- pieces
    def _ready(self, obj: str) -> bool:
        return self.targets.state is None or self.world.has(self.targets.state, obj)

    def _first_of_type(self, receptacle_type: str) -> str:
        return min(r for r, kind in self.world.receptacle_type.items() if kind == receptacle_type)

    def _destination(self, wanted: list[str]) -> str:
        """The receptacle to fill: one already holding a finished target object, else the first."""
        world = self.world
        candidates = sorted(
            r for r, kind in world.receptacle_type.items() if kind == self.targets.receptacle_type
        )
        for receptacle in candidates:
            if any(o in wanted and self._ready(o) for o in world.contents(receptacle)):
                return receptacle
        return candidates[0]

    def _go(self, receptacle: str) -> str | None:
        world = self.world
        if world.location in world.receptacle_locations[receptacle]:
            return None
        return f"go to {world.names[receptacle]}"

    def _open(self, receptacle: str) -> str | None:
        world = self.world
        return None if world.is_open(receptacle) else f"open {world.names[receptacle]}"

    def _take(self, candidates: list[str]) -> str:
        world = self.world
        obj = min(candidates, key=lambda o: (not world.flag("pickupable", o), o))
        receptacle = world.receptacles_of(obj)[0]
        return (
            self._go(receptacle)
            or self._open(receptacle)
            or f"take {world.names[obj]} from {world.names[receptacle]}"
        )

    def _put_down(self, obj: str) -> str:
        world = self.world
        for command in world.admissible_commands():
            if command.startswith(f"move {world.names[obj]} to "):
                return command
        receptacle = min(
            r
            for r in world.receptacle_type
            if (world.receptacle_type[r], world.object_type.get(obj, "")) in world.can_contain
        )
        return (
            self._go(receptacle)
            or self._open(receptacle)
            or f"move {world.names[obj]} to {world.names[receptacle]}"
        )

    def _switch_on_lamp(self) -> str:
        world = self.world
        lamps = sorted(o for o, kind in world.object_type.items() if kind == self.targets.lamp_type)
        for lamp in lamps:
            for receptacle in world.receptacles_of(lamp):
                return self._go(receptacle) or f"use {world.names[lamp]}"
        raise RuntimeError("no lamp of the goal's type stands in a receptacle")


class AlfworldExpert:
    """The expert as an agent: ``act(observation, info)`` answers with a well-formed response."""

    def __init__(self, env: Any) -> None:
        self.env = env

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        command = ExpertPlanner(self.env.unwrapped.world).next_command() or "look"
        return self.env.unwrapped.protocol.format(command)
