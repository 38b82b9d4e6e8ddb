"""BabyAI on minigrid: registry, text layer, rewards, state keys, expert, and a
differential test against raw minigrid (same seeds, same actions)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import warnings

import gymnasium as gym
import minigrid  # noqa: F401  (registers minigrid's BabyAI-* ids)
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from minigrid.core.world_object import Key

import agentenvs
from agentenvs.core import InvalidAction, UnknownTaskError, derive_rng
from agentenvs.envs.babyai import LEVELS, MINIGRID_LEVEL_IDS
from agentenvs.envs.babyai.describe import TEXT_ACTIONS, observation_text, parse_action, view_lines
from agentenvs.envs.babyai.env import BabyAIEnv
from agentenvs.envs.babyai.expert import BabyAIExpert
from agentenvs.envs.babyai.tasks import (
    BOT_FAILING_LEVELS,
    DEFAULT_MIX,
    SPLIT_SEEDS,
    BabyAITaskSource,
    PickUpSeqGoToLocal,
)

MINIGRID_IDS = {level.removeprefix("BabyAI-").rsplit("-v", 1)[0]: level for level in MINIGRID_LEVEL_IDS}


def raw_level(level: str):
    """The level as minigrid itself builds it, independent of agentenvs' factory."""
    if level == "PickUpSeqGoToLocal":
        return PickUpSeqGoToLocal()
    return gym.make(MINIGRID_IDS[level]).unwrapped


def quiet_reset(world, seed: int):
    with contextlib.redirect_stdout(io.StringIO()):
        return world.reset(seed=seed)


def play_expert(env: BabyAIEnv, task_id: str) -> list[tuple[str, float, dict]]:
    """(response, reward, info) per turn of the expert's episode on ``task_id``."""
    obs, info = env.reset(options={"task_id": task_id})
    expert = BabyAIExpert(env)
    turns = []
    while True:
        response = expert.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(response)
        turns.append((response, reward, info))
        if terminated or truncated:
            return turns


# ----------------------------------------------------------------- registry
def test_level_names_match_minigrid_registry():
    registered = {env_id for env_id in gym.registry if env_id.startswith("BabyAI-")}
    assert set(MINIGRID_LEVEL_IDS) == registered
    assert len(set(LEVELS)) == len(LEVELS) == len(MINIGRID_LEVEL_IDS) + 1


def test_every_level_has_an_id_and_registration_does_not_import_minigrid():
    ids = set(agentenvs.ENV_IDS)
    assert "agentenvs/BabyAI-v0" in ids
    assert {f"agentenvs/BabyAI-{level}-v0" for level in LEVELS} <= ids
    code = "import sys, agentenvs; print('minigrid' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_per_level_id_plays_that_level_including_renamed_versions():
    env = gym.make("agentenvs/BabyAI-GoToObjS6-v0")  # minigrid only has BabyAI-GoToObjS6-v1
    _, info = env.reset(seed=0)
    assert info["task_id"] == "GoToObjS6/0"
    assert env.unwrapped.world.spec.id == "BabyAI-GoToObjS6-v1"


# ---------------------------------------------------------------- text layer
def test_view_lines_wording_and_order():
    image = np.zeros((7, 7, 3), dtype=np.uint8)
    image[:, :, 0] = 1  # empty floor
    image[3, 5] = (1, 0, 0)
    image[3, 4] = (2, 5, 0)  # wall straight ahead, 2 steps
    image[2, 6] = (6, 0, 0)  # red ball right beside the agent hides the left wall
    image[0, 6] = (2, 5, 0)
    image[5, 6] = (0, 0, 0)  # unseen cells do not stop the look to the right
    image[6, 6] = (2, 5, 0)
    image[5, 4] = (7, 0, 0)  # red box
    image[1, 3] = (4, 3, 2)  # locked purple door
    image[3, 0] = (4, 1, 0)  # open green door
    image[6, 1] = (4, 4, 1)  # closed yellow door
    lines = view_lines(image, Key("blue"))
    assert lines == [
        "You carry a blue key",
        "a wall 2 steps forward",
        "a wall 3 steps right",
        "a locked purple door 2 steps left and 3 steps forward",
        "a red ball 1 step left",
        "an open green door 6 steps forward",
        "a red box 2 steps right and 2 steps forward",
        "a closed yellow door 3 steps right and 5 steps forward",
    ]
    assert observation_text("go to the red box", lines).startswith("Mission: go to the red box\nYou carry")
    assert observation_text("go to the red box", []) == "Mission: go to the red box\nNothing in view."


