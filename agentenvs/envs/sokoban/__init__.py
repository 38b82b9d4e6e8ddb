"""Sokoban: push boxes onto targets in generated rooms (gym-sokoban rules, native engine).

Lives here: ``env`` (the env), ``room`` (the dynamics), ``solver`` (the
breadth-first solver: the env's solution plans and the expert read it),
``tasks`` (the task source), ``render`` (pixels), ``reference``
(gym-sokoban as the differential tests' reference), ``expert`` (the solver's
moves as an agent).

May import: ``agentenvs.core`` and this package, by the rule every
family follows (see :mod:`agentenvs.core.registration`).
"""

from agentenvs.core.registration import EnvEntry

FAMILY = "Sokoban"
EXPERT = "agentenvs.envs.sokoban.expert:SokobanExpert"

ENVS = (
    EnvEntry(
        name="Sokoban",
        entry_point="agentenvs.envs.sokoban.env:SokobanEnv",
        family=FAMILY,
        expert=EXPERT,
        summary="Sokoban 6x6, 1 box; up to 3 moves per turn, 3 turns (MT-PPO case study)",
        kwargs={
            "dim_room": (6, 6),
            "num_boxes": 1,
            "min_solution_length": 5,
            "max_actions_per_turn": 3,
            "max_turns": 3,
        },
    ),
    EnvEntry(
        name="Sokoban-Verl",
        entry_point="agentenvs.envs.sokoban.env:SokobanEnv",
        family=FAMILY,
        expert=EXPERT,
        summary="Sokoban 6x6, 1 box; one move per turn, 15 turns (verl-agent setting)",
        kwargs={
            "dim_room": (6, 6),
            "num_boxes": 1,
            "min_solution_length": 5,
            "max_actions_per_turn": 1,
            "max_turns": 15,
        },
    ),
)
