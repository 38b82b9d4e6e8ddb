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
``tests/test_alfworld_reference.py`` replays both in TextWorld; the texts
asserted here are the ones TextWorld prints.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("alfworld", reason="the alfworld extra (its data files) is not installed")

from agentenvs.alfworld import text
from agentenvs.alfworld.env import ALFWorldEnv
from agentenvs.alfworld.expert import AlfworldExpert, ExpertPlanner
from agentenvs.alfworld.generator import SPLIT_SIZES, game_file, generate_game, load_data
from agentenvs.alfworld.official import OfficialGames, file_version, read_game
from agentenvs.alfworld.pddl import PddlError, parse_problem
from agentenvs.alfworld.world import AlfredWorld
from agentenvs.core import derive_rng

# ------------------------------------------------------------ the problems
KITCHEN_GOAL = "put a cool apple in diningtable"
KITCHEN_NAME = "pick_cool_then_place_in_recep-Apple-None-DiningTable-10"
KITCHEN_OBJECTS = """\
        Apple_bar__minus_01_dot_00_bar__plus_00_dot_10_bar__plus_00_dot_50 - object
        Apple_bar__plus_00_dot_20_bar__plus_01_dot_10_bar__minus_01_dot_50 - object
        Apple_bar__plus_01_dot_20_bar__plus_00_dot_80_bar__plus_01_dot_00 - object
        Bowl_bar__plus_00_dot_10_bar__plus_00_dot_90_bar__plus_01_dot_10 - object
        Chair_bar__plus_02_dot_80_bar__plus_00_dot_00_bar__plus_02_dot_50 - object
        Egg_bar__plus_00_dot_10_bar__plus_00_dot_95_bar__plus_01_dot_10 - object
        Knife_bar__plus_00_dot_40_bar__plus_00_dot_90_bar__plus_01_dot_00 - object
        LightSwitch_bar__plus_03_dot_00_bar__plus_01_dot_30_bar__plus_03_dot_20 - object
        Sink_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__plus_00_dot_00 - object
        Window_bar__plus_02_dot_00_bar__plus_01_dot_50_bar__plus_03_dot_00 - object
        Cabinet_bar__minus_01_dot_00_bar__plus_00_dot_50_bar__minus_02_dot_00 - receptacle
        CounterTop_bar__plus_00_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00 - receptacle
        DiningTable_bar__plus_03_dot_00_bar__plus_00_dot_00_bar__plus_03_dot_00 - receptacle
        Fridge_bar__plus_01_dot_20_bar__plus_00_dot_00_bar__minus_01_dot_50 - receptacle
        Microwave_bar__plus_00_dot_00_bar__plus_01_dot_50_bar__minus_01_dot_50 - receptacle
        Sink_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__plus_00_dot_00_bar_SinkBasin - receptacle
        loc_bar_0_bar_4_bar_0_bar_45 - location
        loc_bar_1_bar_4_bar_0_bar_45 - location
        loc_bar_0_bar_3_bar_0_bar_45 - location
        loc_bar_4_bar__minus_5_bar_2_bar_30 - location
        loc_bar_0_bar__minus_5_bar_2_bar_0 - location
        loc_bar_4_bar_0_bar_1_bar_45 - location
        loc_bar_12_bar_12_bar_0_bar_45 - location
        loc_bar__minus_4_bar__minus_8_bar_2_bar_30 - location
        loc_bar_8_bar_10_bar_0_bar_0 - location
        loc_bar_6_bar_2_bar_3_bar_30 - location
"""
KITCHEN_INIT = """\
        (receptacleType Cabinet_bar__minus_01_dot_00_bar__plus_00_dot_50_bar__minus_02_dot_00 CabinetType)
        (receptacleType CounterTop_bar__plus_00_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00 CounterTopType)
        (receptacleType DiningTable_bar__plus_03_dot_00_bar__plus_00_dot_00_bar__plus_03_dot_00 DiningTableType)
        (receptacleType Fridge_bar__plus_01_dot_20_bar__plus_00_dot_00_bar__minus_01_dot_50 FridgeType)
        (receptacleType Microwave_bar__plus_00_dot_00_bar__plus_01_dot_50_bar__minus_01_dot_50 MicrowaveType)
        (receptacleType Sink_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__plus_00_dot_00_bar_SinkBasin SinkBasinType)
        (objectType Apple_bar__minus_01_dot_00_bar__plus_00_dot_10_bar__plus_00_dot_50 AppleType)
        (objectType Apple_bar__plus_00_dot_20_bar__plus_01_dot_10_bar__minus_01_dot_50 AppleType)
        (objectType Apple_bar__plus_01_dot_20_bar__plus_00_dot_80_bar__plus_01_dot_00 AppleType)
        (objectType Bowl_bar__plus_00_dot_10_bar__plus_00_dot_90_bar__plus_01_dot_10 BowlType)
        (objectType Chair_bar__plus_02_dot_80_bar__plus_00_dot_00_bar__plus_02_dot_50 ChairType)
        (objectType Egg_bar__plus_00_dot_10_bar__plus_00_dot_95_bar__plus_01_dot_10 EggType)
        (objectType Knife_bar__plus_00_dot_40_bar__plus_00_dot_90_bar__plus_01_dot_00 KnifeType)
        (objectType LightSwitch_bar__plus_03_dot_00_bar__plus_01_dot_30_bar__plus_03_dot_20 LightSwitchType)
        (objectType Sink_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__plus_00_dot_00 SinkType)
        (objectType Window_bar__plus_02_dot_00_bar__plus_01_dot_50_bar__plus_03_dot_00 WindowType)
        (canContain CabinetType BowlType)
        (canContain CounterTopType AppleType)
        (canContain CounterTopType BowlType)
        (canContain CounterTopType EggType)
        (canContain CounterTopType KnifeType)
        (canContain DiningTableType AppleType)
        (canContain DiningTableType BowlType)
        (canContain DiningTableType KnifeType)
        (canContain FridgeType AppleType)
        (canContain FridgeType BowlType)
        (canContain FridgeType EggType)
        (canContain MicrowaveType AppleType)
        (canContain MicrowaveType BowlType)
        (canContain MicrowaveType EggType)
        (canContain SinkBasinType AppleType)
        (canContain SinkBasinType BowlType)
        (canContain SinkBasinType EggType)
        (canContain SinkBasinType KnifeType)
        (pickupable Apple_bar__minus_01_dot_00_bar__plus_00_dot_10_bar__plus_00_dot_50)
        (pickupable Apple_bar__plus_00_dot_20_bar__plus_01_dot_10_bar__minus_01_dot_50)
        (pickupable Apple_bar__plus_01_dot_20_bar__plus_00_dot_80_bar__plus_01_dot_00)
        (pickupable Bowl_bar__plus_00_dot_10_bar__plus_00_dot_90_bar__plus_01_dot_10)
        (pickupable Egg_bar__plus_00_dot_10_bar__plus_00_dot_95_bar__plus_01_dot_10)
        (pickupable Knife_bar__plus_00_dot_40_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (isReceptacleObject Bowl_bar__plus_00_dot_10_bar__plus_00_dot_90_bar__plus_01_dot_10)
        (openable Cabinet_bar__minus_01_dot_00_bar__plus_00_dot_50_bar__minus_02_dot_00)
        (openable Fridge_bar__plus_01_dot_20_bar__plus_00_dot_00_bar__minus_01_dot_50)
        (openable Microwave_bar__plus_00_dot_00_bar__plus_01_dot_50_bar__minus_01_dot_50)
        (atLocation agent1 loc_bar_6_bar_2_bar_3_bar_30)
        (cleanable Apple_bar__minus_01_dot_00_bar__plus_00_dot_10_bar__plus_00_dot_50)
        (cleanable Apple_bar__plus_00_dot_20_bar__plus_01_dot_10_bar__minus_01_dot_50)
        (cleanable Apple_bar__plus_01_dot_20_bar__plus_00_dot_80_bar__plus_01_dot_00)
        (cleanable Bowl_bar__plus_00_dot_10_bar__plus_00_dot_90_bar__plus_01_dot_10)
        (cleanable Egg_bar__plus_00_dot_10_bar__plus_00_dot_95_bar__plus_01_dot_10)
        (cleanable Knife_bar__plus_00_dot_40_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (heatable Apple_bar__minus_01_dot_00_bar__plus_00_dot_10_bar__plus_00_dot_50)
        (heatable Apple_bar__plus_00_dot_20_bar__plus_01_dot_10_bar__minus_01_dot_50)
        (heatable Apple_bar__plus_01_dot_20_bar__plus_00_dot_80_bar__plus_01_dot_00)
        (heatable Egg_bar__plus_00_dot_10_bar__plus_00_dot_95_bar__plus_01_dot_10)
        (coolable Apple_bar__minus_01_dot_00_bar__plus_00_dot_10_bar__plus_00_dot_50)
        (coolable Apple_bar__plus_00_dot_20_bar__plus_01_dot_10_bar__minus_01_dot_50)
        (coolable Apple_bar__plus_01_dot_20_bar__plus_00_dot_80_bar__plus_01_dot_00)
        (coolable Bowl_bar__plus_00_dot_10_bar__plus_00_dot_90_bar__plus_01_dot_10)
        (coolable Egg_bar__plus_00_dot_10_bar__plus_00_dot_95_bar__plus_01_dot_10)
        (isCool Apple_bar__plus_00_dot_20_bar__plus_01_dot_10_bar__minus_01_dot_50)
        (sliceable Apple_bar__minus_01_dot_00_bar__plus_00_dot_10_bar__plus_00_dot_50)
        (sliceable Apple_bar__plus_00_dot_20_bar__plus_01_dot_10_bar__minus_01_dot_50)
        (sliceable Apple_bar__plus_01_dot_20_bar__plus_00_dot_80_bar__plus_01_dot_00)
        (sliceable Egg_bar__plus_00_dot_10_bar__plus_00_dot_95_bar__plus_01_dot_10)
        (inReceptacle Apple_bar__plus_00_dot_20_bar__plus_01_dot_10_bar__minus_01_dot_50 Fridge_bar__plus_01_dot_20_bar__plus_00_dot_00_bar__minus_01_dot_50)
        (inReceptacle Apple_bar__plus_01_dot_20_bar__plus_00_dot_80_bar__plus_01_dot_00 CounterTop_bar__plus_00_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (inReceptacle Bowl_bar__plus_00_dot_10_bar__plus_00_dot_90_bar__plus_01_dot_10 CounterTop_bar__plus_00_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (inReceptacle Egg_bar__plus_00_dot_10_bar__plus_00_dot_95_bar__plus_01_dot_10 CounterTop_bar__plus_00_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (inReceptacleObject Egg_bar__plus_00_dot_10_bar__plus_00_dot_95_bar__plus_01_dot_10 Bowl_bar__plus_00_dot_10_bar__plus_00_dot_90_bar__plus_01_dot_10)
        (inReceptacle Knife_bar__plus_00_dot_40_bar__plus_00_dot_90_bar__plus_01_dot_00 CounterTop_bar__plus_00_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00)
        (receptacleAtLocation Cabinet_bar__minus_01_dot_00_bar__plus_00_dot_50_bar__minus_02_dot_00 loc_bar__minus_4_bar__minus_8_bar_2_bar_30)
        (receptacleAtLocation CounterTop_bar__plus_00_dot_00_bar__plus_00_dot_90_bar__plus_01_dot_00 loc_bar_0_bar_4_bar_0_bar_45)
        (receptacleAtLocation DiningTable_bar__plus_03_dot_00_bar__plus_00_dot_00_bar__plus_03_dot_00 loc_bar_12_bar_12_bar_0_bar_45)
        (receptacleAtLocation Fridge_bar__plus_01_dot_20_bar__plus_00_dot_00_bar__minus_01_dot_50 loc_bar_4_bar__minus_5_bar_2_bar_30)
        (receptacleAtLocation Microwave_bar__plus_00_dot_00_bar__plus_01_dot_50_bar__minus_01_dot_50 loc_bar_0_bar__minus_5_bar_2_bar_0)
        (receptacleAtLocation Sink_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__plus_00_dot_00_bar_SinkBasin loc_bar_4_bar_0_bar_1_bar_45)
        (objectAtLocation Apple_bar__minus_01_dot_00_bar__plus_00_dot_10_bar__plus_00_dot_50 loc_bar_0_bar_4_bar_0_bar_45)
        (objectAtLocation Apple_bar__plus_00_dot_20_bar__plus_01_dot_10_bar__minus_01_dot_50 loc_bar_4_bar__minus_5_bar_2_bar_30)
        (objectAtLocation Apple_bar__plus_01_dot_20_bar__plus_00_dot_80_bar__plus_01_dot_00 loc_bar_1_bar_4_bar_0_bar_45)
        (objectAtLocation Bowl_bar__plus_00_dot_10_bar__plus_00_dot_90_bar__plus_01_dot_10 loc_bar_0_bar_3_bar_0_bar_45)
        (objectAtLocation Chair_bar__plus_02_dot_80_bar__plus_00_dot_00_bar__plus_02_dot_50 loc_bar_12_bar_12_bar_0_bar_45)
        (objectAtLocation Egg_bar__plus_00_dot_10_bar__plus_00_dot_95_bar__plus_01_dot_10 loc_bar_0_bar_3_bar_0_bar_45)
        (objectAtLocation Knife_bar__plus_00_dot_40_bar__plus_00_dot_90_bar__plus_01_dot_00 loc_bar_0_bar_4_bar_0_bar_45)
        (objectAtLocation LightSwitch_bar__plus_03_dot_00_bar__plus_01_dot_30_bar__plus_03_dot_20 loc_bar_12_bar_12_bar_0_bar_45)
        (objectAtLocation Sink_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__plus_00_dot_00 loc_bar_4_bar_0_bar_1_bar_45)
        (objectAtLocation Window_bar__plus_02_dot_00_bar__plus_01_dot_50_bar__plus_03_dot_00 loc_bar_8_bar_10_bar_0_bar_0)
"""
KITCHEN_GOAL_PDDL = """\
        (:goal
            (and
                (exists (?r - receptacle)
                    (exists (?o - object)
                        (and
                            (coolable ?o)
                            (objectType ?o AppleType)
                            (receptacleType ?r DiningTableType)
                            (isCool ?o)
                            (inReceptacle ?o ?r)
                        )
                    )
                )
            )
        )
"""

