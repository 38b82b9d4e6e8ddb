"""Sokoban: dynamics, generator, solver, rewards, observations and the expert."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import warnings
from collections import deque

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.core import ListTaskSource, UnknownTaskError, derive_rng
from agentenvs.core.registration import make_expert
from agentenvs.envs.sokoban.env import SokobanEnv
from agentenvs.envs.sokoban.reference import (
    REFERENCE_ACTIONS,
    load_reference,
    reference_arrays,
    reference_env,
)
from agentenvs.envs.sokoban.room import DIRECTIONS, boxes_on_targets, is_solved, move, parse_text, render_text
from agentenvs.envs.sokoban.tasks import (
    GeneratorConfig,
    SokobanTask,
    SokobanTaskSource,
    format_task_id,
    load_task,
    parse_task_id,
    place_room,
    reverse_play,
)

REFERENCE_ENV, REFERENCE_ROOM_UTILS, REFERENCE_MISSING = load_reference()
needs_reference = pytest.mark.skipif(REFERENCE_ENV is None, reason=REFERENCE_MISSING)

CORRIDOR = """
######
#P_XO#
######
"""

# Two boxes: the one on a target can be pushed off and back on while the
# other keeps the room unsolved.
TWO_BOXES = """
########
#______#
#_P√___#
#___X_O#
#______#
########
"""


def custom_env(level: str, **kwargs) -> SokobanEnv:
    task = SokobanTask.from_text("custom/0", level)
    return SokobanEnv(task_source=ListTaskSource({"train": [("custom/0", task)]}), **kwargs)


def naive_moves_to_goal(room, player, boxes) -> int | None:
    """Plain forward BFS from one state: the reference for the solver's table."""
    seen = {(player, boxes)}
    frontier = deque([(player, boxes, 0)])
    while frontier:
        p, b, depth = frontier.popleft()
        if is_solved(room, b):
            return depth
        for direction in DIRECTIONS:
            state = move(room, p, b, direction)
            if state not in seen:
                seen.add(state)
                frontier.append((*state, depth + 1))
    return None


# ------------------------------------------------------------------ dynamics
def test_move_walks_pushes_and_blocks():
    room, player, boxes = parse_text(CORRIDOR)
    assert (player, boxes) == (7, (9,))
    assert move(room, player, boxes, "left") == (7, (9,))  # wall: valid no-op
    assert move(room, player, boxes, "up") == (7, (9,))
    player, boxes = move(room, player, boxes, "right")
    assert (player, boxes) == (8, (9,))
    player, boxes = move(room, player, boxes, "right")  # push onto the target
    assert (player, boxes) == (9, (10,))
    assert is_solved(room, boxes)
    assert move(room, player, boxes, "right") == (9, (10,))  # box against the wall


def test_box_cannot_be_pushed_into_another_box():
    room, player, boxes = parse_text("#######\n#PXX_O#\n#____O#\n#######")
    assert move(room, player, boxes, "right") == (player, boxes)
    assert move(room, player, boxes, "down") == (player + 7, boxes)


def test_text_round_trip_uses_the_symbols():
    room, player, boxes = parse_text(TWO_BOXES)
    assert render_text(room, player, boxes) == TWO_BOXES.strip()
    player, boxes = move(room, player, boxes, "right")
    assert render_text(room, player, boxes).splitlines()[2] == "#__SX__#"


def test_bad_levels_are_rejected():
    with pytest.raises(ValueError, match="outer ring"):
        parse_text("____\n#PXO\n####")
    with pytest.raises(ValueError, match="as many boxes"):
        parse_text("#####\n#PXX#\n#_O_#\n#####")
    with pytest.raises(ValueError, match="cannot be solved"):
        SokobanTask.from_text("stuck", "#####\n#PX_#\n#__O#\n#####")


