"""Reverse-play room generator and the generated task source.

A room is made as gym-sokoban makes it, with randomness drawn only from
``derive_rng("sokoban", rows, columns, boxes, min_solution_length, split,
index, attempt)``:

1. Topology: a random walk of ``int(1.7 * (height + width))`` steps from a
   random cell; each step keeps its direction or, with probability 0.35,
   draws a new one, then carves one of five 3×3 floor masks around the
   walker. The outer ring stays wall.
2. The player, then one target per box, on distinct random floor cells; the
   boxes start on their targets.
3. Reverse play: a depth-first search (depth ≤ 300, ≤ 300,000 states) of
   moves and pulls from that solved layout. Each state found is scored
   ``pulls × Σ |box − its target|₁`` (gym-sokoban calls the first factor
   box swaps; its search counts every pull), and 0 unless every target is
   uncovered (no box, no player on it). The best-scoring state is the start.
   Playing pulls backwards makes every room solvable by construction. Given
   the same floor, player and targets, this search returns exactly the state
   and score of gym-sokoban's ``reverse_playing`` (a differential test checks
   it).

An attempt is rejected, and the next attempt number drawn, when the score is
0, the floor is too small, the layout's content hash (walls, targets, boxes,
player; :func:`agentenvs.core.tasks.split_of_content`) selects another split, or
the breadth-first solver's minimum solution length falls outside
``[min_solution_length, max_solution_length]``.

The splits own 80% / 10% / 10% (train / valid / test) of the content-hash
buckets. Rooms of 6×6 with one box are few and some are drawn often (2,000
train tasks hold 1,051 distinct rooms, the 1,000 test tasks of ``-x9`` 251), so a split
repeats rooms, as sampling rooms afresh does; two splits never share one.

Task ids name the generator and the position: ``sokoban-6x6-b1-m5-x9/test/000042``
is rows × columns 6×6, 1 box, solutions of 5 to 9 moves (``-x`` is omitted
when unbounded), test split, index 42. Split sizes: train 1,000,000, valid
1,000, test 1,000; tasks are generated on demand and kept in a bounded LRU
cache shared by every env of the process (GRPO groups reset one task many
times).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from agentenvs.core import TaskSource, UnknownTaskError, derive_rng, split_of_content
from agentenvs.envs.sokoban.room import DIRECTIONS, Boxes, Room, parse_text
from agentenvs.envs.sokoban.solver import SearchLimitExceeded, StateSpace, explore

SPLIT_SIZES: dict[str, int] = {"train": 1_000_000, "valid": 1_000, "test": 1_000}
# Shares of the content-hash buckets. Only disjointness matters for correctness;
# small valid/test shares keep most rooms for training, at the price of about ten
# times the attempts per valid/test task.
SPLIT_WEIGHTS: dict[str, int] = {"train": 8, "valid": 1, "test": 1}
INDEX_DIGITS = 6

P_CHANGE_DIRECTION = 0.35
WALK_STEPS_PER_SIDE = 1.7
REVERSE_PLAY_DEPTH = 300
REVERSE_PLAY_MAX_STATES = 300_000
MAX_ATTEMPTS = 5_000
MAX_SIDE = 30  # reverse play and the solver are searches: keep any id's cost bounded
CACHE_SIZE = 1024

WALK_DIRECTIONS = ((1, 0), (0, 1), (-1, 0), (0, -1))
# Floor carved around the walker, as (row, column) offsets from its cell.
MASKS = (
    ((0, -1), (0, 0), (0, 1)),
    ((-1, 0), (0, 0), (1, 0)),
    ((0, -1), (0, 0), (1, 0)),
    ((0, -1), (0, 0), (1, -1), (1, 0)),
    ((0, 0), (0, 1), (1, 0)),
)

_TASK_ID = re.compile(r"sokoban-(\d+)x(\d+)-b(\d+)-m(\d+)(?:-x(\d+))?/([a-z]+)/(\d+)")


@dataclass(frozen=True)
class GeneratorConfig:
    """What a generated task set is made of; its ``name`` prefixes every task id."""

    height: int = 6
    width: int = 6
    num_boxes: int = 1
    min_solution_length: int = 5
    max_solution_length: int | None = None

    def __post_init__(self) -> None:
        if not (4 <= self.height <= MAX_SIDE and 4 <= self.width <= MAX_SIDE):
            raise ValueError(f"rooms need 4 to {MAX_SIDE} cells a side, got {self.height}x{self.width}")
        if self.num_boxes < 1:
            raise ValueError(f"num_boxes must be >= 1, got {self.num_boxes}")
        if self.num_boxes + 2 > (self.height - 2) * (self.width - 2):
            raise ValueError(f"{self.num_boxes} boxes do not fit a {self.height}x{self.width} room")
        if self.min_solution_length < 1:
            raise ValueError(f"min_solution_length must be >= 1, got {self.min_solution_length}")
        if self.max_solution_length is not None and self.max_solution_length < self.min_solution_length:
            raise ValueError(
                f"max_solution_length ({self.max_solution_length}) is below "
                f"min_solution_length ({self.min_solution_length})"
            )

    @property
    def name(self) -> str:
        bound = "" if self.max_solution_length is None else f"-x{self.max_solution_length}"
        return f"sokoban-{self.height}x{self.width}-b{self.num_boxes}-m{self.min_solution_length}{bound}"

    @property
    def walk_steps(self) -> int:
        return int(WALK_STEPS_PER_SIDE * (self.height + self.width))


@dataclass(frozen=True)
class SokobanTask:
    """One level: its room, start layout, minimum solution length and state space."""

    task_id: str
    room: Room
    player: int
    boxes: Boxes
    solution_length: int
    space: StateSpace

    @classmethod
    def from_text(cls, task_id: str, level: str) -> SokobanTask:
        """A hand-drawn level (text symbols); raises ``ValueError`` if it cannot be solved."""
        room, player, boxes = parse_text(level)
        space = explore(room, player, boxes)
        length = space.moves_to_goal(player, boxes)
        if length is None:
            raise ValueError(f"level {task_id!r} cannot be solved")
        return cls(task_id, room, player, boxes, length, space)


def parse_task_id(task_id: str) -> tuple[GeneratorConfig, str, int]:
    """(config, split, index) named by a task id; :class:`UnknownTaskError` if malformed."""
    match = _TASK_ID.fullmatch(task_id) if isinstance(task_id, str) else None
    if match is None:
        raise UnknownTaskError(
            f"malformed Sokoban task id {task_id!r}; expected e.g. 'sokoban-6x6-b1-m5-x9/test/000042' "
            "(rows x columns, boxes, minimum[-maximum] solution length, split, 6-digit index)"
        )
    height, width, boxes, minimum, maximum, split, digits = match.groups()
    try:
        config = GeneratorConfig(
            int(height), int(width), int(boxes), int(minimum), int(maximum) if maximum else None
        )
    except ValueError as exc:
        raise UnknownTaskError(f"invalid Sokoban task id {task_id!r}: {exc}") from None
    if split not in SPLIT_SIZES:
        raise UnknownTaskError(
            f"unknown split {split!r} in task id {task_id!r}; splits: {sorted(SPLIT_SIZES)}"
        )
    index = int(digits)
    if index >= SPLIT_SIZES[split]:
        raise UnknownTaskError(
            f"index {index} out of range in {task_id!r}: split {split!r} holds {SPLIT_SIZES[split]}"
        )
    if task_id != format_task_id(config, split, index):
        raise UnknownTaskError(
            f"non-canonical task id {task_id!r}; use {format_task_id(config, split, index)!r}"
        )
    return config, split, index


def format_task_id(config: GeneratorConfig, split: str, index: int) -> str:
    return f"{config.name}/{split}/{index:0{INDEX_DIGITS}d}"


@lru_cache(maxsize=CACHE_SIZE)
def load_task(task_id: str) -> SokobanTask:
    """The task named by ``task_id``, generated on first use and then cached."""
    config, split, index = parse_task_id(task_id)
    for attempt in range(MAX_ATTEMPTS):
        task = _attempt(config, split, index, attempt, task_id)
        if task is not None:
            return task
    raise RuntimeError(
        f"no room for {task_id!r} after {MAX_ATTEMPTS} attempts: loosen the generator settings"
    )


def _attempt(
    config: GeneratorConfig, split: str, index: int, attempt: int, task_id: str
) -> SokobanTask | None:
    # the maximum length only filters: it stays out of the seed, so bounded and unbounded
    # task sets hold the same room at an index wherever the bound admits it
    seed_parts = (config.height, config.width, config.num_boxes, config.min_solution_length)
    placed = place_room(config, derive_rng("sokoban", *seed_parts, split, index, attempt))
    if placed is None:
        return None
    room, player, targets = placed
    player, boxes, score = reverse_play(room, player, targets)
    if score <= 0:
        return None
    if split_of_content(layout_content(room, player, boxes), SPLIT_WEIGHTS) != split:
        return None
    try:
        space = explore(room, player, boxes)
    except SearchLimitExceeded:
        return None
    length = space.moves_to_goal(player, boxes)
    if length is None or length < config.min_solution_length:
        return None
    if config.max_solution_length is not None and length > config.max_solution_length:
        return None
    return SokobanTask(task_id, room, player, boxes, length, space)


def place_room(config: GeneratorConfig, rng: np.random.Generator) -> tuple[Room, int, list[int]] | None:
    """Steps 1 and 2: (room, player cell, targets in placement order); None if the floor is too small."""
    floor = random_walk_floor(config, rng)
    if len(floor) <= config.num_boxes + 1:
        return None
    walls = frozenset(range(config.height * config.width)) - frozenset(floor)
    player = floor.pop(int(rng.integers(len(floor))))
    targets = [floor.pop(int(rng.integers(len(floor)))) for _ in range(config.num_boxes)]
    return Room(config.height, config.width, walls, frozenset(targets)), player, targets


def layout_content(room: Room, player: int, boxes: Boxes) -> tuple:
    """What decides a room's split: walls, targets, boxes and player."""
    return ("sokoban", room.height, room.width, room.is_wall, sorted(room.targets), boxes, player)


