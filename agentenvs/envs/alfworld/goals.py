"""What an ALFWorld goal asks for: the object, receptacle and lamp types, the state, the count.

World-side logic: the env's progress potential measures a state against these
targets, and the expert (:mod:`agentenvs.envs.alfworld.expert`) plans towards them.

May import: :mod:`agentenvs.envs.alfworld.pddl` (never the env or the expert).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentenvs.envs.alfworld.pddl import Formula

# goal predicate -> (the command that brings it about, the appliance type it needs)
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
