"""ALFWorld family: PDDL reading, the native engine's texts and rules, generator, expert, official
loader, env.

The hand-written game below uses the official ``pddl_problem`` layout; the
texts asserted on it are the ones TextWorld prints for the same commands
(``tests/envs/alfworld/test_alfworld_reference.py`` replays it in TextWorld when installed).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import gymnasium as gym
import pytest

pytest.importorskip("alfworld", reason="the alfworld extra (its data files) is not installed")

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.core import ListTaskSource
from agentenvs.core.registration import make_expert
from agentenvs.envs.alfworld import text
from agentenvs.envs.alfworld.env import ALFWorldEnv, progress_potential
from agentenvs.envs.alfworld.expert import AlfworldExpert, ExpertPlanner
from agentenvs.envs.alfworld.goals import goal_targets
from agentenvs.envs.alfworld.official import OfficialGames, goal_text_of, read_game
from agentenvs.envs.alfworld.pddl import FactIndex, holds, parse_formula, parse_problem, parse_sexpr
from agentenvs.envs.alfworld.tasks import (
    SPLIT_SIZES,
    TASK_TYPES,
    GeneratedGames,
    game_file,
    generate_game,
    load_data,
)
from agentenvs.envs.alfworld.world import AlfredWorld

HAND_GOAL = "put a hot apple in countertop"
HAND_PROBLEM = """\
(define (problem plan_trial_T20190101_000000_000000)
    (:domain alfred)
    (:objects
        agent1 - agent
        AppleType - otype
        KnifeType - otype
        MugType - otype
        DeskLampType - otype
        FridgeType - rtype
        MicrowaveType - rtype
        SinkBasinType - rtype
        CounterTopType - rtype
        ShelfType - rtype
        SideTableType - rtype
        Apple_bar__minus_00_dot_50_bar__plus_00_dot_90_bar__plus_01_dot_00 - object
        Apple_bar__plus_01_dot_20_bar__plus_01_dot_00_bar__minus_01_dot_50 - object
        Knife_bar__plus_00_dot_40_bar__plus_00_dot_90_bar__plus_01_dot_00 - object
        Mug_bar__plus_02_dot_00_bar__plus_01_dot_10_bar__plus_02_dot_00 - object
        DeskLamp_bar__plus_03_dot_00_bar__plus_00_dot_70_bar__plus_03_dot_00 - object
        Fridge_bar__plus_01_dot_20_bar__plus_00_dot_00_bar__minus_01_dot_50 - receptacle
        Microwave_bar__plus_00_dot_00_bar__plus_01_dot_50_bar__minus_01_dot_50 - receptacle
        Sink_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__plus_00_dot_00_bar_SinkBasin - receptacle
        CounterTop_bar__plus_00_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00 - receptacle
        Shelf_bar__plus_02_dot_00_bar__plus_01_dot_10_bar__plus_02_dot_00 - receptacle
        Shelf_bar__plus_02_dot_00_bar__plus_01_dot_50_bar__plus_02_dot_00 - receptacle
        SideTable_bar__plus_03_dot_00_bar__plus_00_dot_00_bar__plus_03_dot_00 - receptacle
        loc_bar_0_bar_0_bar_0_bar_30 - location
        loc_bar_4_bar__minus_5_bar_2_bar_30 - location
        loc_bar_0_bar__minus_5_bar_2_bar_0 - location
        loc_bar_4_bar_0_bar_1_bar_45 - location
        loc_bar_0_bar_4_bar_0_bar_45 - location
        loc_bar_8_bar_8_bar_0_bar_30 - location
        loc_bar_12_bar_12_bar_0_bar_45 - location
    )
    (:init
        (= (total-cost) 0)
        (atLocation agent1 loc_bar_0_bar_0_bar_0_bar_30)
        (receptacleType Fridge_bar__plus_01_dot_20_bar__plus_00_dot_00_bar__minus_01_dot_50 FridgeType)
        (receptacleType Microwave_bar__plus_00_dot_00_bar__plus_01_dot_50_bar__minus_01_dot_50 MicrowaveType)
        (receptacleType Sink_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__plus_00_dot_00_bar_SinkBasin SinkBasinType)
        (receptacleType CounterTop_bar__plus_00_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00 CounterTopType)
        (receptacleType Shelf_bar__plus_02_dot_00_bar__plus_01_dot_10_bar__plus_02_dot_00 ShelfType)
        (receptacleType Shelf_bar__plus_02_dot_00_bar__plus_01_dot_50_bar__plus_02_dot_00 ShelfType)
        (receptacleType SideTable_bar__plus_03_dot_00_bar__plus_00_dot_00_bar__plus_03_dot_00 SideTableType)
        (receptacleAtLocation Fridge_bar__plus_01_dot_20_bar__plus_00_dot_00_bar__minus_01_dot_50 loc_bar_4_bar__minus_5_bar_2_bar_30)
        (receptacleAtLocation Microwave_bar__plus_00_dot_00_bar__plus_01_dot_50_bar__minus_01_dot_50 loc_bar_0_bar__minus_5_bar_2_bar_0)
        (receptacleAtLocation Sink_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__plus_00_dot_00_bar_SinkBasin loc_bar_4_bar_0_bar_1_bar_45)
        (receptacleAtLocation CounterTop_bar__plus_00_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00 loc_bar_0_bar_4_bar_0_bar_45)
        (receptacleAtLocation Shelf_bar__plus_02_dot_00_bar__plus_01_dot_10_bar__plus_02_dot_00 loc_bar_8_bar_8_bar_0_bar_30)
        (receptacleAtLocation Shelf_bar__plus_02_dot_00_bar__plus_01_dot_50_bar__plus_02_dot_00 loc_bar_8_bar_8_bar_0_bar_30)
        (receptacleAtLocation SideTable_bar__plus_03_dot_00_bar__plus_00_dot_00_bar__plus_03_dot_00 loc_bar_12_bar_12_bar_0_bar_45)
        (openable Fridge_bar__plus_01_dot_20_bar__plus_00_dot_00_bar__minus_01_dot_50)
        (openable Microwave_bar__plus_00_dot_00_bar__plus_01_dot_50_bar__minus_01_dot_50)
        (objectType Apple_bar__minus_00_dot_50_bar__plus_00_dot_90_bar__plus_01_dot_00 AppleType)
        (objectType Apple_bar__plus_01_dot_20_bar__plus_01_dot_00_bar__minus_01_dot_50 AppleType)
        (objectType Knife_bar__plus_00_dot_40_bar__plus_00_dot_90_bar__plus_01_dot_00 KnifeType)
        (objectType Mug_bar__plus_02_dot_00_bar__plus_01_dot_10_bar__plus_02_dot_00 MugType)
        (objectType DeskLamp_bar__plus_03_dot_00_bar__plus_00_dot_70_bar__plus_03_dot_00 DeskLampType)
        (inReceptacle Apple_bar__minus_00_dot_50_bar__plus_00_dot_90_bar__plus_01_dot_00 CounterTop_bar__plus_00_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (inReceptacle Apple_bar__plus_01_dot_20_bar__plus_01_dot_00_bar__minus_01_dot_50 Fridge_bar__plus_01_dot_20_bar__plus_00_dot_00_bar__minus_01_dot_50)
        (inReceptacle Knife_bar__plus_00_dot_40_bar__plus_00_dot_90_bar__plus_01_dot_00 CounterTop_bar__plus_00_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (inReceptacle Mug_bar__plus_02_dot_00_bar__plus_01_dot_10_bar__plus_02_dot_00 Shelf_bar__plus_02_dot_00_bar__plus_01_dot_10_bar__plus_02_dot_00)
        (inReceptacle DeskLamp_bar__plus_03_dot_00_bar__plus_00_dot_70_bar__plus_03_dot_00 SideTable_bar__plus_03_dot_00_bar__plus_00_dot_00_bar__plus_03_dot_00)
        (objectAtLocation Apple_bar__minus_00_dot_50_bar__plus_00_dot_90_bar__plus_01_dot_00 loc_bar_0_bar_4_bar_0_bar_45)
        (objectAtLocation Apple_bar__plus_01_dot_20_bar__plus_01_dot_00_bar__minus_01_dot_50 loc_bar_4_bar__minus_5_bar_2_bar_30)
        (objectAtLocation Knife_bar__plus_00_dot_40_bar__plus_00_dot_90_bar__plus_01_dot_00 loc_bar_0_bar_4_bar_0_bar_45)
        (objectAtLocation Mug_bar__plus_02_dot_00_bar__plus_01_dot_10_bar__plus_02_dot_00 loc_bar_8_bar_8_bar_0_bar_30)
        (objectAtLocation DeskLamp_bar__plus_03_dot_00_bar__plus_00_dot_70_bar__plus_03_dot_00 loc_bar_12_bar_12_bar_0_bar_45)
        (pickupable Apple_bar__minus_00_dot_50_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (pickupable Apple_bar__plus_01_dot_20_bar__plus_01_dot_00_bar__minus_01_dot_50)
        (pickupable Knife_bar__plus_00_dot_40_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (pickupable Mug_bar__plus_02_dot_00_bar__plus_01_dot_10_bar__plus_02_dot_00)
        (heatable Apple_bar__minus_00_dot_50_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (heatable Apple_bar__plus_01_dot_20_bar__plus_01_dot_00_bar__minus_01_dot_50)
        (heatable Mug_bar__plus_02_dot_00_bar__plus_01_dot_10_bar__plus_02_dot_00)
        (coolable Apple_bar__minus_00_dot_50_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (coolable Apple_bar__plus_01_dot_20_bar__plus_01_dot_00_bar__minus_01_dot_50)
        (coolable Mug_bar__plus_02_dot_00_bar__plus_01_dot_10_bar__plus_02_dot_00)
        (cleanable Apple_bar__minus_00_dot_50_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (cleanable Apple_bar__plus_01_dot_20_bar__plus_01_dot_00_bar__minus_01_dot_50)
        (cleanable Knife_bar__plus_00_dot_40_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (cleanable Mug_bar__plus_02_dot_00_bar__plus_01_dot_10_bar__plus_02_dot_00)
        (sliceable Apple_bar__minus_00_dot_50_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (sliceable Apple_bar__plus_01_dot_20_bar__plus_01_dot_00_bar__minus_01_dot_50)
        (toggleable DeskLamp_bar__plus_03_dot_00_bar__plus_00_dot_70_bar__plus_03_dot_00)
        (isReceptacleObject Mug_bar__plus_02_dot_00_bar__plus_01_dot_10_bar__plus_02_dot_00)
        (canContain FridgeType AppleType)
        (canContain FridgeType MugType)
        (canContain MicrowaveType AppleType)
        (canContain MicrowaveType MugType)
        (canContain SinkBasinType AppleType)
        (canContain SinkBasinType KnifeType)
        (canContain SinkBasinType MugType)
        (canContain CounterTopType AppleType)
        (canContain CounterTopType KnifeType)
        (canContain CounterTopType MugType)
        (canContain ShelfType MugType)
        (canContain SideTableType MugType)
    )
    (:goal
        (and
            (exists (?r - receptacle)
                (exists (?o - object)
                    (and
                        (heatable ?o)
                        (objectType ?o AppleType)
                        (receptacleType ?r CounterTopType)
                        (isHot ?o)
                        (inReceptacle ?o ?r)
                    )
                )
            )
        )
    )
)
"""

# The commands of a scripted walk through the hand game and what TextWorld answers to each.
HAND_SCRIPT = [
    ("look", "You are in the middle of a room. Looking quickly around you, you see nothing."),
    ("inventory", "You are not carrying anything."),
    ("go to shelf 2", "You arrive at shelf 2. On the shelf 2, you see a mug 1."),
    ("look", "You are facing the shelf 2, and shelf 1. Next to it, you see nothing."),
    ("examine shelf 1", "On the shelf 1, you see nothing."),
    ("take mug 1 from shelf 2", "You pick up the mug 1 from the shelf 2."),
    ("examine mug 1", "This is a normal mug 1. In it, you see nothing."),
    ("move mug 1 to shelf 1", "You move the mug 1 to the shelf 1."),
    ("look", "You are facing the shelf 2, and shelf 1. Next to it, you see a mug 1."),
    ("take mug 1 from shelf 1", "You pick up the mug 1 from the shelf 1."),
    ("move mug 1 to shelf 2", "You move the mug 1 to the shelf 2."),
    ("look", "You are facing the shelf 2, and shelf 1. Next to it, you see a mug 1."),
    ("take mug 1 from shelf 2", "You pick up the mug 1 from the shelf 2."),
    ("go to sidetable 1", "You arrive at sidetable 1. On the sidetable 1, you see a desklamp 1."),
    ("use desklamp 1", "You turn on the desklamp 1."),
    ("examine desklamp 1", "Nothing happens."),
    ("use desklamp 1", "You turn on the desklamp 1."),
    ("move mug 1 to sidetable 1", "You move the mug 1 to the sidetable 1."),
    (
        "go to countertop 1",
        "You arrive at countertop 1. On the countertop 1, you see a apple 2, and a knife 1.",
    ),
    ("take knife 1 from countertop 1", "You pick up the knife 1 from the countertop 1."),
    ("slice apple 2 with knife 1", "You sliced the apple 2 with the knife 1."),
    ("inventory", "You are carrying: a knife 1."),
    ("examine knife 1", "There's nothing special about knife 1."),
    ("clean knife 1 with sinkbasin 1", "Nothing happens."),
    ("go to sinkbasin 1", "You arrive at sinkbasin 1. On the sinkbasin 1, you see nothing."),
    ("clean knife 1 with sinkbasin 1", "You clean the knife 1 using the sinkbasin 1."),
    ("examine knife 1", "This is a clean knife 1."),
    ("move knife 1 to sinkbasin 1", "You move the knife 1 to the sinkbasin 1."),
    ("go to fridge 1", "You arrive at fridge 1. The fridge 1 is closed."),
    ("take apple 1 from fridge 1", "Nothing happens."),
    ("open fridge 1", "You open the fridge 1. The fridge 1 is open. In it, you see a apple 1."),
    ("take apple 1 from fridge 1", "You pick up the apple 1 from the fridge 1."),
    ("cool apple 1 with fridge 1", "You cool the apple 1 using the fridge 1."),
    ("examine apple 1", "This is a cold apple 1."),
    ("close fridge 1", "You close the fridge 1."),
    ("go to microwave 1", "You arrive at microwave 1. The microwave 1 is closed."),
    ("heat apple 1 with microwave 1", "You heat the apple 1 using the microwave 1."),
    ("examine apple 1", "This is a hot apple 1."),
    ("go to countertop 1", "You arrive at countertop 1. On the countertop 1, you see a apple 2."),
    ("slice apple 2 with knife 1", "Nothing happens."),
    ("move apple 1 to countertop 1", "You move the apple 1 to the countertop 1."),
]
HAND_INTRO = (
    "-= Welcome to TextWorld, ALFRED! =-\n\n"
    "You are in the middle of a room. Looking quickly around you, you see "
    "a countertop 1, a fridge 1, a microwave 1, a shelf 2, a shelf 1, a sidetable 1, and a sinkbasin 1.\n\n"
    "Your task is to: put a hot apple in countertop."
)


def hand_world() -> AlfredWorld:
    return AlfredWorld(parse_problem(HAND_PROBLEM), HAND_GOAL)


def hand_game_file() -> dict:
    data = load_data()
    return {
        "pddl_domain": data.domain,
        "grammar": data.grammar.replace("UNKNOWN GOAL", HAND_GOAL),
        "pddl_problem": HAND_PROBLEM,
        "solvable": True,
    }


# ------------------------------------------------------------------- PDDL
def test_problem_reading_lowercases_and_drops_numeric_fluents():
    problem = parse_problem(HAND_PROBLEM)
    assert problem.objects["agent1"] == "agent"
    assert problem.objects["loc_bar_8_bar_8_bar_0_bar_30"] == "location"
    assert ("atlocation", "agent1", "loc_bar_0_bar_0_bar_0_bar_30") in problem.init
    assert all(fact[0] != "=" for fact in problem.init)
    assert problem.goal[0] == "and"


def test_goal_formulas_join_exists_not_equal_and_forall():
    facts = FactIndex({"a": "object", "b": "object", "r": "receptacle", "t": "otype"})
    for obj in ("a", "b"):
        facts.add("objecttype", obj, "t")
    facts.add("inreceptacle", "a", "r")
    two = parse_formula(
        parse_sexpr(
            "(exists (?r - receptacle ?o1 - object) (and (inreceptacle ?o1 ?r) (objecttype ?o1 t)"
            " (exists (?o2 - object) (and (not (= ?o1 ?o2)) (objecttype ?o2 t) (inreceptacle ?o2 ?r)))))"
        )[0]
    )
    assert not holds(two, facts)
    facts.add("inreceptacle", "b", "r")
    assert holds(two, facts)
    every = parse_formula(parse_sexpr("(forall (?o - object) (inreceptacle ?o r))")[0])
    assert not holds(every, facts)  # ``object`` is the root type: the receptacle is an object too
    typed_every = parse_formula(
        parse_sexpr("(forall (?o - object) (or (not (objecttype ?o t)) (inreceptacle ?o r)))")[0]
    )
    assert holds(typed_every, facts)


# ------------------------------------------------------------------- text
def test_list_rule_and_demangled_names():
    assert text.listing([]) == "nothing"
    assert text.listing(["a x"]) == "a x"
    assert text.listing(["a x", "a y", "a z"]) == "a x, a y, and a z"
    names = text.demangled_names(
        ["cabinet_bar__plus_01", "cabinet_bar__minus_02", "sink_bar__plus_01_bar_sinkbasin", "agent1"]
    )
    # Sorted ids are numbered from the highest down, as ALFWorld's demangler numbers them.
    assert names["cabinet_bar__minus_02"] == "cabinet 2" and names["cabinet_bar__plus_01"] == "cabinet 1"
    assert names["sink_bar__plus_01_bar_sinkbasin"] == "sinkbasin 1"
    assert (
        text.mangle("Sink|-01.90|+00.97|-01.50|SinkBasin")
        == "Sink_bar__minus_01_dot_90_bar__plus_00_dot_97_bar__minus_01_dot_50_bar_SinkBasin"
    )


# ------------------------------------------------------------------ world
def test_hand_game_texts_match_textworld_turn_by_turn():
    world = hand_world()
    assert world.intro() == HAND_INTRO
    for command, expected in HAND_SCRIPT:
        assert world.step(command).feedback == expected, command
    assert world.goal_reached()


def test_admissible_commands_are_the_applicable_grounded_actions():
    world = hand_world()
    assert world.admissible_commands() == [
        "go to countertop 1",
        "go to fridge 1",
        "go to microwave 1",
        "go to shelf 1",
        "go to shelf 2",
        "go to sidetable 1",
        "go to sinkbasin 1",
        "help",
        "inventory",
        "look",
    ]
    world.step("go to shelf 2")
    at_shelves = world.admissible_commands()
    # Both shelves stand where the agent now is: going to either changes nothing, so neither is offered.
    assert "go to shelf 1" not in at_shelves and "go to shelf 2" not in at_shelves
    assert {"examine shelf 1", "examine shelf 2", "take mug 1 from shelf 2"} <= set(at_shelves)
    assert "examine mug 1" not in at_shelves  # objects are examinable only in hand
    world.step("take mug 1 from shelf 2")
    held = world.admissible_commands()
    assert {"examine mug 1", "move mug 1 to shelf 1", "move mug 1 to shelf 2"} <= set(held)
    assert not any(c.startswith("take ") for c in held)  # hands full
    assert held == sorted(set(held))


def test_inadmissible_commands_change_nothing():
    world = hand_world()
    before = world.key_data()
    for command in ("take apple 1 from fridge 1", "go to the moon", "", "LOOK", "open fridge 1"):
        outcome = world.step(command)
        assert outcome.feedback == "Nothing happens." and not outcome.changed
    assert world.key_data() == before


def test_state_key_data_merges_paths_to_the_same_state():
    one, two = hand_world(), hand_world()
    for command in ("go to fridge 1", "open fridge 1", "close fridge 1"):
        one.step(command)
    two.step("go to fridge 1")
    assert one.key_data() == two.key_data()
    two.step("open fridge 1")
    assert one.key_data() != two.key_data()


# -------------------------------------------------------------- generator
def test_generated_splits_sizes_ids_and_scenes():
    source = GeneratedGames()
    assert {split: source.size(split) for split in ("train", "valid", "test")} == SPLIT_SIZES
    assert source.task_id("valid", 7) == "valid-0007"
    data = load_data()
    scenes = {
        split: {int(generate_game(split, i).name.rsplit("-", 1)[1]) for i in range(40)}
        for split in ("train", "valid", "test")
    }
    assert scenes["train"] <= set(data.train_scenes)
    assert scenes["valid"] | scenes["test"] <= set(data.held_out_scenes)
    assert not scenes["valid"] & scenes["test"]
    with pytest.raises(ValueError):
        source.load("train-9999")


def test_generation_is_deterministic_and_covers_every_task_type():
    first = generate_game.__wrapped__("train", 11)
    again = generate_game.__wrapped__("train", 11)
    assert first == again and first.problem == again.problem
    # The generator's problem is exactly what its game file says.
    assert parse_problem(first.problem_text) == first.problem
    kinds = {generate_game("train", i).task_type for i in range(60)}
    assert kinds == set(TASK_TYPES)


def test_generated_games_start_unsolved_with_consistent_facts():
    for index in range(30):
        game = generate_game("train", index)
        world = AlfredWorld(game.problem, game.goal_text)
        assert not world.goal_reached()
        assert world.intro().startswith(
            "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room."
        )
        assert world.intro().endswith(f"Your task is to: {game.goal_text}.")
        for obj in world.object_type:
            assert len(world.receptacles_of(obj)) <= 1
            assert len(world.facts.with_argument("objectatlocation", 0, obj)) == 1


@pytest.mark.parametrize("split", ["valid", "test"])
def test_expert_solves_every_held_out_game(split):
    for index in range(SPLIT_SIZES[split]):
        game = generate_game(split, index)
        world = AlfredWorld(game.problem, game.goal_text)
        planner = ExpertPlanner(world)
        for _ in range(50):
            command = planner.next_command()
            if command is None:
                break
            assert command in world.commands(), (game.name, command)
            world.step(command)
        assert world.goal_reached(), game.name


@pytest.mark.slow
def test_expert_solves_every_training_game():
    for index in range(SPLIT_SIZES["train"]):
        game = generate_game("train", index)
        world = AlfredWorld(game.problem, game.goal_text)
        planner = ExpertPlanner(world)
        while (command := planner.next_command()) is not None:
            world.step(command)
        assert world.goal_reached(), game.name


def test_goal_targets_of_each_goal_shape():
    shapes = {generate_game("train", i).task_type: generate_game("train", i) for i in range(60)}
    two = goal_targets(shapes["pick_two_obj_and_place"].problem.goal)
    assert two.count == 2 and two.lamp_type is None
    lamp = goal_targets(shapes["look_at_obj_in_light"].problem.goal)
    assert lamp.lamp_type in ("desklamptype", "floorlamptype") and lamp.receptacle_type is None
    assert goal_targets(shapes["pick_heat_then_place_in_recep"].problem.goal).state == "ishot"


# ---------------------------------------------------------------- official
def write_official_tree(root: Path) -> None:
    """A json_2.1.1 tree: the hand game, two generated games, one unsolvable game, one of another task
    type."""
    base = root / "json_2.1.1"
    entries = [
        ("train", "pick_heat_then_place_in_recep-Apple-None-CounterTop-7", hand_game_file()),
        ("valid_seen", None, game_file(generate_game("valid", 0))),
        ("valid_unseen", None, game_file(generate_game("test", 0))),
    ]
    names = {"valid_seen": generate_game("valid", 0).name, "valid_unseen": generate_game("test", 0).name}
    for folder, name, content in entries:
        trial = base / folder / (name or names[folder]) / "trial_T20190906_000000_000000"
        trial.mkdir(parents=True)
        (trial / "game.tw-pddl").write_text(json.dumps(content))
        (trial / "traj_data.json").write_text("{}")
    broken = base / "train" / "pick_and_place_simple-Mug-None-Shelf-8" / "trial_T20190906_000001_000000"
    broken.mkdir(parents=True)
    (broken / "game.tw-pddl").write_text(json.dumps({**hand_game_file(), "solvable": False}))
    other_type = (
        base
        / "train"
        / "pick_and_place_with_movable_recep-Apple-Bowl-Fridge-8"
        / "trial_T20190906_000002_000000"
    )
    other_type.mkdir(parents=True)
    (other_type / "game.tw-pddl").write_text(json.dumps(hand_game_file()))


def test_official_games_load_into_the_native_engine(tmp_path):
    write_official_tree(tmp_path)
    source = OfficialGames(tmp_path)
    assert [source.size(s) for s in ("train", "valid", "test")] == [1, 1, 1]
    task_id = source.task_id("train", 0)
    assert (
        task_id == "train/pick_heat_then_place_in_recep-Apple-None-CounterTop-7/trial_T20190906_000000_000000"
    )
    game = source.load(task_id)
    assert game.task_type == "pick_heat_then_place_in_recep" and game.goal_text == HAND_GOAL
    env = ALFWorldEnv(data_dir=tmp_path)
    obs, info = env.reset(seed=0)
    assert obs == HAND_INTRO
    for command, expected in HAND_SCRIPT[:-1]:
        obs, *_ = env.step(command)
        # after ALFWorld's "Nothing happens." the env lists what is admissible (unchanged state)
        assert obs == (f"{expected}\n{env.action_help()}" if expected == "Nothing happens." else expected)
    obs, _, terminated, _, info = env.step("move apple 1 to countertop 1")
    assert terminated and info["success"] and info["score"] == 1.0
    with pytest.raises(ValueError):
        source.load("train/../../etc/trial")
    assert read_game(tmp_path / "json_2.1.1" / task_id / "game.tw-pddl", "x-y").goal_text == HAND_GOAL


def test_task_sentence_is_read_from_the_grammar():
    grammar = load_data().grammar.replace("UNKNOWN GOAL", "put the chef's clean mug in cabinet 2.5")
    assert goal_text_of(grammar) == "put the chef's clean mug in cabinet 2.5"
    with pytest.raises(ValueError):
        goal_text_of("grammar :: {}")


# --------------------------------------------------------------------- env
def hand_env(**kwargs) -> ALFWorldEnv:
    from agentenvs.envs.alfworld.tasks import Game

    game = Game.from_text(
        "pick_heat_then_place_in_recep-Apple-None-CounterTop-7",
        "pick_heat_then_place_in_recep",
        HAND_GOAL,
        HAND_PROBLEM,
    )
    source = ListTaskSource({"train": [("hand", game)], "valid": [], "test": []})
    return ALFWorldEnv(task_source=source, **kwargs)


def test_rewards_outcome_progress_invalid_and_format():
    env = hand_env()
    _, info = env.reset(seed=0)
    start = progress_potential(env.world, env._targets)
    _, reward, _, _, info = env.step("jump")
    assert info["reward_components"]["invalid_action"] == 1.0 and math.isclose(reward, -0.1)
    obs, *_ = env.step("<action>take apple 1 from fridge 1</action>")
    assert obs == f"Nothing happens.\n{env.action_help()}"
    assert (
        env.action_help() == f"Admissible commands (case-sensitive): {', '.join(env.admissible_actions())}."
    )
    total_progress = 0.0
    expert = AlfworldExpert(env)
    obs, info = env.reset(seed=0)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
        total_progress += info["reward_components"]["progress"]
        assert info["reward_components"]["format"] == 1.0
        done = terminated or truncated
    assert terminated and info["success"] and info["reward_components"]["outcome"] == 1.0
    assert math.isclose(total_progress, 1.0 - start)
    assert info["privileged"]["task_type"] == "pick_heat_then_place_in_recep"


def test_max_turns_truncates_at_fifty():
    env = hand_env()
    env.reset(seed=0)
    for _ in range(50):
        _, _, terminated, truncated, info = env.step("look")
    assert truncated and not terminated and info["turn"] == 50 and info["success"] is False


def test_gym_make_runs_the_expert_to_success():
    env = gym.make("agentenvs/ALFWorld-v0", split="test")
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        expert = make_expert(env)
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
            done = terminated or truncated
        assert info["success"], info["task_id"]


def test_a_reused_env_gives_every_task_the_keys_of_a_fresh_env():
    """Resets keep each game's static-facts digest; going back to a game must give the same keys."""

    def keys_of(env: ALFWorldEnv, seed: int) -> list[str]:
        obs, info = env.reset(seed=seed)
        expert, keys, done = AlfworldExpert(env), [info["state_key"]], False
        while not done:
            obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
            keys.append(info["state_key"])
            done = terminated or truncated
        return keys

    reused = ALFWorldEnv(split="test")
    seeds = [0, 1, 0, 2, 1, 0]
    played = [keys_of(reused, seed) for seed in seeds]
    fresh = [keys_of(ALFWorldEnv(split="test"), seed) for seed in seeds]
    assert played == fresh
    assert len({keys[0] for keys in played}) == 3  # three different games
