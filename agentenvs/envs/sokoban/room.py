"""Sokoban world objects: the static room, the movable layout, and the dynamics.

Cells are numbered row-major (``cell = row * width + column``). The outer ring
of every room is wall, so a step from any floor cell stays on the grid and
no bounds check is needed.

Dynamics (as gym-sokoban): the player moves one cell up, down, left or
right. Walking into a box pushes it one cell further when that cell is free
(floor or target, no box). Walking into a wall, or pushing a box into a wall
or another box, is a valid step that changes nothing.

Text symbols: ``#`` wall, ``_`` floor, ``O`` target, ``X`` box, ``√`` box on
target, ``P`` player, ``S`` player on target.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from agentenvs.core import stable_digest

DIRECTIONS: tuple[str, ...] = ("up", "down", "left", "right")

WALL, FLOOR, TARGET, BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET = "#", "_", "O", "X", "√", "P", "S"
LEGEND = "Legend: # wall, _ floor, O target, X box, √ box on target, P player, S player on target."

Boxes = tuple[int, ...]  # box cells, sorted ascending: one canonical form per layout


@dataclass(frozen=True)
class Room:
    """The static part of a level: walls and targets on a ``height`` × ``width`` grid.

    Args:
        height: rows, outer ring included.
        width: columns, outer ring included.
        walls: cells that are wall; must contain the whole outer ring.
        targets: cells boxes must be pushed onto; never walls.
    """

    height: int
    width: int
    walls: frozenset[int]
    targets: frozenset[int]

    def __post_init__(self) -> None:
        if self.height < 3 or self.width < 3:
            raise ValueError(f"a room needs at least 3x3 cells, got {self.height}x{self.width}")
        cells = self.height * self.width
        width = self.width
        ring = {
            *range(width),
            *range(cells - width, cells),
            *range(0, cells, width),
            *range(width - 1, cells, width),
        }
        if not ring <= self.walls:
            raise ValueError("the outer ring of a room must be wall")
        if not all(0 <= c < cells for c in self.walls | self.targets):
            raise ValueError("wall or target cell outside the grid")
        if self.walls & self.targets:
            raise ValueError("a target cannot be a wall")

    @cached_property
    def is_wall(self) -> bytes:
        """``is_wall[cell]`` is 1 for a wall: a constant-time lookup for the dynamics."""
        return bytes(1 if c in self.walls else 0 for c in range(self.height * self.width))

    @cached_property
    def deltas(self) -> dict[str, int]:
        """Cell offset of one step in each direction."""
        return {"up": -self.width, "down": self.width, "left": -1, "right": 1}

    @cached_property
    def digest(self) -> str:
        """Stable identity of the static layout (walls and targets)."""
        return stable_digest(
            ("sokoban-room", self.height, self.width, sorted(self.walls), sorted(self.targets))
        )

    @cached_property
    def base_symbols(self) -> tuple[str, ...]:
        """Per-cell symbol of the empty room (wall, floor or target)."""
        return tuple(
            WALL if c in self.walls else TARGET if c in self.targets else FLOOR
            for c in range(self.height * self.width)
        )


def move(room: Room, player: int, boxes: Boxes, direction: str) -> tuple[int, Boxes]:
    """One primitive step: the new player cell and boxes (unchanged when blocked)."""
    delta = room.deltas[direction]
    ahead = player + delta
    if room.is_wall[ahead]:
        return player, boxes
    if ahead in boxes:
        beyond = ahead + delta
        if room.is_wall[beyond] or beyond in boxes:
            return player, boxes
        boxes = tuple(sorted(beyond if b == ahead else b for b in boxes))
    return ahead, boxes


def boxes_on_targets(room: Room, boxes: Boxes) -> int:
    return sum(1 for b in boxes if b in room.targets)


def is_solved(room: Room, boxes: Boxes) -> bool:
    """All boxes rest on targets."""
    return all(b in room.targets for b in boxes)


def render_text(room: Room, player: int, boxes: Boxes) -> str:
    """The grid in text symbols, one line per row."""
    symbols = list(room.base_symbols)
    for b in boxes:
        symbols[b] = BOX_ON_TARGET if b in room.targets else BOX
    symbols[player] = PLAYER_ON_TARGET if player in room.targets else PLAYER
    width = room.width
    return "\n".join("".join(symbols[r * width : (r + 1) * width]) for r in range(room.height))


def parse_text(text: str) -> tuple[Room, int, Boxes]:
    """Read a level drawn in the text symbols: (room, player cell, boxes).

    Raises ``ValueError`` for ragged rows, unknown symbols, not exactly one
    player, or a box count that differs from the target count.
    """
    rows = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not rows or len({len(r) for r in rows}) != 1:
        raise ValueError("a level needs non-empty rows of equal length")
    height, width = len(rows), len(rows[0])
    walls, targets, boxes, players = set(), set(), [], []
    for cell, symbol in enumerate("".join(rows)):
        if symbol == WALL:
            walls.add(cell)
        elif symbol in (TARGET, BOX_ON_TARGET, PLAYER_ON_TARGET):
            targets.add(cell)
        elif symbol not in (FLOOR, BOX, PLAYER):
            raise ValueError(f"unknown symbol {symbol!r} in level")
        if symbol in (BOX, BOX_ON_TARGET):
            boxes.append(cell)
        if symbol in (PLAYER, PLAYER_ON_TARGET):
            players.append(cell)
    if len(players) != 1:
        raise ValueError(f"a level needs exactly one player, found {len(players)}")
    if len(boxes) != len(targets) or not boxes:
        raise ValueError(
            f"a level needs as many boxes as targets (and at least one): {len(boxes)} vs {len(targets)}"
        )
    return Room(height, width, frozenset(walls), frozenset(targets)), players[0], tuple(sorted(boxes))
