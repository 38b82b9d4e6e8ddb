"""ALFWorld games generated from the ``alfworld`` package's own data.

Every game is built from files the ``alfworld`` wheel ships (read where the
package is installed, never copied):

- ``gen/layouts/FloorPlan{N}-openable.json``: the scene's receptacles (ALFRED
  ids such as ``Cabinet|+00.68|+00.50|-02.20``) and the pose the agent takes
  to reach each one; a pose becomes a PDDL location
  ``loc_bar_{x/0.25}_bar_{z/0.25}_bar_{rotation/90}_bar_{horizon}``, so
  receptacles sharing a pose share a location, as in ALFWorld's games;
- ``gen/layouts/FloorPlan{N}-objects.json``: the object classes the scene holds;
- ``gen/constants.py``: where each class may lie (``VAL_RECEPTACLE_OBJECTS``),
  what it affords (``VAL_ACTION_OBJECTS``), which receptacles open
  (``OPENABLE_CLASS_LIST``), which task types suit which room
  (``GOALS_VALID``), the training and held-out scene numbers, and at most
  ``MAX_NUM_OF_OBJ_INSTANCES`` copies of a class;
- ``gen/goal_library.py``: each task type's PDDL goal and its two sentence
  templates (names lowercased, as ALFWorld's task sentences are);
- ``data/alfred.pddl`` and ``data/alfred.twl2``: the domain and the grammar
  written into ``game.tw-pddl`` files (:func:`game_file`).

A game: scene, task type, target classes, 1 to 3 copies (2 to 3 for
``pick_two_obj_and_place``) of each portable class the scene holds, placed in
receptacles that may hold them (target objects away from the goal's
receptacle type, so no game starts solved), lamps on furniture, the scene's
fixtures, and the agent at a spot away from every receptacle. Splits follow
ALFWorld: ``train`` from the training scenes (7-30 of each room type),
``valid`` from held-out scenes 1-3 and ``test`` from held-out scenes 4-6, so
no two splits share a scene. Sizes are ALFWorld's: 3,553 / 140 / 134 games;
game ``i`` of a split is drawn from ``derive_rng("alfworld", split, i)`` and
its id is ``{split}-{i:04d}``.

Against ALFWorld's published problems. Their facts come from the simulator's
scene state, written by ALFWorld's ``augment_pddl_states.py``; compared fact
type by fact type with that layout (``tests/envs/alfworld/test_alfworld_published.py``
writes problems in it and checks that generated games hold every fact type
they hold), generated games now also carry what the published ones have
beyond receptacles and their contents:

- objects that no receptacle holds (``objectAtLocation`` without
  ``inReceptacle``): every fixture class of the scene's object list (window,
  light switch, chair, sink, stove knob, ...; not pickupable) and, with
  probability ``LOOSE_SHARE``, each copy of a portable class beyond those the
  task needs, on the floor; some of those are copies of the goal's class,
  which no one can take (the published valid_unseen split holds such games);
- an ``objectAtLocation`` that is a spot of the object's own, next to its
  receptacle's location (probability ``OWN_SPOT_SHARE``), so locations where
  no receptacle stands, as the published problems place each object at its
  own nearest viewpoint;
- ``isCool`` on the target objects that start in a fridge, ``isOn`` on
  lamps of the goal's lamp type (half of them), ``inReceptacleObject`` for
  objects sitting in a bowl, cup, pan, ... of the same receptacle
  (probability ``IN_CONTAINER_SHARE``);
- every ALFRED class declared as an object and every object and receptacle
  type declared, whether the scene holds it or not; ``canContain`` for every
  class of the scene's object list.

What still differs: positions, poses and ids come from the layout files and
a random draw, not from the simulator's geometry; the three shares above are
this generator's choices (the published problems' rates are not known here);
fixtures are never pickupable and never sit in a receptacle (published ones
are as the simulator has them, e.g. a pickupable teddy bear on a bed);
published problems also declare objects of classes outside ALFRED's list
(faucets, shower heads) with no fact about them; and only the six task types
ALFWorld plays are generated (no movable-receptacle or sliced-object tasks,
which ALFWorld leaves out too).
"""

from __future__ import annotations

import importlib.util
import json
import runpy
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from agentenvs.core import TaskSource, UnknownTaskError, derive_rng
from agentenvs.envs.alfworld import text
from agentenvs.envs.alfworld.pddl import (
    Problem,
    format_formula,
    format_problem,
    parse_formula,
    parse_problem,
    parse_sexpr,
)
from agentenvs.envs.alfworld.world import AlfredWorld

TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
# Games per task type in ALFWorld's train split: the generator draws task types in these proportions.
TASK_TYPE_WEIGHTS = (790, 308, 650, 459, 533, 813)
SPLIT_SIZES = {"train": 3553, "valid": 140, "test": 134}
APPLIANCE = {
    "pick_clean_then_place_in_recep": ("Cleanable", "SinkBasin"),
    "pick_heat_then_place_in_recep": ("Heatable", "Microwave"),
    "pick_cool_then_place_in_recep": ("Coolable", "Fridge"),
}
LAMPS = ("DeskLamp", "FloorLamp")
LAMP_FURNITURE = (
    "Desk",
    "SideTable",
    "Dresser",
    "Shelf",
    "CoffeeTable",
    "DiningTable",
    "TVStand",
    "Sofa",
    "ArmChair",
    "Bed",
)
# The generator's own shares (the published problems' rates are not known here): a portable copy the
# task does not need lies on the floor; an object's objectAtLocation is a spot of its own rather than
# its receptacle's location; an object sits in a bowl/cup/pan/... standing in the same receptacle.
LOOSE_SHARE = 0.05
OWN_SPOT_SHARE = 0.5
IN_CONTAINER_SHARE = 0.25
ROOM_OFFSETS = {"Kitchen": 0, "LivingRoom": 200, "Bedroom": 300, "Bathroom": 400}
AGENT = "agent1"


class AlfworldDataMissing(ImportError):
    """The ``alfworld`` package (its data files) is not installed."""


def alfworld_root() -> Path:
    """Where the installed ``alfworld`` package lives (found without importing it)."""
    spec = importlib.util.find_spec("alfworld")
    if spec is None or not spec.submodule_search_locations:
        raise AlfworldDataMissing(
            "ALFWorld games are built from the alfworld package's data files: pip install "
            "'agentenvs[alfworld]'"
        )
    return Path(next(iter(spec.submodule_search_locations)))


@dataclass(frozen=True)
class AlfworldData:
    """The pieces of the ``alfworld`` package the generator reads."""

    constants: dict[str, Any]
    goals: dict[str, Any]
    domain: str
    grammar: str
    layouts: Path

    @property
    def train_scenes(self) -> list[int]:
        return list(self.constants["TRAIN_SCENE_NUMBERS"])

    @property
    def held_out_scenes(self) -> list[int]:
        return list(self.constants["TEST_SCENE_NUMBERS"])

    def room_of(self, scene: int) -> str:
        return next(room for room, numbers in self.constants["SCENE_TYPE"].items() if scene in numbers)


@cache
def load_data() -> AlfworldData:
    root = alfworld_root()
    return AlfworldData(
        constants=runpy.run_path(str(root / "gen" / "constants.py")),
        goals=runpy.run_path(str(root / "gen" / "goal_library.py"))["gdict"],
        domain=(root / "data" / "alfred.pddl").read_text(),
        grammar=(root / "data" / "alfred.twl2").read_text(),
        layouts=root / "gen" / "layouts",
    )


@dataclass(frozen=True)
class Game:
    """One ALFWorld game: its PDDL problem (as text and as read), what the task sentence says,
    and the file version whose sentences it plays with (generated games: 2.1.2)."""

    name: str  # ALFRED's naming: {task_type}-{Object}-None-{Receptacle}-{scene}
    task_type: str
    goal_text: str
    problem_text: str
    problem: Problem = field(compare=False, repr=False)
    version: text.FileVersion = text.PATCHED_2_1_2

    @classmethod
    def from_text(
        cls,
        name: str,
        task_type: str,
        goal_text: str,
        problem_text: str,
        version: text.FileVersion = text.PATCHED_2_1_2,
    ) -> Game:
        return cls(name, task_type, goal_text, problem_text, parse_problem(problem_text), version)


def _alfred_number(value: float) -> str:
    return f"{value:+06.2f}"


def _location(pose: list[float]) -> str:
    x, z, rotation, horizon = pose
    parts = [round(x / 0.25), round(z / 0.25), round(rotation / 90) % 4, int(horizon)]
    return text.mangle("loc|" + "|".join(str(p) for p in parts))


def _receptacle_class(alfred_id: str) -> str:
    parts = alfred_id.split("|")
    return parts[-1] if len(parts) == 5 else parts[0]


@dataclass(frozen=True)
class _Scene:
    number: int
    room: str
    receptacles: dict[str, str]  # alfred id -> class
    poses: dict[str, list[float]]
    portable: list[str]  # classes the agent can carry, that some receptacle here may hold
    lamps: list[str]
    fixtures: list[str]  # ALFRED classes here that no receptacle holds (windows, light switches, chairs, ...)
    classes: list[str]  # every ALFRED class the scene holds


