"""Pixel rendering: 16×16 sprites drawn once with Pillow, composed with numpy.

Sprites (index = cell code): floor, brick wall, target ring on floor, crate
with a cross, the same crate in green when it rests on a target, a small
player figure, and the player standing on a target ring.
"""

from __future__ import annotations

from functools import cache, lru_cache

import numpy as np
from PIL import Image, ImageDraw

from agentenvs.envs.sokoban.room import Boxes, Room

TILE = 16
FLOOR_CODE, WALL_CODE, TARGET_CODE, BOX_CODE, BOX_ON_TARGET_CODE, PLAYER_CODE, PLAYER_ON_TARGET_CODE = range(
    7
)

_FLOOR = (222, 214, 190)
_FLOOR_EDGE = (205, 196, 170)
_MORTAR = (120, 112, 104)
_BRICK = (164, 66, 44)
_TARGET = (214, 38, 38)
_CRATE = (176, 118, 52)
_CRATE_EDGE = (96, 58, 20)
_CRATE_PLACED = (70, 170, 80)
_CRATE_PLACED_EDGE = (24, 92, 36)
_SKIN = (244, 200, 160)
_SHIRT = (40, 90, 200)
_TROUSERS = (30, 30, 60)


def _floor() -> Image.Image:
    tile = Image.new("RGB", (TILE, TILE), _FLOOR)
    ImageDraw.Draw(tile).rectangle((0, 0, TILE - 1, TILE - 1), outline=_FLOOR_EDGE)
    return tile


def _wall() -> Image.Image:
    tile = Image.new("RGB", (TILE, TILE), _MORTAR)
    draw = ImageDraw.Draw(tile)
    for course in range(4):  # four courses of bricks, alternate courses offset by half a brick
        top = course * 4
        offset = 4 if course % 2 else 0
        for left in range(-offset, TILE, 8):
            draw.rectangle((max(left, 0), top, min(left + 6, TILE - 1), top + 2), fill=_BRICK)
    return tile


def _draw_target(tile: Image.Image) -> None:
    ImageDraw.Draw(tile).ellipse((3, 3, 12, 12), outline=_TARGET, width=2)


def _crate(fill: tuple[int, int, int], edge: tuple[int, int, int]) -> Image.Image:
    tile = _floor()
    draw = ImageDraw.Draw(tile)
    draw.rectangle((1, 1, 14, 14), fill=fill, outline=edge, width=2)
    draw.line((3, 3, 12, 12), fill=edge, width=2)
    draw.line((3, 12, 12, 3), fill=edge, width=2)
    return tile


def _draw_player(tile: Image.Image) -> None:
    draw = ImageDraw.Draw(tile)
    draw.ellipse((5, 1, 10, 6), fill=_SKIN)  # head
    draw.rectangle((5, 7, 10, 10), fill=_SHIRT)  # body
    draw.line((3, 8, 4, 8), fill=_SHIRT, width=1)  # arms
    draw.line((11, 8, 12, 8), fill=_SHIRT, width=1)
    draw.rectangle((5, 11, 6, 14), fill=_TROUSERS)  # legs
    draw.rectangle((9, 11, 10, 14), fill=_TROUSERS)


@cache
def sprites() -> np.ndarray:
    """Every sprite as one uint8 array of shape (7, 16, 16, 3), indexed by cell code."""
    target = _floor()
    _draw_target(target)
    player = _floor()
    _draw_player(player)
    player_on_target = target.copy()
    _draw_player(player_on_target)
    tiles = [
        _floor(),
        _wall(),
        target,
        _crate(_CRATE, _CRATE_EDGE),
        _crate(_CRATE_PLACED, _CRATE_PLACED_EDGE),
        player,
        player_on_target,
    ]
    stack = np.stack([np.asarray(t, dtype=np.uint8) for t in tiles])
    stack.setflags(write=False)
    return stack


def cell_codes(room: Room, player: int, boxes: Boxes) -> np.ndarray:
    """Per-cell sprite index of a state, shape (height, width)."""
    codes = _base_codes(room).copy()
    flat = codes.reshape(-1)
    for b in boxes:
        flat[b] = BOX_ON_TARGET_CODE if b in room.targets else BOX_CODE
    flat[player] = PLAYER_ON_TARGET_CODE if player in room.targets else PLAYER_CODE
    return codes


@lru_cache(maxsize=1024)
def _base_codes(room: Room) -> np.ndarray:
    codes = np.full(room.height * room.width, FLOOR_CODE, dtype=np.uint8)
    codes[sorted(room.walls)] = WALL_CODE
    codes[sorted(room.targets)] = TARGET_CODE
    return codes.reshape(room.height, room.width)


def render_rgb(room: Room, player: int, boxes: Boxes) -> np.ndarray:
    """The state as an RGB image, uint8, shape (16·height, 16·width, 3)."""
    tiles = sprites()[cell_codes(room, player, boxes)]  # (h, w, 16, 16, 3)
    h, w = room.height, room.width
    return np.ascontiguousarray(tiles.transpose(0, 2, 1, 3, 4).reshape(h * TILE, w * TILE, 3))


def image_shape(height: int, width: int) -> tuple[int, int, int]:
    return (height * TILE, width * TILE, 3)
