"""Prompt templates built from the env alone: today's prompts pinned, and a family the baselines never saw."""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import pytest

import agentenvs
from agentenvs.core import (
    ActionProtocol,
    AgentEnv,
    AnswerFormat,
    EnvEntry,
    InvalidAction,
    ListTaskSource,
    StepOutcome,
)
from baselines.prompts import HistoryEntry, PromptTemplate

from fixtures.registry import register_for_test

ROOT = Path(__file__).resolve().parents[2]
# Prompts rendered by the template of f3a3f40, which took its facts from tables of family names
# (and the trainers' Sokoban rule of 3 actions per turn): sha256 prefixes of every registered id's
# prompt and follow-up at turns 0 and 2, with and without think, and the whole turn-2 prompt of
# each main id. The inputs below are the ones they were rendered from.
PINNED = json.loads((ROOT / "tests/fixtures/prompts/template_prompts.json").read_text())
FIRST = "FIRST OBSERVATION: the goal is stated here."
HISTORY = [
    HistoryEntry(FIRST, "<think>one</think><action>first move</action>"),
    HistoryEntry("SECOND OBSERVATION", "<think>two</think><action>second move</action>"),
]
CURRENT = "CURRENT OBSERVATION"
ADMISSIBLE = ["first move", "second move"]
# The one line that changes: the old template asked every family for an <action> block, which
# Search-R1's protocol rejects and ColBench sends on to the collaborator as part of the message.
OLD_ANSWER_LINES = {
    True: "Think about the situation step by step inside <think> </think>, then give your action inside "
    "<action> </action>.",
    False: "Give your action inside <action> </action>.",
}
NEW_ANSWER_LINES = {
    "search": {
        True: "Think about the situation step by step inside <think> </think>, then give your action inside "
        "<search> </search> or <answer> </answer>.",
        False: "Give your action inside <search> </search> or <answer> </answer>.",
    },
    "colbench": {
        True: "Think about the situation step by step inside <think> </think>, then write your message "
        "after it, with no tags around it.",
        False: "Write your message with no tags around it.",
    },
}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def render_pinned_inputs(template: PromptTemplate, turn: int) -> tuple[str, str]:
    prompt = template.render(
        first_observation=FIRST if turn else CURRENT,
        history=HISTORY[:turn],
        observation=CURRENT,
        turn=turn,
        admissible=ADMISSIBLE,
    )
    return prompt, template.followup(observation=CURRENT, turn=turn, admissible=ADMISSIBLE)


def test_the_fixture_covers_every_registered_id():
    assert sorted(PINNED) == sorted(entry.env_id for entry in agentenvs.ENV_ENTRIES)


@pytest.mark.parametrize("env_id", sorted(PINNED))
def test_prompts_built_from_the_env_equal_the_pinned_ones(env_id):
    env = gym.make(env_id, disable_env_checker=True)
    family = type(env.unwrapped).__module__.split(".")[2]
    for turn in (0, 2):
        for think in (True, False):
            template = PromptTemplate.for_env(env, think=think)
            prompt, followup = render_pinned_inputs(template, turn)
            if family in NEW_ANSWER_LINES:
                new_line = NEW_ANSWER_LINES[family][think]
                assert prompt.endswith("\n\n" + new_line) and followup.endswith("\n\n" + new_line)
                prompt = prompt.removesuffix(new_line) + OLD_ANSWER_LINES[think]
                followup = followup.removesuffix(new_line) + OLD_ANSWER_LINES[think]
            pinned = PINNED[env_id][f"turn {turn}, think={think}"]
            if "prompt" in pinned:
                assert prompt == pinned["prompt"]
            assert digest(prompt) == pinned["prompt_sha256_16"]
            assert digest(followup) == pinned["followup_sha256_16"]
    env.close()


def test_sokoban_v0_asks_for_three_moves_with_its_separator():
    template = PromptTemplate.for_env(gym.make("agentenvs/Sokoban-v0"), think=False)
    assert template.answer_format == AnswerFormat(("action",), "think", 3, "||")
    prompt, _ = render_pinned_inputs(template, 0)
    assert prompt.endswith(
        "Give your action inside <action> </action>. You may give up to 3 actions, separated by ' || ', "
        "in that one block."
    )


def test_an_instance_with_its_own_kwargs_gets_its_own_prompt():
    env = gym.make("agentenvs/Sokoban-Verl-v0", max_actions_per_turn=2, max_turns=7)
    template = PromptTemplate.for_env(env)
    assert template.instructions == env.unwrapped.instructions and "You have 7 turns" in template.instructions
    assert "up to 2 actions" in render_pinned_inputs(template, 0)[0]
    colbench = gym.make("agentenvs/ColBench-v0", max_turns=4)
    assert "at most 4 messages" in PromptTemplate.for_env(colbench).instructions