@cache
def _scene(number: int) -> _Scene:
    data = load_data()
    openable = json.loads((data.layouts / f"FloorPlan{number}-openable.json").read_text())
    classes = set(json.loads((data.layouts / f"FloorPlan{number}-objects.json").read_text()))
    classes &= set(data.constants["OBJECTS"])
    holds = data.constants["VAL_RECEPTACLE_OBJECTS"]
    movable = data.constants["MOVABLE_RECEPTACLES"]
    receptacles = {rid: _receptacle_class(rid) for rid in sorted(openable)}
    receptacles = {rid: cls for rid, cls in receptacles.items() if cls in holds}
    present = set(receptacles.values())
    portable = sorted(
        cls for cls in classes if cls not in holds or cls in movable if any(cls in holds[r] for r in present)
    )
    lamps = sorted(cls for cls in classes if cls in LAMPS)
    fixtures = sorted(
        cls
        for cls in classes
        if (cls not in holds or cls in movable) and cls not in portable and cls not in lamps
    )
    return _Scene(
        number,
        data.room_of(number),
        receptacles,
        {r: openable[r] for r in receptacles},
        portable,
        lamps,
        fixtures,
        sorted(classes),
    )


def _targets(data: AlfworldData, scene: _Scene, task_type: str) -> list[tuple[str, str]]:
    """Every (object class, receptacle-or-lamp class) this scene supports for ``task_type``."""
    holds = data.constants["VAL_RECEPTACLE_OBJECTS"]
    present = sorted(set(scene.receptacles.values()))
    if task_type == "look_at_obj_in_light":
        return [(obj, lamp) for obj in scene.portable for lamp in scene.lamps]
    pairs = [
        (obj, recep)
        for obj in scene.portable
        for recep in present
        if obj in holds[recep] and any(obj in holds[other] for other in present if other != recep)
    ]
    if task_type in APPLIANCE:
        ability, appliance = APPLIANCE[task_type]
        if appliance not in present:
            return []
        able = data.constants["VAL_ACTION_OBJECTS"][ability]
        pairs = [(obj, recep) for obj, recep in pairs if obj in able and recep != appliance]
    return pairs


@lru_cache(maxsize=256)
def generate_game(split: str, index: int) -> Game:
    """Game ``index`` of ``split`` (deterministic, see the module docstring)."""
    data = load_data()
    rng = derive_rng("alfworld", split, index)
    weights = np.array(TASK_TYPE_WEIGHTS, dtype=float)
    task_type = TASK_TYPES[int(rng.choice(len(TASK_TYPES), p=weights / weights.sum()))]
    scenes = [
        number
        for number in _split_scenes(data, split)
        if data.room_of(number) in data.constants["GOALS_VALID"][task_type]
    ]
    if not any(_targets(data, _scene(number), task_type) for number in scenes):
        raise RuntimeError(f"no {split} scene supports {task_type}")
    while True:
        scene = _scene(int(rng.choice(scenes)))
        targets = _targets(data, scene, task_type)
        if targets:
            break
    obj_class, recep_class = targets[int(rng.integers(len(targets)))]
    return _build(data, scene, task_type, obj_class, recep_class, rng)


def _split_scenes(data: AlfworldData, split: str) -> list[int]:
    if split == "train":
        return data.train_scenes
    first, last = (1, 3) if split == "valid" else (4, 6)
    return [n for n in data.held_out_scenes if first <= n - ROOM_OFFSETS[data.room_of(n)] <= last]


@dataclass(frozen=True)
class _Placed:
    """One object of a generated game: where it lies and what it is."""

    alfred_id: str
    cls: str
    receptacle: str | None  # None: no receptacle holds it (a fixture, or a thing on the floor)
    location: str  # its objectAtLocation


