"""Rollout engine, prompts and the transformers policy backend on a tiny offline model."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import agentenvs  # noqa: F401
from agentenvs.vector import GroupedVectorEnv
from baselines.policy import TransformersPolicy
from baselines.prompts import HistoryEntry, PromptTemplate
from baselines.rollout import PromptEncoder, RolloutEngine
from baselines.tiny import bpe_tokenizer, random_causal_lm
from baselines.trainers.samples import Sample, collate, sequence_logprobs

ENV_ID = "agentenvs/Sokoban-Verl-v0"
ENV_KWARGS = {"dim_room": (5, 5), "min_solution_length": 3, "max_turns": 4}
ACTIONS = ["up", "down", "left", "right"]


@pytest.fixture(scope="module")
def tokenizer():
    env = gym.make(ENV_ID, **ENV_KWARGS)
    texts = [str(env.reset(seed=i)[0]) for i in range(4)]
    template = PromptTemplate.for_env(env)
    texts.append(template.render(first_observation=texts[0], history=[], observation=texts[0], turn=0))
    return bpe_tokenizer(texts, vocab_size=200, words=ACTIONS)


@pytest.fixture(scope="module")
def model(tokenizer):
    torch.set_num_threads(1)
    return random_causal_lm(
        len(tokenizer),
        hidden_size=32,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )


def test_template_window():
    template = PromptTemplate.for_env(gym.make("agentenvs/ALFWorld-v0"), history_window=2)
    history = [HistoryEntry(f"obs{k}", f"act{k}") for k in range(4)]
    text = template.render(
        first_observation="Your task is to: x",
        history=history,
        observation="now",
        turn=4,
        admissible=["go to desk 1"],
    )
    assert "Task: Your task is to: x" in text
    assert "obs1" not in text and "[Observation 3] obs2" in text and "[Your action 4] act3" in text
    assert "'go to desk 1'" in text and "<action>" in text and "<think>" in text
    compact = PromptTemplate.for_env(gym.make(ENV_ID), style="compact")
    assert compact.render(first_observation="a", history=history, observation="grid", turn=1) == "grid\n"
    several = PromptTemplate.for_env(gym.make("agentenvs/Sokoban-v0"), think=False)
    assert "up to 3 actions" in several.render(first_observation="g", history=[], observation="g", turn=0)


def test_bpe_tokenizer_round_trips_and_keeps_action_words_whole(tokenizer):
    env = gym.make(ENV_ID, **ENV_KWARGS)
    observation = str(env.reset(seed=11)[0])
    ids = tokenizer(observation, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == observation
    assert len(ids) < len(observation) / 2  # merges compress the repeated text
    for word in ACTIONS:
        assert len(tokenizer(word, add_special_tokens=False)["input_ids"]) == 1


def test_generation_is_reproducible_and_matches_training_logprobs(model, tokenizer):
    policy = TransformersPolicy(model, tokenizer)
    prompts = [
        tokenizer("#_P_#\n", add_special_tokens=False)["input_ids"],
        tokenizer("#####\n#__X#\n", add_special_tokens=False)["input_ids"],
    ]
    first = policy.generate(prompts, max_new_tokens=5, temperature=1.0, seed=3)
    assert first == policy.generate(prompts, max_new_tokens=5, temperature=1.0, seed=3)
    # greedy tokens from left-padded generation are the argmax of the right-padded training forward
    greedy = policy.generate(prompts, max_new_tokens=4, temperature=0.0, seed=0)
    samples = []
    for prompt, response in zip(prompts, greedy, strict=False):
        mask = np.zeros(len(prompt) + len(response), dtype=bool)
        mask[len(prompt) :] = True
        samples.append(
            Sample(prompt + response, mask, np.zeros(len(mask)), np.zeros(len(mask), dtype=np.int64), 0)
        )
    batch = collate(samples, tokenizer.pad_token_id, "cpu")
    with torch.no_grad():
        logits = model(input_ids=batch.ids, attention_mask=batch.attention).logits[:, :-1]
    for row, sample in enumerate(samples):
        positions = np.flatnonzero(sample.mask[1:])
        assert logits[row, positions].argmax(-1).tolist() == sample.ids[len(sample.ids) - len(positions) :]


def test_constrained_sampling_only_emits_allowed_tokens(model, tokenizer):
    allowed = [tokenizer.convert_tokens_to_ids(w) for w in ACTIONS]
    policy = TransformersPolicy(model, tokenizer, allowed_token_ids=allowed)
    out = policy.generate([[5, 6, 7]] * 16, max_new_tokens=3, temperature=1.0, seed=1)
    assert all(token in allowed for response in out for token in response)


def _engine(model, tokenizer, context, group_size=3):
    vec = GroupedVectorEnv(ENV_ID, num_groups=2, group_size=group_size, env_kwargs=ENV_KWARGS)
    template = PromptTemplate.for_env(
        gym.make(ENV_ID, **ENV_KWARGS), style="compact" if context == "full" else "full", history_window=2
    )
    policy = TransformersPolicy(
        model, tokenizer, allowed_token_ids=[tokenizer.convert_tokens_to_ids(w) for w in ACTIONS]
    )
    return vec, RolloutEngine(vec, policy, tokenizer, template, max_new_tokens=1, context=context)


def test_window_rollout_records_what_the_env_did(model, tokenizer):
    vec, engine = _engine(model, tokenizer, "window")
    with vec:
        batch = engine.collect(seed=5)
    trajectories = batch.trajectories
    assert [(t.group, t.copy) for t in trajectories] == [(g, c) for g in range(2) for c in range(3)]
    assert batch.generated_tokens == sum(len(turn.response_ids) for t in trajectories for turn in t.turns)
    assert batch.generation_s > 0 and batch.env_s > 0
    for group in range(2):
        members = [t for t in trajectories if t.group == group]
        assert len({t.task_id for t in members}) == 1
        assert len({t.turns[0].state_key for t in members}) == 1
    # replaying the recorded responses in a fresh env reproduces rewards, components and keys
    env = gym.make(ENV_ID, **ENV_KWARGS)
    for trajectory in trajectories:
        assert 1 <= len(trajectory.turns) <= ENV_KWARGS["max_turns"]
        observation, info = env.reset(options={"task_id": trajectory.task_id})
        for turn in trajectory.turns:
            assert (turn.state_key, turn.obs_key) == (info["state_key"], info["obs_key"])
            assert turn.privileged == info.get("privileged")
            assert (
                turn.prompt_text.endswith(turn.observation) is False
            )  # the full template follows with the answer format
            assert turn.observation in turn.prompt_text
            observation, reward, terminated, truncated, info = env.step(turn.response_text)
            assert turn.reward == pytest.approx(reward)
            assert turn.components == info["reward_components"]
        assert terminated or truncated
        assert trajectory.success == info["success"] and trajectory.score == info["score"]


def test_full_context_packs_policy_and_environment_tokens(model, tokenizer):
    vec, engine = _engine(model, tokenizer, "full", group_size=2)
    with vec:
        batch = engine.collect(seed=1)
    for trajectory in batch.trajectories:
        ids, mask, turn_of = trajectory.packed()
        assert mask.sum() == sum(len(turn.response_ids) for turn in trajectory.turns)
        assert sorted(set(turn_of[mask].tolist())) == list(range(len(trajectory.turns)))
        # the environment tokens after turn k's response decode to the next observation
        for k in range(1, len(trajectory.turns)):
            previous = trajectory.turns[k - 1]
            start = len(previous.prompt_ids) + len(previous.response_ids)
            env_tokens = trajectory.turns[k].prompt_ids[start:]
            assert not mask[start : start + len(env_tokens)].any()
            assert tokenizer.decode(env_tokens) == trajectory.turns[k].observation + "\n"


def test_chat_template_continuation_reproduces_the_conversation(tokenizer):
    chat = bpe_tokenizer(["[user]U0 [assistant]A0 [user]U1\n"], vocab_size=120)
    chat.chat_template = (
        "{% for m in messages %}[{{ m.role }}]{{ m.content }}<eos>\n{% endfor %}"
        "{% if add_generation_prompt %}[assistant]{% endif %}"
    )
    encoder = PromptEncoder(chat)
    first = encoder.first("U0")
    response = chat("A0", add_special_tokens=False)["input_ids"] + [chat.eos_token_id]
    following = encoder.continuation("U1", first + response)
    conversation = [
        {"role": "user", "content": "U0"},
        {"role": "assistant", "content": "A0"},
        {"role": "user", "content": "U1"},
    ]
    expected = chat.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
    assert chat.decode(first + response + following) == expected
    # a response cut by the token limit (no EOS) gets the closing marker from the environment side
    cut = chat("A0", add_special_tokens=False)["input_ids"]
    assert chat.decode(first + cut + encoder.continuation("U1", first + cut)) == expected


def test_allowed_vocabulary_renormalises_training_logprobs(model, tokenizer):
    allowed_ids = [tokenizer.convert_tokens_to_ids(w) for w in ACTIONS]
    allowed = torch.zeros(len(tokenizer), dtype=torch.bool)
    allowed[allowed_ids] = True
    ids = tokenizer("#_P_#\n", add_special_tokens=False)["input_ids"] + [allowed_ids[0]]
    mask = np.zeros(len(ids), dtype=bool)
    mask[-1] = True
    batch = collate(
        [Sample(ids, mask, np.zeros(len(ids)), np.zeros(len(ids), dtype=np.int64), 0)],
        tokenizer.pad_token_id,
        "cpu",
    )
    with torch.no_grad():
        restricted, _ = sequence_logprobs(model, batch, allowed=allowed)
        logits = model(input_ids=batch.ids, attention_mask=batch.attention).logits[0, -2]
    expected = torch.log_softmax(logits[allowed_ids], -1)[0]
    assert restricted[0, -1].item() == pytest.approx(expected.item(), abs=1e-5)
    assert restricted[0, :-1].abs().sum().item() == 0.0


class BreaksOnTask(gym.Wrapper):
    """Sokoban whose step raises from the second turn on, for episodes reset with ``broken_seed``."""

    def __init__(self, broken_seed: int, **kwargs):
        super().__init__(gym.make(ENV_ID, **kwargs))
        self.broken_seed = broken_seed
        self.seed_used: int | None = None
        self.turns = 0

    def reset(self, *, seed=None, options=None):
        self.seed_used, self.turns = seed, 0
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        self.turns += 1
        if self.seed_used == self.broken_seed and self.turns >= 2:
            raise RuntimeError("the env broke")
        return self.env.step(action)


def _crashing_engine(model, tokenizer, on_crash):
    kwargs = {**ENV_KWARGS, "max_turns": 6}
    vec = GroupedVectorEnv(BreaksOnTask, num_groups=2, group_size=3, env_kwargs={"broken_seed": 8, **kwargs})
    template = PromptTemplate.for_env(gym.make(ENV_ID, **kwargs), style="compact")
    policy = TransformersPolicy(model, tokenizer, allowed_token_ids=[tokenizer.convert_tokens_to_ids("up")])
    return vec, RolloutEngine(vec, policy, tokenizer, template, max_new_tokens=1, on_crash=on_crash)


def test_crashed_episodes_are_dropped_counted_and_logged_once(model, tokenizer, caplog):
    from baselines.metrics import rollout_metrics

    vec, engine = _crashing_engine(model, tokenizer, "drop")
    with vec, caplog.at_level("ERROR", logger="baselines.rollout"):
        batch = engine.collect(seed=7)  # group 0 plays seed 7, group 1 seed 8 (broken)
    assert [t.group for t in batch.trajectories] == [0, 0, 0]
    assert [(t.group, t.copy) for t in batch.crashed] == [(1, 0), (1, 1), (1, 2)]
    assert all(t.crashed and "the env broke" in t.error and "Traceback" in t.error for t in batch.crashed)
    assert not any(t.crashed for t in batch.trajectories)
    metrics = rollout_metrics(batch)
    assert metrics["crashed_episodes"] == 3.0 and metrics["episodes"] == 3.0
    logged = [r for r in caplog.records if "crashed" in r.getMessage()]
    assert len(logged) == 1 and "the env broke" in logged[0].getMessage()


def test_a_crash_stops_the_rollout_by_default(model, tokenizer):
    from baselines.rollout import EnvCrashed
    from baselines.trainers.config import TrainConfig
    from baselines.trainers.sampler import make_engine

    vec, engine = _crashing_engine(model, tokenizer, "stop")
    assert engine.on_crash == "stop" == TrainConfig().sampler.on_crash
    with vec, pytest.raises(EnvCrashed, match="the env broke"):
        engine.collect(seed=7)
    dropping_config = TrainConfig.from_mapping({"env": {"id": "x"}, "sampler": {"on_crash": "drop"}})
    dropping = make_engine(dropping_config, vec, engine.policy, tokenizer, engine.template)
    assert dropping.on_crash == "drop"


def test_make_sampler_hands_the_stop_id_and_the_action_vocabulary_to_vllm(model, tokenizer, monkeypatch):
    from baselines.trainers import sampler
    from baselines.trainers.config import TrainConfig

    made = {}

    class Recorder:
        def __init__(self, model_path, **kwargs):
            made.update(kwargs, model_path=model_path)

    monkeypatch.setattr(sampler, "VLLMPolicy", Recorder)
    config = TrainConfig.from_mapping(
        {
            "env": {"id": "x"},
            "sampler": {"backend": "vllm"},
            "policy": {"model": "/models/tiny", "constrain_to_actions": True, "action_words": ACTIONS},
        }
    )
    sampler.make_sampler(config, model, tokenizer)
    assert made["model_path"] == "/models/tiny"
    assert made["eos_token_id"] == tokenizer.eos_token_id
    assert made["allowed_token_ids"] == sorted(tokenizer.convert_tokens_to_ids(w) for w in ACTIONS)
