"""The BabyAI text layer: the agent's view as BALROG-style sentences, text actions.

The lines describe minigrid's egocentric observation (the 7x7 ``image`` of
``(type, color, state)`` codes a level returns from ``reset``/``step``, with
the agent at the bottom centre facing up), in the wording of BabyAI-Text as
BALROG shows it:

- ``You carry a blue key`` first, when the agent holds something;
- ``a wall 2 steps forward`` / ``... left`` / ``... right``: the first thing
  seen straight ahead, to the left and to the right of the agent, when it is
  a wall (an object in between hides the wall);
- one line per visible object, columns left to right, far to near:
  ``a red box 3 steps right and 2 steps forward``, ``a grey key 1 step
  forward``, ``a locked purple door 2 steps left`` (doors say open / closed /
  locked).

Where BabyAI-Text writes "a open ... door", the line here reads "an open".
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
from minigrid.core.constants import IDX_TO_COLOR, IDX_TO_OBJECT, OBJECT_TO_IDX, STATE_TO_IDX

from agentenvs.core.env import InvalidAction

# Index i is minigrid's action i (left, right, forward, pickup, drop, toggle);
# minigrid's "done" is left out, as in BALROG.
TEXT_ACTIONS: tuple[str, ...] = ("turn left", "turn right", "go forward", "pick up", "drop", "toggle")
ACTION_HELP = f"Actions: {', '.join(TEXT_ACTIONS)}."

_ACTION_INDEX = {name: index for index, name in enumerate(TEXT_ACTIONS)}
_UNSEEN, _EMPTY, _WALL, _DOOR = (OBJECT_TO_IDX[name] for name in ("unseen", "empty", "wall", "door"))
_IDX_TO_STATE = {index: name for name, index in STATE_TO_IDX.items()}


def parse_action(text: str) -> int:
    """The minigrid action named by ``text``, an action name exactly as written.

    BALROG's BabyAI wrapper accepts only the exact (lower-case) names, so the
    names are case-sensitive here too; the core rule has already stripped the
    surrounding whitespace and one trailing period.
    """
    try:
        return _ACTION_INDEX[text]
    except KeyError:
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise InvalidAction(f"{shown!r} is not an action") from None


def _steps(count: int) -> str:
    return f"{count} step" if count == 1 else f"{count} steps"


def _object_name(type_idx: int, color_idx: int, state_idx: int) -> str:
    color = IDX_TO_COLOR[color_idx]
    if type_idx == _DOOR:
        state = _IDX_TO_STATE[state_idx]
        return f"{'an' if state == 'open' else 'a'} {state} {color} door"
    return f"a {color} {IDX_TO_OBJECT[type_idx]}"


@cache
def _view_layout(size: int) -> tuple[tuple[tuple[str, tuple[int, ...]], ...], tuple[tuple[int, str], ...]]:
    """For a ``size`` x ``size`` view, as offsets into the image's bytes ((x, y, channel) order):
    the three wall rays from the agent outwards, and every other cell with its relative place."""

    def offset(x: int, y: int) -> int:
        return (x * size + y) * 3

    agent_x, agent_y = size // 2, size - 1
    rays = (
        ("forward", tuple(offset(agent_x, y) for y in range(agent_y - 1, -1, -1))),
        ("left", tuple(offset(x, agent_y) for x in range(agent_x - 1, -1, -1))),
        ("right", tuple(offset(x, agent_y) for x in range(agent_x + 1, size))),
    )
    places = []
    for x in range(size):
        for y in range(size):
            side, ahead = x - agent_x, agent_y - y
            if side == 0 and ahead == 0:
                continue  # the agent's own cell shows what it carries
            if side == 0:
                where = f"{_steps(ahead)} forward"
            else:
                where = f"{_steps(abs(side))} {'right' if side > 0 else 'left'}"
                if ahead:
                    where += f" and {_steps(ahead)} forward"
            places.append((offset(x, y), where))
    return rays, tuple(places)


def view_lines(image: np.ndarray, carrying: Any = None) -> list[str]:
    """Sentences for minigrid's egocentric ``image`` (view x, view y, 3) and the carried object."""
    rays, places = _view_layout(image.shape[0])
    cells = np.ascontiguousarray(image, dtype=np.uint8).tobytes()
    lines = [f"You carry a {carrying.color} {carrying.type}"] if carrying is not None else []
    for direction, ray in rays:
        for distance, at in enumerate(ray, start=1):
            type_idx = cells[at]
            if type_idx in (_UNSEEN, _EMPTY):
                continue
            if type_idx == _WALL:
                lines.append(f"a wall {_steps(distance)} {direction}")
            break
    for at, where in places:
        if cells[at] > _WALL:
            lines.append(f"{_object_name(cells[at], cells[at + 1], cells[at + 2])} {where}")
    return lines


def observation_text(mission: str, lines: list[str]) -> str:
    """The text observation: the mission, then what the agent sees."""
    return f"Mission: {mission}\n" + ("\n".join(lines) if lines else "Nothing in view.")