def test_text_actions_parse_to_minigrid_actions():
    for index, name in enumerate(TEXT_ACTIONS):
        assert parse_action(name) == index
    for bad in ("done", "go backward", "left", "pick up the ball", "", "Turn left", "turn  left"):
        with pytest.raises(InvalidAction):
            parse_action(bad)


def test_observation_describes_the_world_and_follows_actions():
    env = BabyAIEnv("GoToLocal")
    obs, info = env.reset(seed=3)
    world = env.world
    assert obs.startswith(f"Mission: {world.mission}\n")
    assert obs.endswith("Actions: turn left, turn right, go forward, pick up, drop, toggle.")
    assert info["admissible_actions"] == list(TEXT_ACTIONS)
    obs, *_ = env.step("<action>turn left</action>")
    assert obs == observation_text(world.mission, view_lines(world.gen_obs()["image"], world.carrying))


def test_invalid_turn_leaves_world_untouched_and_lists_actions():
    env = BabyAIEnv("PutNextLocal")
    obs, info = env.reset(seed=1)
    steps_before = env.world.step_count
    for response in ("jump over the wall", "<action>done</action>", "<action>go forward"):
        obs, reward, terminated, truncated, info = env.step(response)
        assert obs.startswith("Invalid action:")
        assert (
            "exactly as written (lower case): turn left, turn right, go forward, pick up, drop, toggle."
            in obs
        )
        assert info["reward_components"]["invalid_action"] == 1.0
        assert reward == pytest.approx(-0.1)
        assert info["transitions"] == [] and not terminated and not truncated
    assert env.world.step_count == steps_before
    _, _, _, _, after = env.step("turn right")
    assert after["reward_components"]["invalid_action"] == 0.0 and env.world.step_count == steps_before + 1


def test_reset_never_prints_minigrid_rejections(capsys):
    raw = raw_level("PutNextLocal")
    rejected = []
    for seed in range(40):
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            raw.reset(seed=seed)
        if "Sampling rejected" in printed.getvalue():
            rejected.append(seed)
    assert rejected, "expected minigrid to reject some PutNextLocal samples"
    env = BabyAIEnv("PutNextLocal")
    capsys.readouterr()
    for seed in rejected:
        env.reset(options={"task_id": f"PutNextLocal/{seed}"})
    assert capsys.readouterr().out == ""


def test_image_mode_and_rgb_render_come_from_minigrid_renderer():
    env = BabyAIEnv("GoToLocal", obs_mode="image", render_mode="rgb_array")
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs["text"].startswith("Mission: ")
    assert obs["image"].shape == (112, 112, 3) and obs["image"].dtype == np.uint8
    np.testing.assert_array_equal(obs["image"], env.world.get_pov_render(16))
    frame = env.render()
    assert frame.shape == (8 * 16, 8 * 16, 3)
    obs, *_ = env.step("turn left")
    np.testing.assert_array_equal(obs["image"], env.world.get_pov_render(16))
    with pytest.raises(ValueError):
        BabyAIEnv("GoToLocal", obs_mode="pixels")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(gym.make("agentenvs/BabyAI-v0", obs_mode="image").unwrapped)
    assert not [w for w in caught if not issubclass(w.category, DeprecationWarning)]