def _build(
    data: AlfworldData,
    scene: _Scene,
    task_type: str,
    obj_class: str,
    recep_class: str,
    rng: np.random.Generator,
) -> Game:
    constants = data.constants
    holds = constants["VAL_RECEPTACLE_OBJECTS"]
    actions = constants["VAL_ACTION_OBJECTS"]
    movable = constants["MOVABLE_RECEPTACLES"]
    receptacle_ids = sorted(scene.receptacles)
    maximum = int(constants["MAX_NUM_OF_OBJ_INSTANCES"])
    locations = {r: _location(scene.poses[r]) for r in receptacle_ids}

    placed: list[_Placed] = []
    used_ids: set[str] = set()

    def spot_near(receptacle: str) -> str:
        """The receptacle's location, or a spot of the object's own next to it."""
        if rng.random() >= OWN_SPOT_SHARE:
            return locations[receptacle]
        x, z, rotation, horizon = scene.poses[receptacle]
        step = [(0.25, 0.0), (-0.25, 0.0), (0.0, 0.25), (0.0, -0.25)][int(rng.integers(4))]
        return _location([x + step[0], z + step[1], rotation, horizon])

    def place(cls: str, where: list[str], in_receptacle: bool = True) -> None:
        receptacle = where[int(rng.integers(len(where)))]
        x, y, z = (float(v) for v in receptacle.split("|")[1:4])
        while True:
            oid = "|".join([cls] + [_alfred_number(v + float(rng.uniform(-0.3, 0.3))) for v in (x, y, z)])
            if oid not in used_ids:
                break
        used_ids.add(oid)
        placed.append(_Placed(oid, cls, receptacle if in_receptacle else None, spot_near(receptacle)))

    for cls in scene.portable:
        where = [r for r in receptacle_ids if cls in holds[scene.receptacles[r]]]
        needed = 0
        if cls == obj_class:
            needed = 2 if task_type == "pick_two_obj_and_place" else 1
            if task_type != "look_at_obj_in_light":
                # Target objects start away from the goal's receptacles, so no game starts solved.
                where = [r for r in where if scene.receptacles[r] != recep_class]
        for copy in range(int(rng.integers(max(needed, 1), maximum + 1))):
            # Beyond the copies the task needs, a copy may lie on the floor, out of reach.
            on_floor = copy >= needed and rng.random() < LOOSE_SHARE
            place(cls, receptacle_ids if on_floor else where, in_receptacle=not on_floor)
    for cls in scene.fixtures:
        place(cls, receptacle_ids, in_receptacle=False)
    furniture = [r for r in receptacle_ids if scene.receptacles[r] in LAMP_FURNITURE] or [
        r for r in receptacle_ids if scene.receptacles[r] not in constants["OPENABLE_CLASS_LIST"]
    ]
    for lamp in scene.lamps:
        place(lamp, furniture)
    placed.sort(key=lambda p: p.alfred_id)

    start = _start_location(scene, set(locations.values()), rng)
    objects: list[tuple[str, str]] = [(AGENT, "agent")]
    init: list[tuple[str, ...]] = [("atLocation", AGENT, start)]
    # Like ALFWorld's problems, declare every ALFRED class as an object and every type, present or not.
    static_receptacle_classes = set(constants["RECEPTACLES"]) - set(movable)
    object_classes = sorted((set(constants["OBJECTS"]) | set(movable)) - static_receptacle_classes)
    objects += [(cls, "object") for cls in object_classes]
    objects += [(f"{cls}Type", "otype") for cls in object_classes]
    objects += [(f"{cls}Type", "rtype") for cls in sorted(static_receptacle_classes)]
    for rid in receptacle_ids:
        name, cls = text.mangle(rid), scene.receptacles[rid]
        objects.append((name, "receptacle"))
        init += [("receptacleType", name, f"{cls}Type"), ("receptacleAtLocation", name, locations[rid])]
        if cls in constants["OPENABLE_CLASS_LIST"]:
            init.append(("openable", name))
    lamp_on = {p.alfred_id: bool(rng.random() < 0.5) for p in placed if p.cls == recep_class}
    for item in placed:
        name, cls = text.mangle(item.alfred_id), item.cls
        objects.append((name, "object"))
        init += [("objectType", name, f"{cls}Type"), ("objectAtLocation", name, item.location)]
        if item.receptacle is not None:
            init.append(("inReceptacle", name, text.mangle(item.receptacle)))
        if cls in LAMPS:
            init.append(("toggleable", name))
            if lamp_on.get(item.alfred_id):
                init.append(("isOn", name))
        elif cls in scene.portable:
            init.append(("pickupable", name))
        for ability, predicate in (
            ("Heatable", "heatable"),
            ("Coolable", "coolable"),
            ("Cleanable", "cleanable"),
            ("Sliceable", "sliceable"),
        ):
            if cls in actions[ability]:
                init.append((predicate, name))
        if cls in movable:
            init.append(("isReceptacleObject", name))
        if (
            cls == obj_class
            and item.receptacle is not None
            and scene.receptacles[item.receptacle] == "Fridge"
        ):
            # ALFWorld's problems mark the target objects that start in a fridge as cool.
            init.append(("isCool", name))
    init += _receptacle_object_contents(placed, holds, movable, rng)
    rtypes = sorted(set(scene.receptacles.values()))
    contained = [cls for cls in scene.classes if cls in object_classes]
    for rtype in rtypes:
        init += [("canContain", f"{rtype}Type", f"{cls}Type") for cls in contained if cls in holds[rtype]]
    for location in sorted({p.location for p in placed} | set(locations.values()) | {start}):
        objects.append((location, "location"))

    goal_entry = data.goals[task_type]
    fill = {"obj": obj_class, "recep": recep_class, "toggle": recep_class}
    goal_pddl = goal_entry["pddl"].replace("#", "-").format(**fill)
    goal_pddl = goal_pddl[: goal_pddl.rstrip().rfind(")")]  # the library closes the (define ...) too
    goal_formula = parse_formula(parse_sexpr(goal_pddl)[0][1])
    templates = goal_entry["templates"]
    template = templates[int(rng.integers(len(templates)))]
    goal_text = template.format(**{k: v.lower() for k, v in fill.items()})
    name = f"{task_type}-{obj_class}-None-{recep_class}-{scene.number}"
    problem_name = name.lower().replace("-", "_")
    problem_text = format_problem(problem_name, objects, init, f"(:goal {format_formula(goal_formula)})")
    # The same problem as parse_problem(problem_text) reads it (names lowercased), without the parse.
    problem = Problem(
        name=problem_name,
        objects={obj.lower(): kind for obj, kind in objects},
        init=tuple(tuple(part.lower() for part in fact) for fact in init),
        goal=parse_formula(parse_sexpr(format_formula(goal_formula))[0]),
    )
    if AlfredWorld(problem, goal_text).goal_reached():
        raise AssertionError(f"generated game {name} starts solved")
    return Game(name, task_type, goal_text, problem_text, problem)