def random_walk_floor(config: GeneratorConfig, rng: np.random.Generator) -> list[int]:
    """Floor cells (ascending) carved by the random walk; the outer ring stays wall."""
    height, width, steps = config.height, config.width, config.walk_steps
    # one draw of uniforms: [start row, start column, first direction, then per step
    # (change?, new direction, mask)]; a choice among k is int(u * k)
    uniforms = rng.random(3 + 3 * steps).tolist()
    row = 1 + int(uniforms[0] * (height - 1))
    column = 1 + int(uniforms[1] * (width - 1))
    direction = WALK_DIRECTIONS[int(uniforms[2] * len(WALK_DIRECTIONS))]
    carved: set[int] = set()
    for step in range(steps):
        change, new_direction, mask = uniforms[3 + 3 * step : 6 + 3 * step]
        if change < P_CHANGE_DIRECTION:
            direction = WALK_DIRECTIONS[int(new_direction * len(WALK_DIRECTIONS))]
        row = min(max(row + direction[0], 1), height - 2)
        column = min(max(column + direction[1], 1), width - 2)
        for d_row, d_column in MASKS[int(mask * len(MASKS))]:
            r, c = row + d_row, column + d_column
            if 0 < r < height - 1 and 0 < c < width - 1:
                carved.add(r * width + c)
    return sorted(carved)