BEDROOM_GOAL = "look at cellphone under the desklamp"
BEDROOM_NAME = "look_at_obj_in_light-CellPhone-None-DeskLamp-310"
BEDROOM_OBJECTS = """\
        Blinds_bar__plus_02_dot_50_bar__plus_02_dot_00_bar__minus_01_dot_00 - object
        CellPhone_bar__minus_01_dot_50_bar__plus_00_dot_00_bar__plus_01_dot_00 - object
        CellPhone_bar__plus_01_dot_00_bar__plus_00_dot_60_bar__plus_01_dot_00 - object
        DeskLamp_bar__minus_00_dot_50_bar__plus_00_dot_70_bar__plus_02_dot_00 - object
        DeskLamp_bar__plus_02_dot_00_bar__plus_00_dot_70_bar__plus_02_dot_00 - object
        Pillow_bar__minus_02_dot_00_bar__plus_00_dot_60_bar__minus_01_dot_00 - object
        Bed_bar__minus_02_dot_00_bar__plus_00_dot_00_bar__minus_01_dot_00 - receptacle
        Desk_bar__minus_00_dot_50_bar__plus_00_dot_00_bar__plus_02_dot_00 - receptacle
        Drawer_bar__plus_01_dot_00_bar__plus_00_dot_60_bar__plus_01_dot_00 - receptacle
        SideTable_bar__plus_02_dot_00_bar__plus_00_dot_00_bar__plus_02_dot_00 - receptacle
        loc_bar__minus_8_bar__minus_2_bar_3_bar_45 - location
        loc_bar__minus_2_bar_6_bar_0_bar_45 - location
        loc_bar_4_bar_2_bar_1_bar_30 - location
        loc_bar_8_bar_6_bar_0_bar_45 - location
        loc_bar__minus_6_bar_4_bar_3_bar_60 - location
        loc_bar__minus_2_bar_7_bar_0_bar_30 - location
        loc_bar_10_bar__minus_4_bar_1_bar_0 - location
        loc_bar_0_bar_0_bar_2_bar_30 - location
"""
BEDROOM_INIT = """\
        (receptacleType Bed_bar__minus_02_dot_00_bar__plus_00_dot_00_bar__minus_01_dot_00 BedType)
        (receptacleType Desk_bar__minus_00_dot_50_bar__plus_00_dot_00_bar__plus_02_dot_00 DeskType)
        (receptacleType Drawer_bar__plus_01_dot_00_bar__plus_00_dot_60_bar__plus_01_dot_00 DrawerType)
        (receptacleType SideTable_bar__plus_02_dot_00_bar__plus_00_dot_00_bar__plus_02_dot_00 SideTableType)
        (objectType Blinds_bar__plus_02_dot_50_bar__plus_02_dot_00_bar__minus_01_dot_00 BlindsType)
        (objectType CellPhone_bar__minus_01_dot_50_bar__plus_00_dot_00_bar__plus_01_dot_00 CellPhoneType)
        (objectType CellPhone_bar__plus_01_dot_00_bar__plus_00_dot_60_bar__plus_01_dot_00 CellPhoneType)
        (objectType DeskLamp_bar__minus_00_dot_50_bar__plus_00_dot_70_bar__plus_02_dot_00 DeskLampType)
        (objectType DeskLamp_bar__plus_02_dot_00_bar__plus_00_dot_70_bar__plus_02_dot_00 DeskLampType)
        (objectType Pillow_bar__minus_02_dot_00_bar__plus_00_dot_60_bar__minus_01_dot_00 PillowType)
        (canContain BedType CellPhoneType)
        (canContain BedType PillowType)
        (canContain DeskType CellPhoneType)
        (canContain DeskType DeskLampType)
        (canContain DrawerType CellPhoneType)
        (canContain SideTableType CellPhoneType)
        (canContain SideTableType DeskLampType)
        (pickupable CellPhone_bar__minus_01_dot_50_bar__plus_00_dot_00_bar__plus_01_dot_00)
        (pickupable CellPhone_bar__plus_01_dot_00_bar__plus_00_dot_60_bar__plus_01_dot_00)
        (pickupable Pillow_bar__minus_02_dot_00_bar__plus_00_dot_60_bar__minus_01_dot_00)
        (openable Drawer_bar__plus_01_dot_00_bar__plus_00_dot_60_bar__plus_01_dot_00)
        (atLocation agent1 loc_bar_0_bar_0_bar_2_bar_30)
        (toggleable DeskLamp_bar__minus_00_dot_50_bar__plus_00_dot_70_bar__plus_02_dot_00)
        (toggleable DeskLamp_bar__plus_02_dot_00_bar__plus_00_dot_70_bar__plus_02_dot_00)
        (isOn DeskLamp_bar__plus_02_dot_00_bar__plus_00_dot_70_bar__plus_02_dot_00)
        (inReceptacle CellPhone_bar__plus_01_dot_00_bar__plus_00_dot_60_bar__plus_01_dot_00 Drawer_bar__plus_01_dot_00_bar__plus_00_dot_60_bar__plus_01_dot_00)
        (inReceptacle DeskLamp_bar__plus_02_dot_00_bar__plus_00_dot_70_bar__plus_02_dot_00 SideTable_bar__plus_02_dot_00_bar__plus_00_dot_00_bar__plus_02_dot_00)
        (inReceptacle Pillow_bar__minus_02_dot_00_bar__plus_00_dot_60_bar__minus_01_dot_00 Bed_bar__minus_02_dot_00_bar__plus_00_dot_00_bar__minus_01_dot_00)
        (receptacleAtLocation Bed_bar__minus_02_dot_00_bar__plus_00_dot_00_bar__minus_01_dot_00 loc_bar__minus_8_bar__minus_2_bar_3_bar_45)
        (receptacleAtLocation Desk_bar__minus_00_dot_50_bar__plus_00_dot_00_bar__plus_02_dot_00 loc_bar__minus_2_bar_6_bar_0_bar_45)
        (receptacleAtLocation Drawer_bar__plus_01_dot_00_bar__plus_00_dot_60_bar__plus_01_dot_00 loc_bar_4_bar_2_bar_1_bar_30)
        (receptacleAtLocation SideTable_bar__plus_02_dot_00_bar__plus_00_dot_00_bar__plus_02_dot_00 loc_bar_8_bar_6_bar_0_bar_45)
        (objectAtLocation Blinds_bar__plus_02_dot_50_bar__plus_02_dot_00_bar__minus_01_dot_00 loc_bar_10_bar__minus_4_bar_1_bar_0)
        (objectAtLocation CellPhone_bar__minus_01_dot_50_bar__plus_00_dot_00_bar__plus_01_dot_00 loc_bar__minus_6_bar_4_bar_3_bar_60)
        (objectAtLocation CellPhone_bar__plus_01_dot_00_bar__plus_00_dot_60_bar__plus_01_dot_00 loc_bar_4_bar_2_bar_1_bar_30)
        (objectAtLocation DeskLamp_bar__minus_00_dot_50_bar__plus_00_dot_70_bar__plus_02_dot_00 loc_bar__minus_2_bar_7_bar_0_bar_30)
        (objectAtLocation DeskLamp_bar__plus_02_dot_00_bar__plus_00_dot_70_bar__plus_02_dot_00 loc_bar_8_bar_6_bar_0_bar_45)
        (objectAtLocation Pillow_bar__minus_02_dot_00_bar__plus_00_dot_60_bar__minus_01_dot_00 loc_bar__minus_8_bar__minus_2_bar_3_bar_45)
"""
BEDROOM_GOAL_PDDL = """\
        (:goal
             (and
                 (exists (?ot - object
                          ?r - receptacle
                          ?a - agent
                          ?l - location)
                     (and
                         (objectType ?ot DeskLampType)
                         (toggleable ?ot)
                         (isToggled ?ot)
                         (receptacleAtLocation ?r ?l)
                         (atLocation ?a ?l)
                         (inReceptacle ?ot ?r)
                     )
                 )
                 (exists (?o - object
                          ?a - agent)
                     (and
                         (objectType ?o CellPhoneType)
                         (holds ?a ?o)
                     )
                 )
             )
        )
"""


