"""ALFWorld games in the published format: both file versions, objects that no receptacle holds.

The problems below are laid out as ALFWorld's published ``pddl_problem``s
are (the layout of its ``augment_pddl_states.py``): every ALFRED class
declared as an object and every object/receptacle type declared, whether
the scene holds it or not; objects whose ``objectAtLocation`` is a spot of
their own rather than their receptacle's location; fixtures and things on
the floor that no receptacle holds (``objectAtLocation`` without
``inReceptacle``); target objects that start in the fridge marked cool;
lamps that start on; an egg in a bowl (``inReceptacleObject``).

Each is written as a raw ``json_2.1.1`` game file (the ``alfworld``
package's domain and grammar with ALFWorld's 2.1.2 patch taken back out)
and as the 2.1.2 file ALFWorld's ``patch_tw-pddl.py`` makes of it.
``tests/envs/alfworld/test_alfworld_reference.py`` replays both in TextWorld; the texts
asserted here are the ones TextWorld prints.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import replace

import pytest

pytest.importorskip("alfworld", reason="the alfworld extra (its data files) is not installed")

from agentenvs.core import derive_rng
from agentenvs.envs.alfworld import text
from agentenvs.envs.alfworld.env import ALFWorldEnv
from agentenvs.envs.alfworld.expert import AlfworldExpert, ExpertPlanner
from agentenvs.envs.alfworld.official import OfficialGames, file_version, read_game
from agentenvs.envs.alfworld.pddl import PddlError, parse_problem
from agentenvs.envs.alfworld.tasks import SPLIT_SIZES, game_file, generate_game
from agentenvs.envs.alfworld.world import AlfredWorld

from fixtures.alfworld_published import (  # noqa: E402
    BEDROOM_GOAL,
    BEDROOM_NAME,
    BEDROOM_PROBLEM,
    KITCHEN_GOAL,
    KITCHEN_NAME,
    KITCHEN_PROBLEM,
    patched_file,
    published_file,
    published_world,
    write_published_tree,
)


# ---------------------------------------------------------------- versions
def test_file_version_is_read_from_the_domain_and_the_grammar():
    raw = published_file("kitchen", "2.1.1")
    patched = patched_file(raw)
    assert file_version(raw["pddl_domain"], raw["grammar"]) is text.RAW_2_1_1
    assert file_version(patched["pddl_domain"], patched["grammar"]) is text.PATCHED_2_1_2
    generated = game_file(generate_game("test", 0))  # the package's own 2.1.2 domain and grammar
    assert file_version(generated["pddl_domain"], generated["grammar"]) is text.PATCHED_2_1_2
    with pytest.raises(PddlError, match="neither published ALFWorld version"):
        file_version(raw["pddl_domain"], patched["grammar"])  # help in the grammar, not in the domain


def test_raw_file_plays_with_its_own_sentences():
    world = published_world("kitchen", "2.1.1")
    assert "help" not in world.admissible_commands()
    assert world.step("help").feedback == "Nothing happens."
    # The raw grammar names the location the agent arrives at, not the receptacle.
    assert world.step("go to countertop 1").feedback == (
        "You arrive at loc 9. On the countertop 1, you see a apple 1, a bowl 1, a egg 1, and a knife 1."
    )
    world.step("take knife 1 from countertop 1")
    assert "put knife 1 in/on countertop 1" in world.admissible_commands()
    assert not any(c.startswith("move ") for c in world.admissible_commands())
    assert (
        world.step("put knife 1 in/on countertop 1").feedback == "You put the knife 1 in/on the countertop 1."
    )
    patched = published_world("kitchen", "2.1.2")
    assert patched.step("go to countertop 1").feedback.startswith("You arrive at countertop 1. ")
    assert patched.step("help").feedback == text.HELP_TEXT


def test_objects_in_no_receptacle_can_only_be_sliced():
    world = published_world("kitchen", "2.1.2")
    floor_apple = "apple_bar__minus_01_dot_00_bar__plus_00_dot_10_bar__plus_00_dot_50"
    assert world.names[floor_apple] == "apple 3" and world.receptacles_of(floor_apple) == []
    world.step("go to countertop 1")
    assert not any("apple 3" in c for c in world.admissible_commands())
    world.step("take knife 1 from countertop 1")
    # The floor apple lies at the countertop's location; the countertop's apple has a spot of its own.
    assert [c for c in world.admissible_commands() if c.startswith("slice ")] == [
        "slice apple 3 with knife 1"
    ]
    assert world.step("slice apple 3 with knife 1").feedback == "You sliced the apple 3 with the knife 1."
    bedroom = published_world("bedroom", "2.1.2")
    bedroom.step("go to desk 1")
    assert "use desklamp 2" not in bedroom.admissible_commands()  # a lamp in no receptacle cannot be used


@pytest.mark.parametrize("version", ["2.1.1", "2.1.2"])
@pytest.mark.parametrize("game", ["kitchen", "bedroom"])
def test_expert_solves_published_format_games(game, version):
    world = published_world(game, version)
    planner = ExpertPlanner(world)
    commands = []
    for _ in range(30):
        command = planner.next_command()
        if command is None:
            break
        assert command in world.commands(), (commands, command)
        commands.append(command)
        world.step(command)
    assert world.goal_reached(), commands
    # The target objects that sort first lie in no receptacle: the expert went for reachable ones.
    assert not any("apple 3" in c or "cellphone 2" in c or "desklamp 2" in c for c in commands)


def test_expert_answers_look_when_nothing_reachable_leads_to_the_goal():
    unreachable = KITCHEN_PROBLEM.replace(
        "(inReceptacle Apple_bar__plus_00_dot_20_bar__plus_01_dot_10_bar__minus_01_dot_50 "
        "Fridge_bar__plus_01_dot_20_bar__plus_00_dot_00_bar__minus_01_dot_50)",
        "",
    ).replace(
        "(inReceptacle Apple_bar__plus_01_dot_20_bar__plus_00_dot_80_bar__plus_01_dot_00 "
        "CounterTop_bar__plus_00_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00)",
        "",
    )
    world = AlfredWorld(parse_problem(unreachable), KITCHEN_GOAL)
    assert ExpertPlanner(world).next_command() == "look"


def test_expert_never_raises_when_objects_lose_their_receptacles():
    """Whatever no receptacle holds, every command the expert names is admissible (``look`` at worst)."""
    for index in range(20):
        game = generate_game("test", index)
        rng = derive_rng("alfworld-loose-objects", index)
        init = tuple(f for f in game.problem.init if f[0] != "inreceptacle" or rng.random() < 0.5)
        world = AlfredWorld(replace(game.problem, init=init), game.goal_text)
        planner = ExpertPlanner(world)
        for _ in range(50):
            command = planner.next_command()
            if command is None:
                break
            assert command in world.commands(), (game.name, command)
            world.step(command)


# ------------------------------------------------------------------ loader
@pytest.mark.parametrize("folder", ["json_2.1.1", "json_2.1.2"])
def test_loader_reads_both_versions_under_both_folder_names(tmp_path, folder):
    base = write_published_tree(tmp_path, folder)
    for data_dir in (tmp_path, base):
        source = OfficialGames(data_dir)
        assert [source.size(s) for s in ("train", "valid", "test")] == [0, 1, 1]
        assert source.skipped == {  # ALFWorld's own reasons, each counted
            "marked unsolvable": 1,
            "no 'solvable' key in game.tw-pddl": 1,
            "movable receptacle or sliced object (ALFWorld leaves these out)": 1,
        }
    kitchen = source.load(source.task_id("test", 0))
    bedroom = source.load(source.task_id("valid", 0))
    assert kitchen.version is text.RAW_2_1_1 and kitchen.goal_text == KITCHEN_GOAL
    assert bedroom.version is text.PATCHED_2_1_2 and bedroom.task_type == "look_at_obj_in_light"
    env = ALFWorldEnv(split="test", data_dir=tmp_path)
    obs, info = env.reset(seed=0)
    assert obs.endswith(f"Your task is to: {KITCHEN_GOAL}.") and "help" not in info["admissible_actions"]
    obs, *_ = env.step("go to countertop 1")
    assert obs.startswith("You arrive at loc 9. ")
    expert = AlfworldExpert(env)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
        done = terminated or truncated
    assert info["success"]


def test_loader_names_a_game_file_that_is_not_json(tmp_path):
    base = write_published_tree(tmp_path)
    broken = base / "valid_seen" / BEDROOM_NAME / "trial_T20190907_000000_000001" / "game.tw-pddl"
    broken.write_bytes(b'{"pddl_domain": "cut sho')
    with pytest.raises(ValueError, match="game.tw-pddl: not a game.tw-pddl file"):
        OfficialGames(tmp_path)


def test_loader_refuses_a_folder_holding_both_versions(tmp_path):
    write_published_tree(tmp_path, "json_2.1.1")
    shutil.copytree(tmp_path / "json_2.1.1", tmp_path / "json_2.1.2")
    with pytest.raises(ValueError, match="both json_2.1.1 and json_2.1.2"):
        OfficialGames(tmp_path)
    assert OfficialGames(tmp_path / "json_2.1.2").size("test") == 1
    with pytest.raises(FileNotFoundError):
        OfficialGames(tmp_path / "json_2.1.1" / "train" / KITCHEN_NAME)


def test_read_game_of_a_published_file(tmp_path):
    path = tmp_path / "game.tw-pddl"
    path.write_text(json.dumps(published_file("bedroom", "2.1.1")))
    game = read_game(path, BEDROOM_NAME)
    assert game.version is text.RAW_2_1_1 and game.goal_text == BEDROOM_GOAL
    assert game.problem.objects["apple"] == "object"  # every ALFRED class is declared, as published


# --------------------------------------------------------------- generator
def fact_types(problem_init) -> Counter:
    return Counter(fact[0] for fact in problem_init)


def test_generator_makes_every_fact_type_of_the_published_problems():
    published = fact_types(parse_problem(KITCHEN_PROBLEM).init) + fact_types(
        parse_problem(BEDROOM_PROBLEM).init
    )
    generated = Counter()
    for index in range(60):
        generated += fact_types(generate_game("train", index).problem.init)
    assert set(published) <= set(generated), set(published) - set(generated)


def test_generator_places_objects_that_no_receptacle_holds():
    loose_targets = fixtures = own_spots = 0
    for index in range(SPLIT_SIZES["test"]):
        game = generate_game("test", index)
        world = AlfredWorld(game.problem, game.goal_text)
        target = game.name.split("-")[1].lower() + "type"
        for obj, kind in world.object_type.items():
            receptacles = world.receptacles_of(obj)
            spots = {loc for _, loc in world.facts.with_argument("objectatlocation", 0, obj)}
            loose_targets += kind == target and not receptacles
            fixtures += (
                not receptacles and not world.flag("pickupable", obj) and not world.flag("toggleable", obj)
            )
            own_spots += bool(receptacles) and not spots & set(world.receptacle_locations[receptacles[0]])
    # The expert test over every held-out game (tests/envs/alfworld/test_alfworld.py) plays these games to the
    # goal.
    assert loose_targets >= 3 and fixtures > 300 and own_spots > 1000