@pytest.mark.parametrize("env_id", ["agentenvs/Search-v0", "agentenvs/ColBench-v0"])
def test_a_response_written_as_the_answer_line_says_is_well_formed(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    tags = PromptTemplate.for_env(env).answer_format.action_tags
    body = "capital of france" if tags else "What should happen for an empty order?"
    response = "<think>I need facts</think>" + (f"<{tags[0]}> {body} </{tags[0]}>" if tags else body)
    parsed = env.unwrapped.protocol.parse(response)
    assert parsed.well_formed and parsed.actions and body in parsed.actions[0]


def test_template_options_are_checked():
    env = gym.make("agentenvs/TextCraft-v0")
    with pytest.raises(ValueError, match="style"):
        PromptTemplate.for_env(env, style="fancy")
    with pytest.raises(ValueError, match="history_window"):
        PromptTemplate.for_env(env, history_window=-1)
    with pytest.raises(TypeError, match="history_window"):
        PromptTemplate.for_env(env, history_window=2.0)
    with pytest.raises(TypeError, match="declare instructions, goal_in_first_observation, protocol"):
        PromptTemplate.for_env(gym.make("CartPole-v1"))
    declared = PromptTemplate.for_env(env)
    with pytest.raises(TypeError, match="goal_in_first_observation must be a bool"):
        PromptTemplate(declared.instructions, 1, declared.answer_format)
    with pytest.raises(TypeError, match="answer_format"):
        PromptTemplate(declared.instructions, True, ("action",))


def test_baselines_name_no_env_family_outside_docstrings():
    """Facts about families live in the envs: no family name in the code of baselines/.

    The experiments' strings are the exception: each experiment is a named paper's table rerun on a
    named env, and its docs row cites both (the paper's setting, the miniature's); its names and
    attributes are checked like all the others'."""
    families = ("Sokoban", "ALFWorld", "WebShop", "TextCraft", "BabyAI", "ColBench")
    experiments = ROOT / "baselines" / "experiments"
    found = []
    for path in sorted((ROOT / "baselines").rglob("*.py")):
        prose = experiments in path.parents
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                if prose:
                    continue
                text = node.value
            elif isinstance(node, ast.Name):
                text = node.id
            elif isinstance(node, ast.Attribute):
                text = node.attr
            else:
                continue
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: {name}" for name in families if name in text]
    assert not found


# ------------------------------------------------------------ a family the baselines never saw
TOY_WORDS = ("down", "stay")


class CountdownEnv(AgentEnv[int, str]):
    """Bring a counter to zero; ``<plan>`` then ``<move>down ; stay</move>``, two moves a turn."""

    default_reward_weights: ClassVar[dict[str, float]] = {
        "outcome": 1.0,
        "format": 0.0,
        "invalid_action": -0.1,
    }
    default_max_turns = 3
    reply_max_tokens: ClassVar[int] = 8
    goal_in_first_observation: ClassVar[bool] = True

    def __init__(self, **kwargs: Any) -> None:
        starts = {
            "train": [(f"countdown/train/{n}", n) for n in (2, 3, 4, 5)],
            "test": [("countdown/test/0", 3)],
        }
        super().__init__(ListTaskSource(starts), **kwargs)
        self.count = 0

    @property
    def instructions(self) -> str:
        return f"Countdown: say down until the counter reads zero, within {self.max_turns} turns."

    def default_protocol(self) -> ActionProtocol:
        return ActionProtocol("move", "plan", separator=";", max_actions=2)

    def _start(self, task: int) -> None:
        self.count = task

    def _reset_observation(self) -> str:
        return f"Goal: bring the counter from {self.count} to zero."

    def _parse_action(self, action: str) -> str:
        if action not in TOY_WORDS:
            raise InvalidAction(f"unknown move {action!r}")
        return action

    def _apply(self, primitive: str) -> StepOutcome:
        self.count -= primitive == "down"
        return StepOutcome(f"counter {self.count}", {"outcome": float(self.count == 0)}, self.count == 0)

    def _observation_text(self) -> str:
        return f"counter {self.count}"

    def _state_key_data(self) -> Any:
        return self.count

    def _is_success(self) -> bool:
        return self.count == 0

    def admissible_actions(self) -> list[str]:
        return list(TOY_WORDS)


# registered as a family of its own, outside the package; nothing under baselines/ knows it
COUNTDOWN = EnvEntry(
    name="TestCountdown",
    entry_point=f"{__name__}:CountdownEnv",
    summary="count down to zero",
    family="Countdown",
)


@pytest.fixture
def toy_id(monkeypatch: pytest.MonkeyPatch) -> str:
    return register_for_test(monkeypatch, COUNTDOWN)


TOY_ANSWER = (
    "Think about the situation step by step inside <plan> </plan>, then give your action inside "
    "<move> </move>. You may give up to 2 actions, separated by ' ; ', in that one block."
)


def test_a_new_family_gets_its_prompts_from_its_declarations(toy_id):
    env = gym.make(toy_id)
    template = PromptTemplate.for_env(env)
    first, _ = env.reset(seed=1)
    assert template.render(first_observation=first, history=[], observation=first, turn=0) == (
        f"Countdown: say down until the counter reads zero, within 3 turns.\n\n"
        f"Current observation (turn 1):\n{first}\n\n{TOY_ANSWER}"
    )
    later = template.render(
        first_observation=first,
        history=[HistoryEntry(first, "<move>down</move>")],
        observation="counter 2",
        turn=1,
        admissible=list(TOY_WORDS),
    )
    assert later.split("\n\n")[1] == f"Task: {first}"  # its goal flag keeps the goal in view
    assert later.endswith(f"Admissible actions: ['down', 'stay']\n\n{TOY_ANSWER}")


def test_a_new_family_gets_correct_training_batches(toy_id):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from agentenvs.vector import GroupedVectorEnv
    from baselines.policy import TransformersPolicy
    from baselines.rollout import RolloutEngine
    from baselines.tiny import bpe_tokenizer, random_causal_lm
    from baselines.trainers.config import TrainConfig
    from baselines.trainers.sampler import make_template
    from baselines.trainers.samples import build_samples, collate

    template = make_template(
        TrainConfig.from_mapping({"env": {"id": toy_id}, "sampler": {"history_window": 1}})
    )
    assert template == PromptTemplate.for_env(gym.make(toy_id), history_window=1)
    env = gym.make(toy_id)
    firsts = [str(env.reset(seed=seed)[0]) for seed in range(4)]
    texts = [template.render(first_observation=o, history=[], observation=o, turn=0) for o in firsts]
    tokenizer = bpe_tokenizer(texts, vocab_size=160, words=[*TOY_WORDS, ";"])
    model = random_causal_lm(
        len(tokenizer),
        hidden_size=16,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    allowed = [tokenizer.convert_tokens_to_ids(word) for word in (*TOY_WORDS, ";")]
    policy = TransformersPolicy(model, tokenizer, allowed_token_ids=allowed)
    with GroupedVectorEnv(toy_id, num_groups=2, group_size=2) as vec:
        batch = RolloutEngine(vec, policy, tokenizer, template, max_new_tokens=3).collect(seed=3)

    replay = gym.make(toy_id)
    for trajectory in batch.trajectories:
        first, info = replay.reset(options={"task_id": trajectory.task_id})
        history: list[HistoryEntry] = []
        observation = first
        for k, turn in enumerate(trajectory.turns):
            expected = template.render(
                first_observation=first,
                history=history,
                observation=observation,
                turn=k,
                admissible=info["admissible_actions"],
            )
            assert turn.prompt_text == expected and tokenizer.decode(turn.prompt_ids) == expected
            assert turn.observation == observation
            history.append(HistoryEntry(observation, turn.response_text))
            observation, reward, terminated, truncated, info = replay.step(turn.response_text)
            assert turn.reward == pytest.approx(reward) and turn.components == info["reward_components"]
        assert terminated or truncated
        assert (trajectory.success, trajectory.score) == (info["success"], info["score"])

    advantages = [np.arange(len(t.turns), dtype=np.float64) + 1.0 for t in batch.trajectories]
    samples = build_samples(batch.trajectories, advantages, "window")
    turns = [turn for t in batch.trajectories for turn in t.turns]
    assert len(samples) == len(turns)
    collated = collate(samples, tokenizer.pad_token_id, "cpu")
    for row, (sample, turn) in enumerate(zip(samples, turns, strict=False)):
        assert sample.ids == turn.prompt_ids + turn.response_ids
        policy_tokens = collated.ids[row, 1:][collated.mask[row]].tolist()
        assert policy_tokens == turn.response_ids
        k = sample.turn_of[sample.mask][0]
        assert set(collated.advantages[row][collated.mask[row]].tolist()) == {float(k + 1)}