# ------------------------------------------------------------------- solver
def test_solver_finds_the_optimal_plan():
    task = SokobanTask.from_text("t", "#######\n#__P__#\n#_X___#\n#_O___#\n#######")
    assert task.solution_length == 2
    assert task.space.plan(task.player, task.boxes, 10) == ["left", "down"]
    assert task.space.plan(task.player, task.boxes, 1) == ["left"]


def test_solver_table_matches_a_plain_bfs_from_every_reachable_state():
    for index in range(5):
        task = load_task(format_task_id(GeneratorConfig(), "valid", index))
        states = _reachable_states(task.room, task.player, task.boxes)
        assert len(states) == task.space.num_states
        for player, boxes in states:
            assert task.space.moves_to_goal(player, boxes) == naive_moves_to_goal(task.room, player, boxes)


def _reachable_states(room, player, boxes) -> set:
    seen = {(player, boxes)}
    frontier = deque([(player, boxes)])
    while frontier:
        state = frontier.popleft()
        if is_solved(room, state[1]):
            continue
        for direction in DIRECTIONS:
            nxt = move(room, *state, direction)
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    return seen


# ---------------------------------------------------------------- generator
def test_generation_is_deterministic_and_seeded_by_the_id():
    task_id = format_task_id(GeneratorConfig(), "train", 17)
    first = load_task(task_id)
    load_task.cache_clear()
    again = load_task(task_id)
    assert first is not again
    assert (first.room, first.player, first.boxes) == (again.room, again.player, again.boxes)
    other = load_task(format_task_id(GeneratorConfig(), "train", 18))
    assert (other.room, other.player, other.boxes) != (first.room, first.player, first.boxes)