def _receptacle_object_contents(
    placed: list[_Placed], holds: dict[str, Any], movable: list[str], rng: np.random.Generator
) -> list[tuple[str, ...]]:
    """``inReceptacleObject`` facts: some objects sit in a bowl, cup, pan, ... standing in their
    receptacle."""
    containers = [p for p in placed if p.cls in movable and p.receptacle is not None]
    facts = []
    for item in placed:
        if item.receptacle is None or item.cls in movable or item.cls in LAMPS:
            continue
        around = [c for c in containers if c.receptacle == item.receptacle and item.cls in holds[c.cls]]
        if around and rng.random() < IN_CONTAINER_SHARE:
            container = around[int(rng.integers(len(around)))]
            facts.append(
                ("inReceptacleObject", text.mangle(item.alfred_id), text.mangle(container.alfred_id))
            )
    return facts


def _start_location(scene: _Scene, taken: set[str], rng: np.random.Generator) -> str:
    xs = [pose[0] for pose in scene.poses.values()]
    zs = [pose[1] for pose in scene.poses.values()]
    while True:
        pose = [
            float(rng.uniform(min(xs), max(xs))),
            float(rng.uniform(min(zs), max(zs))),
            90.0 * int(rng.integers(4)),
            30,
        ]
        location = _location(pose)
        if location not in taken:
            return location


def game_file(game: Game) -> dict[str, Any]:
    """The game in ALFWorld's ``game.tw-pddl`` format (JSON object), with the package's 2.1.2
    domain and grammar."""
    data = load_data()
    return {
        "pddl_domain": data.domain,
        "grammar": data.grammar.replace("UNKNOWN GOAL", game.goal_text),
        "pddl_problem": game.problem_text,
        "solvable": True,
    }


class GeneratedGames(TaskSource[Game]):
    """The built-in task source: generated games, ids ``{split}-{index:04d}``."""

    def __init__(self, sizes: dict[str, int] | None = None) -> None:
        self.sizes = dict(SPLIT_SIZES if sizes is None else sizes)
        load_data()  # fail at construction, with the install hint, when the data is missing

    def size(self, split: str) -> int:
        self.check_split(split)
        return self.sizes[split]

    def task_id(self, split: str, index: int) -> str:
        if not 0 <= index < self.size(split):
            raise IndexError(f"{split} holds {self.size(split)} games, no index {index}")
        return f"{split}-{index:04d}"

    def load(self, task_id: str) -> Game:
        split, _, number = task_id.partition("-")
        if (
            split not in self.sizes
            or not number.isdigit()
            or not 0 <= int(number) < self.sizes[split]
            or task_id != self.task_id(split, int(number))
        ):
            raise UnknownTaskError(f"unknown ALFWorld task id {task_id!r}")
        return generate_game(split, int(number))
