"""Differential test: our ALFWorld engine against TextWorld, turn by turn.

Each game is written as a ``game.tw-pddl`` file (ALFWorld's format, with the
``alfworld`` package's domain and grammar), loaded in TextWorld's PDDL engine
with ALFWorld's wrappers, and played by a random walk over the admissible
commands (some turns send an inadmissible command; the walk has 0, 12 or 25
turns) that hands over to the expert, which must then win. After every turn the
observation, the admissible commands, the score and ``won`` must be identical.
The published-format games of
``tests/envs/alfworld/test_alfworld_published.py`` are played the same way,
each as a raw 2.1.1 and as a patched 2.1.2 file, after scripted turns that use
what differs between the versions. Skipped when TextWorld + Fast Downward are
not installed (``scripts/install_alfworld_reference.sh``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from test_alfworld import HAND_GOAL, HAND_PROBLEM, hand_game_file

from agentenvs.core import derive_rng
from agentenvs.envs.alfworld.expert import ExpertPlanner
from agentenvs.envs.alfworld.pddl import parse_problem
from agentenvs.envs.alfworld.reference import ReferenceGame, reference_available
from agentenvs.envs.alfworld.tasks import TASK_TYPES, game_file, generate_game
from agentenvs.envs.alfworld.world import AlfredWorld

from fixtures.alfworld_published import published_file, published_script, published_world

pytestmark = pytest.mark.skipif(not reference_available(), reason="TextWorld + Fast Downward not installed")

RANDOM_TURNS = 25
EXPERT_TURNS = 30
WALKS = (0, 12, 25)  # random turns before the expert takes over
INADMISSIBLE = ("jump", "take the moon", "go to kitchen")


def walk_command(world: AlfredWorld, rng) -> str:
    """A random turn: mostly admissible, biased towards acting on objects rather than walking."""
    if rng.random() < 0.05:
        return INADMISSIBLE[int(rng.integers(len(INADMISSIBLE)))]
    admissible = world.admissible_commands()
    acting = [c for c in admissible if not c.startswith("go to ")]
    pool = acting if acting and rng.random() < 0.5 else admissible
    return pool[int(rng.integers(len(pool)))]


def play_both(
    game_path: Path,
    world: AlfredWorld,
    seed: str,
    random_turns: int = RANDOM_TURNS,
    script: Sequence[str] = (),
) -> list[str]:
    """The ``script``'s commands, ``random_turns`` random turns, then the expert until the goal,
    in both engines; every mismatch.

    One episode per game: the reference engine re-translates the whole PDDL
    task on every reset, which costs seconds on a large kitchen.
    """
    reference = ReferenceGame(str(game_path))
    rng = derive_rng("alfworld-reference", seed)
    try:
        world.reset()
        turn = reference.reset()
        command, feedback = "<reset>", world.intro()
        planner = ExpertPlanner(world)
        walk_until = len(script) + random_turns
        for step in range(walk_until + EXPERT_TURNS + 1):
            ours = (feedback, world.admissible_commands(), float(world.goal_reached()), world.goal_reached())
            theirs = (turn.observation, turn.admissible, turn.score, turn.won)
            if ours != theirs:
                return [f"{seed} turn {step} {command!r}: ours {ours!r} != textworld {theirs!r}"]
            if turn.won:
                return []
            if step < len(script):
                command = script[step]
            elif step < walk_until:
                command = walk_command(world, rng)
            else:
                command = planner.next_command() or "look"
            feedback = world.step(command).feedback
            turn = reference.step(command)
        return [f"{seed}: the expert did not reach the goal after {random_turns} random turns"]
    finally:
        reference.close()


def check_generated(split: str, index: int, folder: str, random_turns: int = RANDOM_TURNS) -> list[str]:
    game = generate_game(split, index)
    path = Path(folder) / f"{split}-{index}" / "game.tw-pddl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(game_file(game)))
    return play_both(path, AlfredWorld(game.problem, game.goal_text), f"{split}-{index}", random_turns)


def first_game_of_each_type(split: str, rooms_first: bool) -> list[int]:
    """Indices of one game per task type (preferring small rooms, whose files load fastest)."""
    chosen: dict[str, int] = {}
    for index in range(200):
        game = generate_game(split, index)
        scene = int(game.name.rsplit("-", 1)[1])
        if game.task_type not in chosen and (
            not rooms_first
            or scene > 100
            or game.task_type in ("pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep")
        ):
            chosen[game.task_type] = index
    assert set(chosen) == set(TASK_TYPES)
    return sorted(chosen.values())


def test_hand_game_identical_in_textworld(tmp_path):
    path = tmp_path / "game.tw-pddl"
    path.write_text(json.dumps(hand_game_file()))
    assert play_both(path, AlfredWorld(parse_problem(HAND_PROBLEM), HAND_GOAL), "hand") == []


@pytest.mark.parametrize("version", ["2.1.1", "2.1.2"])
@pytest.mark.parametrize("game", ["kitchen", "bedroom"])
def test_published_format_games_identical_in_textworld(tmp_path, game, version):
    """A raw and a patched file of each published-format game: scripted turns (help, arrivals, slicing
    an object no receptacle holds, placing commands), then the expert, compared turn by turn."""
    path = tmp_path / "game.tw-pddl"
    path.write_text(json.dumps(published_file(game, version)))
    script = published_script(game, version)
    assert play_both(path, published_world(game, version), f"{game}-{version}", 0, script) == []


@pytest.mark.parametrize(("game", "version"), [("kitchen", "2.1.1"), ("bedroom", "2.1.2")])
def test_expert_alone_wins_published_format_games_in_textworld(tmp_path, game, version):
    path = tmp_path / "game.tw-pddl"
    path.write_text(json.dumps(published_file(game, version)))
    assert play_both(path, published_world(game, version), f"{game}-{version}", 0) == []


def test_generated_games_identical_in_textworld(tmp_path):
    """Five small games (five task types) in the default suite; the slow test covers all six at scale."""
    indices = first_game_of_each_type("test", rooms_first=True)
    small = [i for i in indices if generate_game("test", i).task_type != "pick_heat_then_place_in_recep"]
    mismatches = [
        m
        for n, index in enumerate(small)
        for m in check_generated("test", index, str(tmp_path), WALKS[n % 3])
    ]
    assert mismatches == []


CHUNKS = 8
GAMES_PER_CHUNK = 26  # 8 x 26 = 208 games


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_many_generated_games_identical_in_textworld(chunk, tmp_path):
    """208 games (train, valid and test splits, all six task types), two worker processes."""
    splits = ("train", "valid", "test")
    numbers = range(chunk * GAMES_PER_CHUNK, (chunk + 1) * GAMES_PER_CHUNK)
    jobs = [(splits[k % 3], k // 3, str(tmp_path), WALKS[k // 3 % 3]) for k in numbers]
    with ProcessPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(check_generated, *zip(*jobs, strict=False)))
    assert [m for found in results for m in found] == []
    kinds = {generate_game(split, index).task_type for split, index, _, _ in jobs}
    assert len(kinds) >= 4