def test_generation_is_identical_in_another_process_with_another_hash_seed():
    ids = [format_task_id(GeneratorConfig(7, 7, 2, 5), "test", i) for i in range(3)]
    ids += [format_task_id(GeneratorConfig(), "train", i) for i in range(3)]
    script = (
        "import sys\n"
        "from agentenvs.envs.sokoban.tasks import load_task\n"
        "for task_id in sys.argv[1:]:\n"
        "    task = load_task(task_id)\n"
        "    print(task.room.digest, task.player, task.boxes, task.solution_length)\n"
    )
    here = [f"{t.room.digest} {t.player} {t.boxes} {t.solution_length}" for t in map(load_task, ids)]
    out = subprocess.run(
        [sys.executable, "-c", script, *ids],
        env=dict(os.environ, PYTHONHASHSEED="12345"),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout.split("\n")[:-1] == here


def _layout(task: SokobanTask) -> tuple:
    return (task.room.digest, task.player, task.boxes)


def test_splits_never_share_a_room_and_every_room_is_solvable():
    config = GeneratorConfig(max_solution_length=None)
    layouts: dict[str, set] = {}
    for split, count in (("test", 300), ("valid", 300), ("train", 2000)):
        layouts[split] = set()
        for index in range(count):
            task = load_task(format_task_id(config, split, index))
            room = task.room
            assert task.solution_length >= 5
            assert not room.targets & set(task.boxes) and task.player not in room.targets
            assert len(task.boxes) == len(room.targets) == 1
            player, boxes = task.player, task.boxes
            for direction in task.space.plan(player, boxes, task.solution_length):
                player, boxes = move(room, player, boxes, direction)
            assert is_solved(room, boxes)
            layouts[split].add(_layout(task))
    assert not layouts["test"] & layouts["valid"]
    assert not layouts["test"] & layouts["train"]
    assert not layouts["valid"] & layouts["train"]
    # 6x6 rooms with one box are few and the generator favours some (about 1,050
    # distinct in 2,000 draws): a collapse to a handful would show here
    assert len(layouts["train"]) > 900


def test_solution_length_bounds_are_respected():
    config = GeneratorConfig(min_solution_length=7, max_solution_length=8)
    lengths = {load_task(format_task_id(config, "train", i)).solution_length for i in range(40)}
    assert lengths <= {7, 8}


def test_the_maximum_length_only_filters_rooms():
    unbounded, bounded = GeneratorConfig(), GeneratorConfig(max_solution_length=6)
    filtered = 0
    for index in range(60):
        free = load_task(format_task_id(unbounded, "train", index))
        capped = load_task(format_task_id(bounded, "train", index))
        assert capped.solution_length <= 6
        if free.solution_length <= 6:
            assert _layout(capped) == _layout(free)
        else:
            filtered += 1
    assert filtered > 0


def test_other_room_sizes_and_box_counts():
    task = load_task(format_task_id(GeneratorConfig(8, 7, 2, 6), "test", 3))
    assert (task.room.height, task.room.width, len(task.boxes)) == (8, 7, 2)
    assert task.solution_length >= 6


@pytest.mark.parametrize(
    "task_id",
    [
        "sokoban-6x6-b1-m5/test/42",  # index not zero-padded
        "sokoban-6x6-b1-m5/test/001000",  # past the split's end
        "sokoban-6x6-b1-m5/holdout/000001",
        "sokoban-6x6-b0-m5/test/000001",
        "sokoban-6x6-b1-m9-x5/test/000001",
        "sokoban-2x6-b1-m5/test/000001",
        "sokoban-999x999-b1-m5/test/000001",
        "sokoban-06x6-b1-m5/test/000001",
        "webshop/test/000001",
        "",
    ],
)
def test_malformed_task_ids_raise(task_id):
    with pytest.raises(UnknownTaskError):
        parse_task_id(task_id)
    env = gym.make("agentenvs/Sokoban-v0")
    with pytest.raises(UnknownTaskError):
        env.reset(options={"task_id": task_id})


def test_any_valid_id_loads_in_any_env():
    env = gym.make("agentenvs/Sokoban-v0")
    _, info = env.reset(options={"task_id": "sokoban-7x7-b2-m6/valid/000004"})
    assert info["task_id"] == "sokoban-7x7-b2-m6/valid/000004"
    assert info["privileged"]["optimal_moves_left"] >= 6


def test_task_source_ids_and_sizes():
    source = SokobanTaskSource(GeneratorConfig(max_solution_length=9))
    assert (source.size("train"), source.size("valid"), source.size("test")) == (1_000_000, 1000, 1000)
    assert source.task_id("test", 42) == "sokoban-6x6-b1-m5-x9/test/000042"
    assert source.task_id("train", 999_999) == "sokoban-6x6-b1-m5-x9/train/999999"
    with pytest.raises(IndexError):
        source.task_id("test", 1000)


# ------------------------------------------------- against gym-sokoban itself
@needs_reference
@pytest.mark.parametrize(("config", "rooms"), [(GeneratorConfig(), 600), (GeneratorConfig(7, 7, 2, 5), 30)])
def test_reverse_play_matches_gym_sokoban(config, rooms):
    compared = 0
    for index in range(rooms):
        placed = place_room(config, derive_rng("sokoban-differential", config.name, index))
        if placed is None:
            continue
        room, player, targets = placed
        fixed, state = reference_arrays(room, player, tuple(sorted(targets)))
        state[state == 3] = 4  # gym-sokoban starts its boxes with the code it later reads as "off target"
        reference_state, reference_score = REFERENCE_ROOM_UTILS.reverse_playing(state, fixed)[:2]
        best_player, best_boxes, score = reverse_play(room, player, targets)
        assert score == max(int(reference_score), 0)
        if score > 0:
            cells = np.asarray(reference_state).reshape(-1)
            assert best_player == int(np.flatnonzero(cells == 5)[0])
            assert best_boxes == tuple(int(c) for c in np.flatnonzero((cells == 3) | (cells == 4)))
            compared += 1
    assert compared > rooms // 4


@needs_reference
def test_moves_and_rewards_match_gym_sokoban():
    for config in (GeneratorConfig(), GeneratorConfig(7, 7, 2, 5)):
        for index in range(40):
            task = load_task(format_task_id(config, "train", index))
            room, player, boxes = task.room, task.player, task.boxes
            reference = reference_env(REFERENCE_ENV, room, player, boxes)
            rng = derive_rng("sokoban-differential-moves", config.name, index)
            for _ in range(60):
                direction = DIRECTIONS[int(rng.integers(4))]
                placed_before = boxes_on_targets(room, boxes)
                player, boxes = move(room, player, boxes, direction)
                solved = is_solved(room, boxes)
                _, reward, done, _ = reference.step(
                    REFERENCE_ACTIONS[direction], observation_mode="tiny_rgb_array"
                )
                assert np.array_equal(reference.room_state, reference_arrays(room, player, boxes)[1])
                # gym-sokoban: -0.1 every step, +-1 per box on/off a target, +10 when solved
                assert math.isclose(
                    reward, -0.1 + boxes_on_targets(room, boxes) - placed_before + 10 * solved
                )
                assert done == solved
                if solved:
                    break


# ------------------------------------------------------------------ rewards
def test_reward_table_push_on_solve_and_step_penalty():
    env = custom_env(CORRIDOR)
    _, info = env.reset(seed=0)
    assert info["privileged"] == {"optimal_moves_left": 2}
    _, reward, terminated, truncated, info = env.step("<action>LEFT || Right || right</action>")
    components = info["reward_components"]
    # the blocked step and the walk count; the solving push does not
    assert components == {
        "outcome": 1.0,
        "box_placement": 1.0,
        "format": 1.0,
        "step_penalty": 2.0,
        "invalid_action": 0.0,
    }
    assert math.isclose(reward, 10 + 1 + 0.5 - 0.2)
    assert terminated and not truncated and info["success"] and info["score"] == 1.0
    first = info["transitions"][0]
    assert first["state_key"] == first["next_state_key"] and math.isclose(first["reward"], -0.1)
    assert math.isclose(info["transitions"][2]["reward"], 11.0)


def test_reward_table_push_off_and_back_on_is_potential_based():
    env = custom_env(TWO_BOXES, max_turns=10)
    env.reset(seed=0)
    _, reward, *_, info = env.step("right")  # bare action: not well formed
    assert info["reward_components"]["box_placement"] == -1.0
    assert info["reward_components"]["format"] == 0.0
    assert math.isclose(reward, -1 - 0.1)
    total_placement = -1.0
    for response in ("<action>left || up || right</action>", "<action>right || right || down</action>"):
        *_, info = env.step(response)
        total_placement += info["reward_components"]["box_placement"]
    *_, info = env.step("<action>left</action>")
    assert info["reward_components"]["box_placement"] == 1.0
    assert total_placement + 1.0 == 0.0  # back where it started: nothing gained


def test_custom_weights_apply():
    env = custom_env(CORRIDOR, reward_weights={"outcome": 1.0, "step_penalty": 0.0})
    env.reset(seed=0)
    _, reward, *_ = env.step("<action>right || right</action>")
    assert math.isclose(reward, 1 + 1 + 0.5)
    with pytest.raises(ValueError):
        custom_env(CORRIDOR, reward_weights={"bonus": 1.0})


def test_invalid_turn_applies_no_move():
    env = gym.make("agentenvs/Sokoban-v0")
    obs, info = env.reset(seed=11)
    for response, steps_charged in (
        ("<action>up || jump</action>", 3),
        ("<action>up || up || up || up</action>", 4),
        ("<action>", 3),
        ("go north", 3),
    ):
        new_obs, reward, terminated, truncated, new_info = env.step(response)
        assert new_info["state_key"] == info["state_key"]
        assert new_info["transitions"] == []
        components = new_info["reward_components"]
        assert components["invalid_action"] == 1.0
        # time passes (a full turn of steps, or every move named), and no format bonus
        assert components["step_penalty"] == steps_charged and components["format"] == 0.0
        assert reward == pytest.approx(-0.1 - 0.1 * steps_charged)
        assert new_obs.startswith("Invalid action")
        assert obs.split("\n\n")[-1] in new_obs  # same grid
        if terminated or truncated:
            break


# ------------------------------------------------------------- observations
def test_first_observation_explains_the_game_and_later_ones_do_not_count_turns():
    env = gym.make("agentenvs/Sokoban-v0")
    obs, _ = env.reset(seed=2)
    assert "Push every box onto a target" in obs and "up to 3 moves per turn separated by ||" in obs
    assert "Legend: # wall, _ floor, O target, X box, √ box on target, P player, S player on target." in obs
    verl_obs, _ = gym.make("agentenvs/Sokoban-Verl-v0").reset(seed=2)
    assert "one move per turn" in verl_obs

    # the same state reached in different turns reads the same
    env = custom_env(TWO_BOXES, max_turns=10)
    env.reset(seed=0)
    first, *_, info_first = env.step("<action>down || up</action>")
    second, *_, info_second = env.step("<action>left || right</action>")
    assert first == second and info_first["obs_key"] == info_second["obs_key"]
    assert info_first["state_key"] == info_second["state_key"]
    assert "turn" not in first.lower()


def test_image_observations():
    env = gym.make("agentenvs/Sokoban-v0", obs_mode="image", render_mode="rgb_array")
    assert env.observation_space.shape == (96, 96, 3) and env.observation_space.dtype == np.uint8
    obs, info = env.reset(seed=4)
    assert obs.shape == (96, 96, 3) and obs.dtype == np.uint8 and env.observation_space.contains(obs)
    assert np.array_equal(env.render(), obs)
    action = make_expert(env).act(obs, info)
    moved, *_ = env.step(action)
    assert not np.array_equal(moved, obs)
    assert len(np.unique(obs.reshape(-1, 3), axis=0)) > 6  # sprites, not flat colours

    both = gym.make("agentenvs/Sokoban-v0", obs_mode="text+image")
    obs, _ = both.reset(seed=4)
    assert both.observation_space.contains(obs) and obs["text"].startswith("You are playing Sokoban")


@pytest.mark.parametrize("obs_mode", ["image", "text+image"])
def test_env_checker_is_clean_for_pixel_modes(obs_mode):
    env = gym.make("agentenvs/Sokoban-v0", obs_mode=obs_mode, render_mode="rgb_array")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    assert not [str(w.message) for w in caught if not issubclass(w.category, DeprecationWarning)]


def test_each_cell_kind_draws_differently():
    from agentenvs.envs.sokoban.render import sprites

    tiles = sprites()
    assert tiles.shape == (7, 16, 16, 3)
    assert len({t.tobytes() for t in tiles}) == 7


# ------------------------------------------------------------------- expert
@pytest.mark.parametrize(
    ("env_id", "episodes"), [("agentenvs/Sokoban-v0", 200), ("agentenvs/Sokoban-Verl-v0", 50)]
)
def test_expert_solves_every_test_task_within_the_turn_limit(env_id, episodes):
    env = gym.make(env_id, split="test")
    expert = make_expert(env)
    for seed in range(episodes):
        obs, info = env.reset(seed=seed)
        optimal = info["privileged"]["optimal_moves_left"]
        done, turns = False, 0
        while not done:
            obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
            done, turns = terminated or truncated, turns + 1
            assert info["reward_components"]["format"] == 1.0
        assert info["success"], info["task_id"]
        assert turns == math.ceil(optimal / env.unwrapped.max_actions_per_turn)


def test_budget_below_minimum_length_is_refused():
    with pytest.raises(ValueError, match="move budget"):
        SokobanEnv(max_actions_per_turn=1, max_turns=3)