def class_declarations() -> str:
    """Every ALFRED class as an object and every object/receptacle type, as published problems declare them."""
    constants = load_data().constants
    receptacle_types = set(constants["RECEPTACLES"]) - set(constants["MOVABLE_RECEPTACLES"])
    classes = sorted((set(constants["OBJECTS"]) | set(constants["MOVABLE_RECEPTACLES"])) - receptacle_types)
    lines = [f"{cls} - object" for cls in classes] + [f"{cls}Type - otype" for cls in classes]
    lines += [f"{cls}Type - rtype" for cls in sorted(receptacle_types)]
    return "\n".join(lines)


def published_problem(trial: str, objects: str, init: str, goal: str) -> str:
    return (
        f"\n(define (problem plan_{trial})\n(:domain alfred)\n(:objects\nagent1 - agent\n"
        f"{class_declarations()}\n{objects}        )\n    \n\n(:init\n\n{init}        )\n    \n{goal})\n"
    )


KITCHEN_PROBLEM = published_problem(
    "trial_T20190907_174127_043461", KITCHEN_OBJECTS, KITCHEN_INIT, KITCHEN_GOAL_PDDL
)
BEDROOM_PROBLEM = published_problem(
    "trial_T20190908_123456_000001", BEDROOM_OBJECTS, BEDROOM_INIT, BEDROOM_GOAL_PDDL
)
PUBLISHED_GAMES = {
    "kitchen": (KITCHEN_NAME, KITCHEN_GOAL, KITCHEN_PROBLEM),
    "bedroom": (BEDROOM_NAME, BEDROOM_GOAL, BEDROOM_PROBLEM),
}