# ----------------------------------------------------------- tasks and splits
def test_task_ids_splits_and_mix():
    source = BabyAITaskSource(tuple(DEFAULT_MIX.values()))
    first = [source.task_id("test", i) for i in range(5)]
    assert [t.split("/")[0] for t in first] == list(DEFAULT_MIX.values())
    assert {t.split("/")[1] for t in first} == {str(SPLIT_SEEDS["test"][0])}
    ranges = list(SPLIT_SEEDS.values())
    for a in range(len(ranges)):
        for b in range(a + 1, len(ranges)):
            assert not set(ranges[a]) & set(ranges[b])
    assert source.size("train") == 5 * len(SPLIT_SEEDS["train"])
    for bad in ("GoToLocal", "GoToLocal/x", "NoSuchLevel/3", "GoToLocal/-1"):
        with pytest.raises(UnknownTaskError):
            source.load(bad)
    with pytest.raises(ValueError):
        BabyAIEnv("NoSuchLevel")


def test_task_id_names_the_minigrid_world_of_that_seed():
    env = gym.make("agentenvs/BabyAI-v0", split="valid")
    _, info = env.reset(seed=8)
    level, seed = info["task_id"].split("/")
    assert level == "PutNextLocal" and int(seed) == SPLIT_SEEDS["valid"][1]
    raw = raw_level(level)
    quiet_reset(raw, int(seed))
    assert raw.mission == env.unwrapped.world.mission
    np.testing.assert_array_equal(raw.grid.encode(), env.unwrapped.world.grid.encode())


def test_turn_limit_is_the_level_max_steps_unless_given():
    env = BabyAIEnv("PutNextLocal")
    _, info = env.reset(seed=0)
    assert info["max_turns"] == env.world.max_steps == 128
    env = BabyAIEnv("PutNextLocal", max_turns=3)
    _, info = env.reset(seed=0)
    assert info["max_turns"] == env.world.max_steps == 3
    truncated = False
    for _ in range(3):
        assert not truncated
        _, _, terminated, truncated, info = env.step("turn left")
    assert truncated and not terminated and info["success"] is False


# -------------------------------------------------------- differential test
@pytest.mark.parametrize("level", LEVELS)
def test_same_world_and_rewards_as_raw_minigrid(level):
    """Random actions on the same seed: identical grids, agent, carried object, rewards, ends."""
    play_both(level, seeds=(0,), actions_per_seed=25)


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_same_world_and_rewards_as_raw_minigrid_long(level):
    play_both(level, seeds=(1, 2, 3), actions_per_seed=100)


def play_both(level: str, seeds, actions_per_seed: int) -> None:
    ours = BabyAIEnv(level)
    raw = raw_level(level)
    rng = derive_rng("babyai-differential", level)
    for seed in seeds:
        raw_obs, _ = quiet_reset(raw, seed)
        obs, info = ours.reset(options={"task_id": f"{level}/{seed}"})
        assert_same_world(ours, raw)
        assert obs.split("\n\n")[0] == observation_text(
            raw.mission, view_lines(raw_obs["image"], raw.carrying)
        )
        for action in rng.integers(len(TEXT_ACTIONS), size=actions_per_seed):
            raw_obs, raw_reward, raw_terminated, raw_truncated, _ = raw.step(int(action))
            obs, _, terminated, truncated, info = ours.step(TEXT_ACTIONS[action])
            assert info["reward_components"]["outcome"] == raw_reward
            # success on the last allowed step: minigrid sets both flags, the contract only terminated
            assert (terminated, truncated) == (raw_terminated, raw_truncated and not raw_terminated)
            assert_same_world(ours, raw)
            assert obs == observation_text(raw.mission, view_lines(raw_obs["image"], raw.carrying))
            if terminated or truncated:
                break


def assert_same_world(ours: BabyAIEnv, raw) -> None:
    world = ours.world
    assert world is not raw
    np.testing.assert_array_equal(world.grid.encode(), raw.grid.encode())
    np.testing.assert_array_equal(ours._grid, raw.grid.encode())  # the state key's grid
    assert tuple(world.agent_pos) == tuple(raw.agent_pos) and world.agent_dir == raw.agent_dir
    assert (world.carrying is None) == (raw.carrying is None)
    if raw.carrying is not None:
        assert world.carrying.encode() == raw.carrying.encode()
    assert world.mission == raw.mission and world.step_count == raw.step_count


