"""The one reading rule, family by family: typical replies, the reference page's table, what invalid turns
say."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.agents import make_agent
from agentenvs.envs.babyai.describe import TEXT_ACTIONS

ROOT = Path(__file__).resolve().parents[2]


def load_table_script():
    spec = importlib.util.spec_from_file_location("reading_table", ROOT / "scripts" / "reading_table.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


TABLE = load_table_script()
FAMILIES = {family.name: family for family in TABLE.FAMILIES}

# One entry per reply of TABLE.REPLIES, in order: applied (✓) or invalid (✗), then `format`.
EXPECTED = {
    # case folded: "Left" is a move, "Action: left" is not
    "Sokoban": "✓1 ✓1 ✓0 ✓1 ✓1 ✓1 ✓1 ✓0 ✓0 ✓1 ✗0 ✗0",
    # TextCraft matches "inventory" at the text's start, as ADaPT's regex does
    "TextCraft": "✓1 ✓1 ✓0 ✓1 ✗1 ✓1 ✓1 ✓0 ✓0 ✓1 ✗0 ✗0",
    "BabyAI": "✓1 ✓1 ✓0 ✓1 ✗1 ✓1 ✓1 ✓0 ✓0 ✗1 ✗0 ✗0",
    "WebShop": "✓1 ✓1 ✓0 ✓1 ✗1 ✓1 ✓1 ✓0 ✓0 ✗1 ✗0 ✗0",
    "ALFWorld": "✓1 ✓1 ✓0 ✓1 ✗1 ✓1 ✓1 ✓0 ✓0 ✗1 ✗0 ✗0",
}


@pytest.fixture(scope="module")
def envs() -> dict[str, gym.Env]:
    return {name: gym.make(family.env_id).unwrapped for name, family in FAMILIES.items()}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_typical_replies_are_read_as_documented(envs, name):
    family, env = FAMILIES[name], envs[name]
    for (label, template), expected in zip(TABLE.REPLIES, EXPECTED[name].split(), strict=True):
        reply = template.format(a=family.action, A=family.capitalised)
        env.reset(seed=0)
        _, _, _, _, info = env.step(reply)
        components = info["reward_components"]
        got = ("✗" if components["invalid_action"] else "✓") + f"{components['format']:g}"
        assert got == expected, (label, reply)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_the_action_read_is_stripped_and_folded_only_where_the_original_folds(envs, name):
    family, protocol = FAMILIES[name], envs[name].protocol
    assert protocol.parse(f"<ACTION>\n {family.action}. \n</Action>").actions == (family.action,)
    capitalised = protocol.parse(family.capitalised).actions
    assert capitalised == ((family.action,) if name == "Sokoban" else (family.capitalised,))


def test_the_reading_rule_page_table_is_what_the_envs_do():
    assert TABLE.BLOCK.current() == TABLE.reading_table(), "run: python scripts/reading_table.py --write"


# ------------------------------------------------- what an invalid turn says
def invalid_observation(env: gym.Env, reply: str) -> str:
    obs, _, _, _, info = env.step(reply)
    assert info["reward_components"]["invalid_action"] == 1.0 and info["transitions"] == []
    return obs


def test_sokoban_invalid_turn_lists_the_moves(envs):
    env = envs["Sokoban"]
    env.reset(seed=0)
    obs = invalid_observation(env, "<action>jump</action>")
    assert obs.startswith("Invalid action: 'jump' is not a move. Moves are up, down, left, right")


def test_textcraft_invalid_turn_keeps_its_text_and_adds_the_grammar(envs):
    env = envs["TextCraft"]
    env.reset(seed=0)
    obs = invalid_observation(env, "Inventory")
    assert obs == (
        "Could not execute Inventory\n"
        "Send one command (case-sensitive): get N item | craft N item using N item, N item, ... | inventory"
    )
    assert invalid_observation(env, "get 1 planks").startswith("Could not find planks\nSend one command")


def test_babyai_invalid_turn_lists_the_actions(envs):
    env = envs["BabyAI"]
    env.reset(seed=0)
    obs = invalid_observation(env, "Turn left")
    head = obs.split("\n")[0]
    assert head.startswith("Invalid action: 'Turn left' is not an action.")
    assert all(action in head for action in TEXT_ACTIONS)


def test_alfworld_invalid_turn_says_nothing_happens_then_lists_the_admissible_commands(envs):
    env = envs["ALFWorld"]
    _, info = env.reset(seed=0)
    obs = invalid_observation(env, "Look")
    first, second = obs.split("\n")
    assert first == "Nothing happens."
    assert second == f"Admissible commands (case-sensitive): {', '.join(info['admissible_actions'])}."


def test_webshop_invalid_turn_states_the_search_grammar_and_the_clickables(envs):
    env = envs["WebShop"]
    env.reset(seed=0)
    obs = invalid_observation(env, "Search[dress]")
    assert "search[keywords]" in obs.split("\n")[0]
    _, _, _, _, info = env.step("search[dress]")
    head = invalid_observation(env, "click[nothing here]").split("\n")[0]
    assert "search[keywords]" in head
    assert all(action in head for action in info["admissible_actions"])


PLACEHOLDER = re.compile(r"<[^<>]*>")


def test_webshop_lists_no_placeholder_and_refuses_one(envs):
    env = envs["WebShop"]
    _, info = env.reset(seed=0)
    assert info["admissible_actions"] == []  # only a search goes here, and searches cannot be listed
    for reply in ("search[<your query>]", "<action>search[ <keywords> ]</action>", "click[search]"):
        invalid_observation(env, reply)
    assert env.session.keywords is None
    for seed in range(3):  # the random agent searches where nothing is listed, then clicks what is
        obs, info = env.reset(seed=seed)
        agent = make_agent("random", env, seed)
        for _ in range(8):
            obs, _, terminated, _, info = env.step(agent.act(obs, info))
            assert info["reward_components"]["invalid_action"] == 0.0
            assert not any(PLACEHOLDER.search(action) for action in info["admissible_actions"])
            assert "click[search]" not in info["admissible_actions"]
            if terminated:
                break
