"""Sokoban: push boxes onto targets in generated rooms (gym-sokoban rules, native engine).

Lives here: ``env`` (the env), ``room`` (the dynamics), ``solver`` (the
breadth-first solver: the env's solution plans and the expert read it),
``generator`` (the task source), ``render`` (pixels), ``reference``
(gym-sokoban as the differential tests' reference), ``expert`` (the solver's
moves as an agent).

The ``ENVS`` entries below name the env, its expert and its random policy
by import strings, so registering imports nothing of the family.

May import: ``agentenvs.core`` and this package; never a sibling
family, ``agentenvs.agents``/``eval``/``cli``, ``baselines`` or
``leaderboard``. The env side (env, world, tasks) never imports the expert;
the expert imports the env side.
"""

from agentenvs.core.registration import EnvEntry

FAMILY = "Sokoban"
EXPERT = "agentenvs.sokoban.expert:SokobanExpert"

ENVS = (
    EnvEntry(
        name="Sokoban",
        entry_point="agentenvs.sokoban.env:SokobanEnv",
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
        entry_point="agentenvs.sokoban.env:SokobanEnv",
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