# ----------------------------------------------------- the two file versions
# ALFWorld's 2.1.2 patch, as its patch_tw-pddl.py applies it to a raw 2.1.1 file.
PATCH_REPLACEMENTS = (
    ("You arrive at {lend.name}.", "You arrive at {r.name}."),
    ("put {o} in/on {r}", "move {o} to {r}"),
    ("You put the {o.name} in/on the {r.name}.", "You move the {o.name} to the {r.name}."),
)
HELP_ACTION = "(:action help\n    :parameters (?a - agent)\n    :precondition\n        ()\n    :effect\n        (and\n            (checked ?a)\n        )\n)\n"
HELP_GRAMMAR = '\naction help {\n    template :: "help";\n    feedback :: "\n' + text.HELP_TEXT + '";\n}\n'


def raw_logic() -> tuple[str, str]:
    """The raw 2.1.1 domain and grammar: the ``alfworld`` package's 2.1.2 files with the patch taken out."""
    data = load_data()
    domain, count = re.subn(r"\n\(:action help\n.*?\n\)\n", "", data.domain, flags=re.DOTALL)
    assert count == 1, "the package's domain no longer ends with the 2.1.2 help action"
    grammar = data.grammar[: data.grammar.index("\naction help {")]
    for raw, patched in PATCH_REPLACEMENTS:
        assert patched in grammar
        grammar = grammar.replace(patched, raw)
    return domain, grammar