def reverse_play(room: Room, player: int, targets: list[int]) -> tuple[int, Boxes, int]:
    """Play pulls backwards from the solved layout; the best-scoring start found.

    Returns (player, boxes, score). As in gym-sokoban, a state is the player
    cell plus the box cells *and* which boxes were ever pulled (its grid codes
    tell a box never moved from one pulled back onto its target), and the
    search order (pull-or-move up, down, left, right, then plain moves)
    decides which path first reaches a state, and so the pull count that state
    is scored with. Children already explored or beyond the depth limit are
    skipped before the call: the same states in the same order as calling and
    returning at once.
    """
    deltas = [room.deltas[d] for d in DIRECTIONS]
    is_wall = room.is_wall
    target_set = room.targets
    cells = room.height * room.width
    coordinates = [divmod(cell, room.width) for cell in range(cells)]
    target_coordinates = [coordinates[t] for t in targets]
    explored: set[int] = set()
    best: list = [-1, player, tuple(sorted(targets))]

    def displacement(positions: tuple[int, ...]) -> int:
        total = 0
        for cell, (target_row, target_column) in zip(positions, target_coordinates, strict=False):
            row, column = coordinates[cell]
            total += abs(row - target_row) + abs(column - target_column)
        return total

    # A state's key is ``boxes * cells + player``, where ``boxes`` sets bit 2·cell for a
    # box never pulled and bit 2·cell + 1 for a pulled one: canonical without sorting.
    def visit(player: int, positions: tuple[int, ...], boxes: int, pulls: int, depth_left: int) -> None:
        explored.add(boxes * cells + player)
        if player not in target_set and target_set.isdisjoint(positions):
            score = pulls * displacement(positions)
            if score > best[0]:
                best[:] = [score, player, tuple(sorted(positions))]
        depth_left -= 1
        if depth_left <= 0:
            return
        for pull in (True, False):
            for delta in deltas:
                ahead = player + delta
                if is_wall[ahead] or ahead in positions:
                    continue
                behind = player - delta
                if pull and behind in positions:
                    box = positions.index(behind)
                    child = positions[:box] + (player,) + positions[box + 1 :]
                    child_boxes = (boxes & ~(3 << 2 * behind)) | (2 << 2 * player)
                    child_pulls = pulls + 1
                elif pull or behind in positions:
                    # a pull with nothing behind is a plain move; a plain move with a box
                    # behind is the only way to leave the box there
                    child, child_boxes, child_pulls = positions, boxes, pulls
                else:
                    continue
                if len(explored) >= REVERSE_PLAY_MAX_STATES:
                    return
                if child_boxes * cells + ahead not in explored:
                    visit(ahead, child, child_boxes, child_pulls, depth_left)

    visit(player, tuple(targets), sum(1 << 2 * t for t in targets), 0, REVERSE_PLAY_DEPTH - 1)
    score, best_player, best_boxes = best
    return best_player, best_boxes, max(score, 0)


class SokobanTaskSource(TaskSource[SokobanTask]):
    """Generated Sokoban tasks for one :class:`GeneratorConfig`.

    ``load`` accepts any well-formed generated id, whatever its config.
    """

    def __init__(self, config: GeneratorConfig | None = None) -> None:
        self.config = config or GeneratorConfig()

    def size(self, split: str) -> int:
        self.check_split(split)
        return SPLIT_SIZES[split]

    def task_id(self, split: str, index: int) -> str:
        self.check_split(split)
        if not 0 <= index < SPLIT_SIZES[split]:
            raise IndexError(f"index {index} out of range for split {split!r} of size {SPLIT_SIZES[split]}")
        return format_task_id(self.config, split, index)

    def load(self, task_id: str) -> SokobanTask:
        return load_task(task_id)
