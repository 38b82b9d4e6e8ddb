"""The ALFWorld expert: reads the goal and the full fact state, names the next command.

It follows the subgoal order of ALFWorld's handcoded expert (find the object,
take it, transform it at the appliance, bring it to the receptacle; for
``look_at_obj_in_light``, take it to a lamp and switch the lamp on), but
knows where everything is instead of searching. It plans from the current
state at every turn, so it recovers from any detour another policy took.

It plans only with objects it can reach: an object is taken from a
receptacle that stands at some location, and a lamp is used in such a
receptacle. Objects that lie at a location in no receptacle (fixtures and
things on the floor of ALFWorld's published games) can be neither taken nor
used, so the expert never picks them. When nothing reachable leads to the
goal it answers ``look`` rather than failing.
"""

from __future__ import annotations

from typing import Any

from agentenvs.envs.alfworld.goals import TRANSFORMS, goal_targets
from agentenvs.envs.alfworld.world import AlfredWorld

STUCK = "look"  # the answer when nothing reachable leads to the goal


class ExpertPlanner:
    """Next command towards the goal of ``world`` (``None`` once it holds)."""

    def __init__(self, world: AlfredWorld) -> None:
        self.world = world
        self.targets = goal_targets(world.goal)

    def next_command(self) -> str | None:
        if self.world.goal_reached():
            return None
        return self._plan() or STUCK

    def _plan(self) -> str | None:
        world, targets = self.world, self.targets
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
        if destination is None:
            return None
        if not carrying:
            return self._take(
                [o for o in wanted if destination not in world.receptacles_of(o) or not self._ready(o)]
            )
        obj = carrying[0]
        if not self._ready(obj):
            verb, appliance_type = TRANSFORMS[targets.state]
            appliance = self._first_of_type(appliance_type)
            if appliance is None:
                return None
            return self._go(appliance) or f"{verb} {world.names[obj]} with {world.names[appliance]}"
        return self._go(destination) or self._open(destination) or world.put_command(obj, destination)

    # ----------------------------------------------------------------- pieces
    def _ready(self, obj: str) -> bool:
        return self.targets.state is None or self.world.has(self.targets.state, obj)

    def _reachable_receptacles(self, obj: str) -> list[str]:
        """The receptacles holding ``obj`` that stand somewhere the agent can go."""
        world = self.world
        return [r for r in world.receptacles_of(obj) if world.receptacle_locations.get(r)]

    def _first_of_type(self, receptacle_type: str) -> str | None:
        world = self.world
        return min(
            (
                r
                for r, kind in world.receptacle_type.items()
                if kind == receptacle_type and r in world.receptacle_locations
            ),
            default=None,
        )

    def _destination(self, wanted: list[str]) -> str | None:
        """The receptacle to fill: one already holding a finished target object, else the first."""
        world = self.world
        candidates = sorted(
            r
            for r, kind in world.receptacle_type.items()
            if kind == self.targets.receptacle_type and r in world.receptacle_locations
        )
        for receptacle in candidates:
            if any(o in wanted and self._ready(o) for o in world.contents(receptacle)):
                return receptacle
        return candidates[0] if candidates else None

    def _go(self, receptacle: str) -> str | None:
        world = self.world
        if world.location in world.receptacle_locations[receptacle]:
            return None
        return f"go to {world.names[receptacle]}"

    def _open(self, receptacle: str) -> str | None:
        world = self.world
        return None if world.is_open(receptacle) else f"open {world.names[receptacle]}"

    def _take(self, candidates: list[str]) -> str | None:
        """Go for the first candidate that can be taken: pickupable, in a receptacle the agent can reach."""
        world = self.world
        reachable = [o for o in candidates if world.flag("pickupable", o) and self._reachable_receptacles(o)]
        if not reachable:
            return None
        obj = min(reachable)
        receptacle = self._reachable_receptacles(obj)[0]
        return (
            self._go(receptacle)
            or self._open(receptacle)
            or f"take {world.names[obj]} from {world.names[receptacle]}"
        )

    def _put_down(self, obj: str) -> str | None:
        world = self.world
        placing = sorted(c.text for c in world.commands().values() if c.verb == "move" and c.args[0] == obj)
        if placing:
            return placing[0]
        receptacle = min(
            (
                r
                for r in world.receptacle_locations
                if (world.receptacle_type.get(r), world.object_type.get(obj, "")) in world.can_contain
            ),
            default=None,
        )
        if receptacle is None:
            return None
        return self._go(receptacle) or self._open(receptacle) or world.put_command(obj, receptacle)

    def _switch_on_lamp(self) -> str | None:
        world = self.world
        lamps = sorted(o for o, kind in world.object_type.items() if kind == self.targets.lamp_type)
        for lamp in lamps:
            if world.flag("toggleable", lamp):
                for receptacle in self._reachable_receptacles(lamp):
                    return self._go(receptacle) or f"use {world.names[lamp]}"
        return None


class AlfworldExpert:
    """The expert as an agent: ``act(observation, info)`` answers with a well-formed response."""

    def __init__(self, env: Any) -> None:
        self.env = env

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        command = ExpertPlanner(self.env.unwrapped.world).next_command() or "look"
        return self.env.unwrapped.protocol.format(command)