@pytest.mark.parametrize("level", list(DEFAULT_MIX.values()))
def test_expert_episode_replayed_on_raw_minigrid_earns_the_same_rewards(level):
    env = BabyAIEnv(level)
    turns = play_expert(env, f"{level}/7")
    raw = raw_level(level)
    quiet_reset(raw, 7)
    for response, _, info in turns:
        action = parse_action(env.protocol.parse(response).actions[0])
        _, raw_reward, raw_terminated, _, _ = raw.step(action)
        assert info["reward_components"]["outcome"] == raw_reward
    assert raw_terminated and info["success"] and raw_reward > 0
    assert info["score"] == raw_reward == pytest.approx(1 - 0.9 * raw.step_count / raw.max_steps)


# ----------------------------------------------------------------- rewards
@pytest.mark.parametrize("level", list(DEFAULT_MIX.values()))
def test_progress_sums_to_one_over_a_solved_episode(level):
    env = BabyAIEnv(level)
    turns = play_expert(env, f"{level}/11")
    assert turns[-1][2]["success"]
    assert sum(info["reward_components"]["progress"] for _, _, info in turns) == pytest.approx(1.0)
    assert turns[-1][2]["reward_components"]["outcome"] > 0


def test_progress_pays_for_carrying_the_object_to_move_and_takes_it_back():
    env = BabyAIEnv("PutNextLocal")
    obs, info = env.reset(options={"task_id": "PutNextLocal/2"})
    expert = BabyAIExpert(env)
    to_move = env.world.instrs.desc_move.obj_set
    paid = []
    while not any(obj is env.world.carrying for obj in to_move):
        obs, _, _, _, info = env.step(expert.act(obs, info))
        paid.append(info["reward_components"]["progress"])
    assert paid[-1] == 0.5 and sum(paid) == 0.5
    looped = []
    for action in ("drop", "pick up", "drop", "pick up"):
        *_, info = env.step(action)
        looped.append(info["reward_components"]["progress"])
    assert looped == [-0.5, 0.5, -0.5, 0.5]


def test_unlocking_key_is_a_subgoal_of_open():
    env = BabyAIEnv("UnlockLocalDist")
    turns = play_expert(env, "UnlockLocalDist/3")
    progress = [info["reward_components"]["progress"] for _, _, info in turns]
    # the bot may set the key down to clear its way: that gives the credit back, and the sum stays 1
    assert progress[-1] == 0.5 and sum(progress) == pytest.approx(1.0)
    picked = progress.index(0.5)
    assert turns[picked][0] == "<action>pick up</action>"


# --------------------------------------------------------------- state keys
def test_state_key_follows_the_state_not_the_path():
    env = BabyAIEnv("GoToLocal")
    _, info = env.reset(seed=4)
    start = info["state_key"]
    keys = []
    for _ in range(4):
        _, _, _, _, info = env.step("turn left")
        keys.append(info["state_key"])
    assert keys[-1] == start and len(set(keys)) == 4
    _, first = env.reset(seed=4)
    _, other = env.reset(seed=5)
    assert first["state_key"] == start != other["state_key"]


def test_state_key_covers_the_verifier_progress_of_a_sequence():
    env = BabyAIEnv("PickUpSeqGoToLocal")
    obs, info = env.reset(options={"task_id": "PickUpSeqGoToLocal/4"})
    expert = BabyAIExpert(env)
    while (response := expert.act(obs, info)) != "<action>pick up</action>":
        obs, _, _, _, info = env.step(response)
    before = info
    _, _, _, _, info = env.step("pick up")
    assert info["reward_components"]["progress"] == 0.5  # the sequence's first part is done
    _, _, _, _, info = env.step("drop")  # the object goes back where it was
    assert info["reward_components"]["progress"] == 0.0  # done stays done
    assert info["obs_key"] == before["obs_key"]  # the same view and grid ...
    assert info["state_key"] != before["state_key"]  # ... but not the same future


def test_state_key_covers_what_a_box_hides():
    env = BabyAIEnv("KeyInBox")
    env.reset(seed=0)
    contents = env._box_contents()
    assert len(contents) == 1 and contents[0][1][0] == 5  # a key, inside a box on the grid


