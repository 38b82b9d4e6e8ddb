"""Env instructions and the core chat-message builder (agentenvs.core.prompting)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentenvs
from agentenvs.core.prompting import Turn, action_format, chat_messages
from agentenvs.core.protocol import ActionProtocol
from baselines.prompts import PromptTemplate

MAIN_IDS = [entry.env_id for entry in agentenvs.ENV_ENTRIES if entry.variant_of is None]
# the families whose instructions end with compose_instructions' action format
ACTION_PROTOCOL_IDS = [
    "agentenvs/ALFWorld-v0",
    "agentenvs/BabyAI-v0",
    "agentenvs/Sokoban-v0",
    "agentenvs/Sokoban-Verl-v0",
    "agentenvs/TextCraft-v0",
    "agentenvs/WebShop-v0",
]


@pytest.mark.parametrize("env_id", MAIN_IDS)
def test_every_env_exposes_instructions_that_open_its_chat(env_id):
    env = gym.make(env_id, split="test")
    instructions = env.unwrapped.instructions
    assert isinstance(instructions, str) and len(instructions) > 100
    observation, info = env.reset(seed=0)
    messages = chat_messages(instructions, observation, info)
    assert messages[0] == {"role": "system", "content": instructions} and messages[-1]["role"] == "user"


@pytest.mark.parametrize("env_id", ACTION_PROTOCOL_IDS)
def test_the_example_action_in_the_instructions_is_valid(env_id):
    env = gym.make(env_id, split="test")
    instructions, protocol = env.unwrapped.instructions, env.unwrapped.protocol
    example = instructions.split(f"e.g. <{protocol.action_tag}>")[1].split(f"</{protocol.action_tag}>")[0]
    env.reset(seed=0)
    response = f"<{protocol.action_tag}>{example}</{protocol.action_tag}>"
    parsed = protocol.parse(response)
    assert parsed.well_formed and parsed.error is None
    _, _, _, _, info = env.step(response)
    assert info["reward_components"].get("invalid_action", 0.0) == 0.0, example


def test_sokoban_instructions_follow_its_kwargs():
    three = gym.make("agentenvs/Sokoban-v0").unwrapped.instructions
    one = gym.make("agentenvs/Sokoban-Verl-v0").unwrapped.instructions
    assert "up to 3 actions separated by ||" in three and "3 turns" in three
    assert "one action inside <action></action>" in one and "15 turns" in one


def test_action_format_names_the_protocol_tags_and_the_think_rule():
    text = action_format(ActionProtocol("answer", "reason", require_think=True), example="42")
    assert "<answer>42</answer>" in text and "Think first inside <reason></reason>" in text


def test_chat_messages_alternate_roles_keep_the_first_turn_and_list_admissible_actions():
    history = [Turn(f"obs{k}", f"act{k}") for k in range(5)]
    info = {"admissible_actions": ["look", "go to desk 1"]}
    messages = chat_messages("RULES", "now", info, history, history_window=2)
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    assert messages[0]["content"] == "RULES"
    assert [m["content"] for m in messages[1:7]] == ["obs0", "act0", "obs3", "act3", "obs4", "act4"]
    assert messages[-1]["content"] == "now\n\nAdmissible actions: look, go to desk 1"
    everything = chat_messages("RULES", {"text": "grid", "image": None}, {}, history)
    assert len(everything) == 1 + 2 * 5 + 1 and everything[-1]["content"] == "grid"
    assert len(chat_messages("R", "x", {}, history, history_window=0)) == 4  # the first turn only
    with pytest.raises(ValueError):
        chat_messages("R", "x", {}, history, history_window=-1)
    with pytest.raises(TypeError):
        chat_messages("R", b"bytes", {}, history)


def test_baselines_prompt_opens_with_the_env_instructions():
    env = gym.make("agentenvs/TextCraft-v0")
    template = PromptTemplate.for_env(env)
    text = template.render(first_observation="Goal: x", history=[], observation="Goal: x", turn=0)
    assert text.startswith(env.unwrapped.instructions + "\n\n")
    # the chat messages of the eval harness open with the same declaration
    assert chat_messages(env.unwrapped.instructions, "Goal: x", {})[0]["content"] == template.instructions
