"""BabyAI tasks: which minigrid level, generated from which seed, in which split.

A task is a (level, seed) pair; its id is ``"{level}/{seed}"`` (e.g.
``"GoToLocal/17"``). minigrid generates the world from the seed, so the id
names the world exactly, on any machine.

Splits are disjoint seed ranges, the same for every level:

=======  ========================  ===================
split    seeds                     tasks per level
=======  ========================  ===================
train    0 .. 999,999              1,000,000
valid    1,000,000 .. 1,009,999    10,000
test     1,010,000 .. 1,019,999    10,000
=======  ========================  ===================

Split membership is by seed, not by layout: two seeds of a small level (e.g.
``GoToRedBallNoDists``, one ball in an empty room) can draw the same world, so
a train and a test task may coincide there. The levels of the default mix
place 4 to 10 objects in a room, where that chance is negligible.

A split of a task source over levels ``L0..Lk-1`` interleaves them: index
``i`` is level ``L[i % k]`` with the ``i // k``-th seed of the split's range,
so ``reset(seed=0..k-1)`` visits every level once.

Default mix: the five BALROG BabyAI tasks. BALROG draws them from BabyAI-Text's
``MixedTrainLocal`` level (one 8x8 room, or two rooms for ``open``), which is
not part of minigrid; each task maps to the minigrid level that poses the same
mission in a local setting, and the BabyAI bot solves all of them:

=================  =====================  =====================================
BALROG task        level                  mission
=================  =====================  =====================================
goto               GoToLocal              go to the red ball
pickup             PickupLoc              pick up the blue key (on your left)
open               UnlockLocalDist        open the door (locked; key in room)
putnext            PutNextLocal           put the red ball next to the grey box
pick_up_seq_go_to  PickUpSeqGoToLocal     pick up the red ball, then go to the
                                          blue box (or "go to B after you pick
                                          up A")
=================  =====================  =====================================

``PickUpSeqGoToLocal`` is the one level agentenvs adds: minigrid has no
single-room "pick up A then go to B" level, so :class:`PickUpSeqGoToLocal`
poses BALROG's mission with minigrid's own room generator, objects and
verifier instructions (``PickupInstr``, ``GoToInstr``, ``BeforeInstr``,
``AfterInstr``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import gymnasium as gym
from minigrid.envs.babyai.core.roomgrid_level import RejectSampling, RoomGridLevel
from minigrid.envs.babyai.core.verifier import AfterInstr, BeforeInstr, GoToInstr, ObjDesc, PickupInstr

from agentenvs.core.tasks import TaskSource, UnknownTaskError
from agentenvs.envs.babyai import LEVELS, MINIGRID_LEVEL_IDS, level_name

SPLIT_SEEDS: Mapping[str, range] = MappingProxyType(
    {
        "train": range(1_000_000),
        "valid": range(1_000_000, 1_010_000),
        "test": range(1_010_000, 1_020_000),
    }
)

DEFAULT_MIX: Mapping[str, str] = MappingProxyType(
    {
        "goto": "GoToLocal",
        "pickup": "PickupLoc",
        "open": "UnlockLocalDist",
        "putnext": "PutNextLocal",
        "pick_up_seq_go_to": "PickUpSeqGoToLocal",
    }
)

# minigrid.utils.baby_ai_bot.BabyAIBot documents that it cannot solve these.
BOT_FAILING_LEVELS: frozenset[str] = frozenset(
    {"PutNextS5N2Carrying", "PutNextS6N3Carrying", "PutNextS7N4Carrying", "KeyInBox"}
)

_MINIGRID_IDS: Mapping[str, str] = MappingProxyType({level_name(i): i for i in MINIGRID_LEVEL_IDS})


class PickUpSeqGoToLocal(RoomGridLevel):
    """One room with ``num_dists`` objects: pick up one, then go to another.

    The mission reads "pick up A, then go to B" or "go to B after you pick up
    A", each with probability 1/2. B never looks like A: minigrid's go-to
    clause keeps the start positions of the objects it names, so "go to a
    purple ball after you pick up a purple ball" would succeed on the pick up.
    """

    def __init__(self, room_size: int = 8, num_dists: int = 10, **kwargs) -> None:
        self.num_dists = num_dists
        super().__init__(num_rows=1, num_cols=1, room_size=room_size, **kwargs)

    def gen_mission(self) -> None:
        self.place_agent()
        objs = self.add_distractors(num_distractors=self.num_dists, all_unique=False)
        self.check_objs_reachable()
        carried, goal = self._rand_elem(objs), self._rand_elem(objs)
        if (carried.type, carried.color) == (goal.type, goal.color):
            raise RejectSampling("the go-to object looks like the carried object")
        pick_up = PickupInstr(ObjDesc(carried.type, carried.color))
        go_to = GoToInstr(ObjDesc(goal.type, goal.color))
        self.instrs = BeforeInstr(pick_up, go_to) if self._rand_bool() else AfterInstr(go_to, pick_up)


_EXTRA_LEVEL_CLASSES: Mapping[str, type[RoomGridLevel]] = MappingProxyType(
    {"PickUpSeqGoToLocal": PickUpSeqGoToLocal}
)


def resolve_level(name: str) -> str:
    """Canonical level name from ``"GoToLocal"`` or ``"BabyAI-GoToLocal-v0"``."""
    level = level_name(name)
    if level not in LEVELS:
        raise ValueError(f"unknown BabyAI level {name!r}; known levels: {', '.join(LEVELS)}")
    return level


def make_level(level: str, max_steps: int | None = None) -> RoomGridLevel:
    """A fresh minigrid level instance (unwrapped); ``max_steps`` None keeps the level's own."""
    kwargs = {} if max_steps is None else {"max_steps": int(max_steps)}
    if level in _EXTRA_LEVEL_CLASSES:
        return _EXTRA_LEVEL_CLASSES[level](**kwargs)
    return gym.make(_MINIGRID_IDS[level], disable_env_checker=True, **kwargs).unwrapped


@dataclass(frozen=True)
class BabyAITask:
    """One world: minigrid generates ``level`` from ``seed``."""

    level: str
    seed: int

    @property
    def task_id(self) -> str:
        return f"{self.level}/{self.seed}"


def parse_task_id(task_id: str) -> BabyAITask:
    """``"GoToLocal/17"`` -> ``BabyAITask("GoToLocal", 17)``; raises :class:`UnknownTaskError`."""
    level, _, seed = str(task_id).partition("/")
    if level not in LEVELS or not seed.isdigit():
        raise UnknownTaskError(f"unknown task id {task_id!r}; expected '<Level>/<seed>', e.g. 'GoToLocal/17'")
    return BabyAITask(level, int(seed))


class BabyAITaskSource(TaskSource[BabyAITask]):
    """Seeded tasks over ``levels``, interleaved; see the module docstring for the splits."""

    def __init__(self, levels: Sequence[str]) -> None:
        if not levels:
            raise ValueError("a BabyAI task source needs at least one level")
        self.levels = tuple(resolve_level(level) for level in levels)

    def size(self, split: str) -> int:
        self.check_split(split)
        return len(self.levels) * len(SPLIT_SEEDS[split])

    def task_id(self, split: str, index: int) -> str:
        if not 0 <= index < self.size(split):
            raise IndexError(f"task index {index} out of range for split {split!r}")
        level = self.levels[index % len(self.levels)]
        return BabyAITask(level, SPLIT_SEEDS[split][index // len(self.levels)]).task_id

    def load(self, task_id: str) -> BabyAITask:
        return parse_task_id(task_id)