def raw_file(goal_text: str, problem: str) -> dict:
    """A ``game.tw-pddl`` of the raw ``json_2.1.1`` release."""
    domain, grammar = raw_logic()
    return {
        "pddl_domain": domain,
        "grammar": grammar.replace("UNKNOWN GOAL", goal_text),
        "pddl_problem": problem,
        "solvable": True,
    }


def patched_file(raw: dict) -> dict:
    """What ALFWorld's patch script makes of a raw file (the ``json_2.1.2`` release)."""
    before, after = raw["pddl_domain"].rsplit(")", 1)
    grammar = raw["grammar"]
    for old, new in PATCH_REPLACEMENTS:
        grammar = grammar.replace(old, new)
    return {**raw, "pddl_domain": f"{before}{HELP_ACTION}){after}", "grammar": grammar + HELP_GRAMMAR}


def published_file(game: str, version: str) -> dict:
    _, goal, problem = PUBLISHED_GAMES[game]
    raw = raw_file(goal, problem)
    return raw if version == "2.1.1" else patched_file(raw)


VERSIONS = {"2.1.1": text.RAW_2_1_1, "2.1.2": text.PATCHED_2_1_2}


def put_command(version: str, obj: str, receptacle: str) -> str:
    return VERSIONS[version].put_command.format(o=obj, r=receptacle)


