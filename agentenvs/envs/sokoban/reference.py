"""The original gym-sokoban engine, as a reference for differential tests and benchmarks.

Optional: ``pip install gym-sokoban`` (0.0.6, with ``gym`` 0.26). Only its
env class and room utilities are used, never ``gym.make`` (gym 0.26's checker
fails on numpy 2). gym-sokoban imports ``pkg_resources`` (removed from
setuptools 81) just to locate its bundled files; when it is missing, a
stand-in resolving paths inside the package serves the import and leaves
``sys.modules`` right after.

gym-sokoban's cell codes: 0 wall, 1 floor, 2 target, 3 box on target, 4 box,
5 player; actions 1-4 push (or move) up, down, left, right.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from agentenvs.envs.sokoban.room import Boxes, Room

REFERENCE_ACTIONS: dict[str, int] = {"up": 1, "down": 2, "left": 3, "right": 4}


def _resource_filename(module: str, resource: str) -> str:
    """pkg_resources' answer for a file beside ``module``'s source."""
    return str(Path(importlib.util.find_spec(module).origin).parent / resource)


def load_reference() -> tuple[types.ModuleType | None, types.ModuleType | None, str]:
    """(gym-sokoban's env module, its room_utils module, why not) — modules are None if absent."""
    if importlib.util.find_spec("gym_sokoban") is None:
        return None, None, "gym-sokoban is not installed (pip install gym-sokoban)"
    stand_in = None
    if importlib.util.find_spec("pkg_resources") is None:
        stand_in = types.ModuleType("pkg_resources")
        stand_in.resource_filename = _resource_filename
        sys.modules["pkg_resources"] = stand_in
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            env_module = importlib.import_module("gym_sokoban.envs.sokoban_env")
            room_utils = importlib.import_module("gym_sokoban.envs.room_utils")
    except (ImportError, AttributeError, OSError) as exc:  # an incompatible gym or numpy
        return None, None, f"gym-sokoban does not import: {type(exc).__name__}: {exc}"
    finally:
        if stand_in is not None and sys.modules.get("pkg_resources") is stand_in:
            del sys.modules["pkg_resources"]
    return env_module, room_utils, ""


def reference_arrays(room: Room, player: int, boxes: Boxes) -> tuple[np.ndarray, np.ndarray]:
    """(room_fixed, room_state) in gym-sokoban's cell codes."""
    fixed = np.ones(room.height * room.width, dtype=np.int64)
    fixed[sorted(room.walls)] = 0
    fixed[sorted(room.targets)] = 2
    state = fixed.copy()
    for b in boxes:
        state[b] = 3 if b in room.targets else 4
    state[player] = 5
    shape = (room.height, room.width)
    return fixed.reshape(shape), state.reshape(shape)


def reference_env(env_module: types.ModuleType, room: Room, player: int, boxes: Boxes) -> Any:
    """A gym-sokoban env set to the given state (its own reset would generate a room)."""
    env = env_module.SokobanEnv(
        dim_room=(room.height, room.width), num_boxes=len(boxes), max_steps=10**9, reset=False
    )
    env.room_fixed, env.room_state = reference_arrays(room, player, boxes)
    env.player_position = np.array(divmod(player, room.width))
    env.num_env_steps = 0
    env.reward_last = 0
    env.boxes_on_target = sum(1 for b in boxes if b in room.targets)
    return env
