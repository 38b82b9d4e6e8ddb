"""Breadth-first Sokoban solver: optimal move counts for every reachable state.

:func:`explore` enumerates every state reachable from a start (player cell +
boxes) with breadth-first search over primitive moves, then runs a second
breadth-first search backwards from the solved states. The result, a
:class:`StateSpace`, knows the minimum number of moves to the goal from every
state the player can ever reach in that episode, so the generator reads the
start's minimum solution length, the env reports the optimal remaining moves,
and the expert replans from any state with table look-ups only.

Moves, not pushes, are minimised (every primitive step costs the same reward).
Solved states are not expanded: the episode ends there.
"""

from __future__ import annotations

from collections import deque

from agentenvs.envs.sokoban.room import DIRECTIONS, Boxes, Room, is_solved, move

DEFAULT_MAX_STATES = 500_000


class SearchLimitExceeded(RuntimeError):
    """The reachable state space is larger than the search may enumerate."""


def encode_state(room: Room, player: int, boxes: Boxes) -> int:
    """One integer per (player, sorted boxes): compact dictionary keys."""
    cells = room.height * room.width
    key = player
    for b in boxes:
        key = key * cells + b
    return key


class StateSpace:
    """Minimum moves to the goal for every state reachable from one start."""

    def __init__(self, room: Room, moves_to_goal: dict[int, int], num_states: int) -> None:
        self.room = room
        self._moves_to_goal = moves_to_goal
        self.num_states = num_states

    def moves_to_goal(self, player: int, boxes: Boxes) -> int | None:
        """Optimal remaining moves; ``None`` when the goal cannot be reached (deadlock)."""
        return self._moves_to_goal.get(encode_state(self.room, player, boxes))

    def plan(self, player: int, boxes: Boxes, max_moves: int) -> list[str]:
        """The first ``max_moves`` moves of an optimal solution (empty if solved or stuck).

        Ties between equally good moves go to the first in ``DIRECTIONS`` order.
        """
        moves: list[str] = []
        remaining = self.moves_to_goal(player, boxes)
        while remaining and len(moves) < max_moves:
            for direction in DIRECTIONS:
                next_player, next_boxes = move(self.room, player, boxes, direction)
                if self.moves_to_goal(next_player, next_boxes) == remaining - 1:
                    moves.append(direction)
                    player, boxes, remaining = next_player, next_boxes, remaining - 1
                    break
            else:  # unreachable for a consistent table: some move lowers the distance
                raise AssertionError("no move lowers the distance to the goal")
        return moves


def explore(room: Room, player: int, boxes: Boxes, max_states: int = DEFAULT_MAX_STATES) -> StateSpace:
    """Every state reachable from (player, boxes), with its optimal moves to the goal.

    Raises :class:`SearchLimitExceeded` past ``max_states`` states.
    """
    start = encode_state(room, player, boxes)
    index = {start: 0}
    keys = [start]
    predecessors: list[list[int]] = [[]]
    solved: list[int] = []
    frontier = deque([(0, player, boxes)])
    while frontier:
        state, state_player, state_boxes = frontier.popleft()
        if is_solved(room, state_boxes):
            solved.append(state)
            continue
        for direction in DIRECTIONS:
            next_player, next_boxes = move(room, state_player, state_boxes, direction)
            if next_player == state_player:
                continue  # blocked: the state does not change
            key = encode_state(room, next_player, next_boxes)
            successor = index.get(key)
            if successor is None:
                successor = len(keys)
                if successor >= max_states:
                    raise SearchLimitExceeded(f"more than {max_states} reachable states")
                index[key] = successor
                keys.append(key)
                predecessors.append([])
                frontier.append((successor, next_player, next_boxes))
            predecessors[successor].append(state)

    distance = dict.fromkeys(solved, 0)
    backward = deque(solved)
    while backward:
        state = backward.popleft()
        for previous in predecessors[state]:
            if previous not in distance:
                distance[previous] = distance[state] + 1
                backward.append(previous)
    return StateSpace(room, {keys[s]: d for s, d in distance.items()}, len(keys))