# Scripted turns for each published game: the parts of the world that only the published games have
# (cold objects in the fridge, things no receptacle holds, own spots, an egg in a bowl), then a placing command.
def published_script(game: str, version: str) -> list[str]:
    if game == "kitchen":
        return [
            "help",
            "go to countertop 1",
            "look",
            "take knife 1 from countertop 1",
            "slice apple 3 with knife 1",
            "slice apple 1 with knife 1",
            put_command(version, "knife 1", "countertop 1"),
            "take bowl 1 from countertop 1",
            "examine bowl 1",
            "go to fridge 1",
            "open fridge 1",
            put_command(version, "bowl 1", "fridge 1"),
            "take apple 2 from fridge 1",
            "examine apple 2",
            "go to diningtable 1",
            "look",
        ]
    return [
        "go to desk 1",
        "look",
        "use desklamp 2",
        "go to sidetable 1",
        "use desklamp 1",
        "go to drawer 1",
        "open drawer 1",
        "take cellphone 1 from drawer 1",
        put_command(version, "cellphone 1", "drawer 1"),
        "take cellphone 1 from drawer 1",
    ]


def published_world(game: str, version: str) -> AlfredWorld:
    _, goal, problem = PUBLISHED_GAMES[game]
    return AlfredWorld(parse_problem(problem), goal, VERSIONS[version])