def test_rollouts_identical_in_a_fresh_process():
    code = (
        "import json, agentenvs.envs.babyai.env as e, agentenvs.envs.babyai.expert as ex\n"
        "out = []\n"
        "for task in ('PutNextLocal/4', 'PickUpSeqGoToLocal/4'):\n"
        "    env = e.BabyAIEnv()\n"
        "    obs, info = env.reset(options={'task_id': task}); x = ex.BabyAIExpert(env)\n"
        "    while True:\n"
        "        obs, r, t, u, info = env.step(x.act(obs, info))\n"
        "        out.append([obs, r, info['state_key'], info['obs_key']])\n"
        "        if t or u: break\n"
        "print(json.dumps(out))\n"
    )
    here = []
    for task in ("PutNextLocal/4", "PickUpSeqGoToLocal/4"):
        for _, reward, info in play_expert(BabyAIEnv(), task):
            here.append([reward, info["state_key"], info["obs_key"]])
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONHASHSEED="123"),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    there = [row[1:] for row in json.loads(out.stdout)]
    assert there == here


# ------------------------------------------------------------------- expert
def expert_successes(env, seeds) -> int:
    """Episodes the expert solves, one per seed."""
    solved = 0
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        expert = BabyAIExpert(env)
        while True:
            obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
            if terminated or truncated:
                break
        solved += info["success"]
    return solved


def test_expert_solves_the_default_mix_test_split():
    env = gym.make("agentenvs/BabyAI-v0", split="test").unwrapped
    solved = expert_successes(env, range(50))
    assert solved >= 48


def test_expert_gives_up_instead_of_hanging_when_the_bot_planner_loops():
    env = BabyAIEnv("UnlockToUnlock")
    obs, info = env.reset(options={"task_id": "UnlockToUnlock/1010003"})  # minigrid's bot loops here
    expert = BabyAIExpert(env)
    responses = set()
    while True:
        response = expert.act(obs, info)
        responses.add(response)
        obs, _, terminated, truncated, info = env.step(response)
        if terminated or truncated:
            break
    assert expert.failure.startswith("PlannerLoop") and "<action>done</action>" in responses
    assert truncated and not info["success"] and info["turn"] == info["max_turns"]


# Beyond the bot's documented failures, measured on test seeds 0-9: strict ("Debug")
# verifiers fail the bot's detours, and its planner loops or asserts on rare worlds.
EXPERT_UNRELIABLE = BOT_FAILING_LEVELS | {
    "OpenDoorsOrderN2Debug",  # 1/10: opens the doors out of order
    "OpenDoorsOrderN4Debug",  # 4/10: same
    "PickupDistDebug",  # 9/10: picks up a blocker, which the strict verifier fails
    "UnlockToUnlock",  # 5/10: the planner loops (the expert gives up)
    "SynthS5R2",  # 9/10: the bot asserts
}


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_expert_on_every_level(level):
    """Solves the levels the bot handles; elsewhere, ends every episode without raising."""
    solved = expert_successes(BabyAIEnv(level, split="test"), range(5))
    if level not in EXPERT_UNRELIABLE:
        assert solved == 5


@pytest.mark.slow
def test_expert_success_on_500_mix_tasks():
    env = gym.make("agentenvs/BabyAI-v0", split="test").unwrapped
    solved = expert_successes(env, range(500))
    assert solved >= 475


@pytest.mark.parametrize("level", ["PutNextS5N2Carrying", "PutNextS7N4Carrying"])
def test_snapshot_of_a_level_that_starts_with_an_object_in_hand(level):
    # these levels hand the agent an object at reset, outside the grid: the snapshot must name it too
    env = gym.make(f"agentenvs/BabyAI-{level}-v0").unwrapped
    env.reset(seed=3)
    start = env.snapshot()
    actions = ["drop", "turn left", "go forward", "pick up", "turn right", "go forward"]
    played = [env.step(action)[1:4] + (env.state_key,) for action in actions]
    env.restore(start)
    assert env.world.carrying is not None
    assert [env.step(action)[1:4] + (env.state_key,) for action in actions] == played