def write_published_tree(root: Path, folder: str = "json_2.1.1") -> Path:
    """A published data tree: one raw and one patched game, and three that ALFWorld leaves out."""
    base = root / folder
    trial = "trial_T20190907_000000_000001"
    entries = [
        ("valid_unseen", KITCHEN_NAME, published_file("kitchen", "2.1.1")),
        ("valid_seen", BEDROOM_NAME, published_file("bedroom", "2.1.2")),
        ("train", KITCHEN_NAME, {**published_file("kitchen", "2.1.2"), "solvable": False}),
        # Some published files lack the key; ALFWorld skips them.
        (
            "train",
            BEDROOM_NAME,
            {k: v for k, v in published_file("bedroom", "2.1.1").items() if k != "solvable"},
        ),
        # ALFWorld leaves out sliced-object games.
        (
            "train",
            "pick_cool_then_place_in_recep-AppleSliced-None-DiningTable-10",
            published_file("kitchen", "2.1.1"),
        ),
    ]
    for split, name, content in entries:
        folder_path = base / split / name / trial
        folder_path.mkdir(parents=True)
        (folder_path / "game.tw-pddl").write_text(json.dumps(content))
        (folder_path / "traj_data.json").write_text("{}")
    return base


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
    # The expert test over every held-out game (tests/test_alfworld.py) plays these games to the goal.
    assert loose_targets >= 3 and fixtures > 300 and own_spots > 1000
