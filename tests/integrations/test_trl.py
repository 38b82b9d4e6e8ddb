"""agentenvs.integrations.trl through TRL 1.16's own GRPOTrainer: a tiny random model trained 2 steps on
Sokoban.

The model samples only the tokens a bare Sokoban reply is made of (the moves, the separator, the end of
text, which is favoured so that replies stay short), so its random replies are sometimes legal and sometimes
not, and a group's rewards differ. The seeds include 1 and 33, two tasks that start with the same prompt
text, and the env runs with non-default ``env_kwargs``, so a replay needs the recorded seed and kwargs.
"""

from __future__ import annotations

import copy
import math
from types import SimpleNamespace

import gymnasium as gym
import pytest

trl = pytest.importorskip("trl", reason="the trl extra is not installed: pip install -e '.[trl]'")
torch = pytest.importorskip("torch")

from agentenvs.core.registration import main_ids  # noqa: E402
from agentenvs.integrations.trl import Episode, GRPOEnvironment  # noqa: E402
from baselines.tiny import CHAT_TEMPLATE, bpe_tokenizer, random_causal_lm  # noqa: E402

ENV_ID = "agentenvs/Sokoban-v0"
# the field of a dataset prompt's first message that carries its seed (agentenvs.integrations.trl.SEED_FIELD)
SEED_FIELD = "agentenvs_seed"
# Sokoban seeds 1 and 33 start different tasks behind the same prompt text
SAME_TEXT_SEEDS = (1, 33)
TRAINED_SEEDS = [1, 33, 0, 2]
# not the defaults: a replay that left them out would score the same replies differently
ENV_KWARGS = {"max_turns": 2, "reward_weights": {"step_penalty": -0.25, "invalid_action": -0.5}}
MOVES = ["up", "down", "left", "right"]
SEPARATOR = "||"


def tiny_policy(environment: GRPOEnvironment):
    """A random Llama and a BPE tokenizer learnt from the env's prompts, with a chat template."""
    texts = [message["content"] for messages in environment.prompts for message in messages]
    tokenizer = bpe_tokenizer(texts, vocab_size=300, words=MOVES)
    tokenizer.chat_template = CHAT_TEMPLATE
    model = random_causal_lm(
        len(tokenizer),
        hidden_size=32,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return model, tokenizer


def bare_moves_only(tokenizer) -> dict:
    """Generation settings that leave the sampler the moves, the separator and the (favoured) end of text."""
    allowed = {tokenizer.convert_tokens_to_ids(token) for token in [*MOVES, SEPARATOR]} | {
        tokenizer.eos_token_id
    }
    return {
        "suppress_tokens": [token for token in range(len(tokenizer)) if token not in allowed],
        "sequence_bias": [[[tokenizer.eos_token_id], 2.0]],
        "max_new_tokens": 8,
    }


def replay(episode: Episode, env_kwargs: dict | None = None) -> Episode:
    """The same seed and replies played through ``gym.make(episode.env_id, **episode.env_kwargs)`` directly
    (or with ``env_kwargs`` instead, where given)."""
    env_kwargs = episode.env_kwargs if env_kwargs is None else env_kwargs
    env = gym.make(episode.env_id, **env_kwargs)
    _, info = env.reset(seed=episode.seed)
    rewards, components, keys = [], [], [info["state_key"]]
    terminated = truncated = False
    for response in episode.responses:
        _, reward, terminated, truncated, info = env.step(response)
        rewards.append(float(reward))
        components.append(dict(info["reward_components"]))
        keys.append(info["state_key"])
    return Episode(
        env_id=episode.env_id,
        env_kwargs=env_kwargs,
        seed=episode.seed,
        task_id=info["task_id"],
        responses=episode.responses,
        rewards=tuple(rewards),
        components=tuple(components),
        state_keys=tuple(keys),
        terminated=terminated,
        truncated=truncated,
        out_of_tokens=episode.out_of_tokens,
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    episodes: list[Episode] = []
    environment = GRPOEnvironment(
        ENV_ID, seeds=TRAINED_SEEDS, env_kwargs=ENV_KWARGS, on_episode=episodes.append
    )
    model, tokenizer = tiny_policy(environment)
    before = {name: tensor.detach().clone() for name, tensor in model.named_parameters()}
    config = trl.GRPOConfig(
        output_dir=str(tmp_path_factory.mktemp("grpo")),
        max_steps=2,
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=640,
        learning_rate=1e-2,
        beta=0.0,
        temperature=1.0,
        generation_kwargs=bare_moves_only(tokenizer),
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        seed=0,
    )
    trainer = trl.GRPOTrainer(
        model=model, args=config, processing_class=tokenizer, **environment.trainer_kwargs()
    )
    trainer.train()
    environment.close()
    return trainer, environment, episodes, before


def test_two_grpo_steps_move_the_parameters_with_non_zero_advantages(trained):
    trainer, _, episodes, before = trained
    logs = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert trainer.state.global_step == 2 and len(logs) == 2
    # a group whose rewards all agree has zero advantages; some group in the run did not
    assert min(entry["frac_reward_zero_std"] for entry in logs) < 1.0
    assert max(entry["reward_std"] for entry in logs) > 0.0
    # with beta = 0 and no weight decay the advantage-weighted ratio is the loss's only gradient source
    assert trainer.args.beta == 0.0 and trainer.args.weight_decay == 0.0
    assert max(entry["grad_norm"] for entry in logs) > 0.0
    changed = [
        name for name, tensor in trainer.model.named_parameters() if not torch.equal(tensor, before[name])
    ]
    assert len(changed) == len(before)
    assert len(episodes) == 16 and any(len(episode.responses) > 1 for episode in episodes)


def test_each_reward_component_is_logged_and_they_add_up_to_the_return(trained):
    trainer, environment, episodes, _ = trained
    logs = [entry for entry in trainer.state.log_history if "reward" in entry]
    names = set(environment.reward_weights)
    assert names == {"outcome", "box_placement", "format", "step_penalty", "invalid_action"}
    for entry in logs:
        assert {f"rewards/{name}/mean" for name in names} <= set(entry)
        assert math.isclose(
            sum(entry[f"rewards/{name}/mean"] for name in names), entry["reward"], abs_tol=1e-5
        )
    step_mean = sum(episode.episode_return for episode in episodes[:8]) / 8
    assert math.isclose(logs[0]["reward"], step_mean, abs_tol=1e-5)
    # the random replies are sometimes legal: invalid_action fired in some turns and not in others
    invalid = {turn["invalid_action"] for episode in episodes for turn in episode.components}
    assert invalid == {0.0, 1.0}


def test_recorded_episodes_replay_identically_through_gym_make(trained):
    _, _, episodes, _ = trained
    for episode in episodes:
        assert episode.env_kwargs == ENV_KWARGS
        assert replay(episode) == episode
        ended = episode.terminated or episode.truncated or episode.out_of_tokens
        assert ended and len(episode.state_keys) == len(episode.responses) + 1
    # the kwargs matter: without them the same replies score otherwise
    assert any(replay(episode, env_kwargs={}).rewards != episode.rewards for episode in episodes)


def test_seeds_with_the_same_prompt_text_train_as_the_tasks_their_rows_name(trained):
    _, environment, episodes, _ = trained
    first, second = (environment.prompts[TRAINED_SEEDS.index(seed)] for seed in SAME_TEXT_SEEDS)
    assert first == second
    # every row was drawn, 4 generations each, and each episode played its own row's seed and task
    assert sorted(episode.seed for episode in episodes) == sorted(TRAINED_SEEDS * 4)
    for episode in episodes:
        assert episode.task_id == environment.task_ids[TRAINED_SEEDS.index(episode.seed)]
    assert {episode.task_id for episode in episodes} == set(environment.task_ids) and len(episodes) == 16


CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<eos>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        # turns closed by "\n" only: the next user turn and the assistant header follow the reply
        (CHAT_TEMPLATE, "<|user|>\n#P_O#\n<|assistant|>\n"),
        # turns closed by EOS (ChatML): the reply's own EOS closes it, the template's "\n" after it comes next
        (CHATML, "\n<|im_start|>user\n#P_O#<eos>\n<|im_start|>assistant\n"),
    ],
)
def test_the_tokens_between_two_replies_are_the_templates_user_turn(template, expected):
    from agentenvs.integrations.trl import _turn_suffix_ids

    tokenizer = bpe_tokenizer(["#P_O#", "<|im_start|>user assistant <|user|> <|assistant|>"], vocab_size=200)
    tokenizer.chat_template = template
    suffix = _turn_suffix_ids(tokenizer, {"role": "user", "content": "#P_O#"}, {})
    assert tokenizer.decode(suffix) == expected


def test_seeds_must_be_ints_and_not_empty():
    with pytest.raises(TypeError, match="ints"):
        GRPOEnvironment(ENV_ID, seeds=[0, 1.0])
    with pytest.raises(TypeError, match="ints"):
        GRPOEnvironment(ENV_ID, seeds=[True])
    with pytest.raises(ValueError, match="empty"):
        GRPOEnvironment(ENV_ID, seeds=[])
    assert len(GRPOEnvironment(ENV_ID, seeds=[2**64]).train_dataset()) == 1  # any seed reset takes


def test_one_dataset_row_per_seed_and_a_foreign_prompt_is_refused():
    environment = GRPOEnvironment(ENV_ID, seeds=[3, 3, 5])
    rows = environment.train_dataset()
    assert len(rows) == 3 and rows[0]["prompt"] == rows[1]["prompt"] != rows[2]["prompt"]
    env = gym.make(ENV_ID)
    observation, _ = env.reset(seed=5)
    assert rows[2]["prompt"][0] == {
        "role": "system",
        "content": env.unwrapped.instructions,
        SEED_FIELD: "5",
    }
    assert observation in rows[2]["prompt"][1]["content"] and "privileged" not in str(rows[2]["prompt"])
    foreign = [{"role": "system", "content": "x"}, {"role": "user", "content": "y"}]
    # refused before any trainer is asked to generate: no seed field, a seed not built, a seed on other text
    for prompt in (
        foreign,
        [{**foreign[0], SEED_FIELD: "3"}, foreign[1]],
        [{**rows[2]["prompt"][0], SEED_FIELD: "4"}, rows[2]["prompt"][1]],
        [{**rows[2]["prompt"][0], SEED_FIELD: "3"}, rows[2]["prompt"][1]],
    ):
        with pytest.raises(ValueError, match="did not build"):
            environment([rows[0]["prompt"], prompt], trainer=None)


class StubTokenizer:
    """A tokenizer whose chat template writes each message's role and content, one token a character, and
    records the messages it rendered; it decodes every reply to nothing."""

    eos_token_id = -1

    def __init__(self) -> None:
        self.rendered: list[dict] = []

    def apply_chat_template(self, messages, add_generation_prompt, **_):
        self.rendered += messages
        ids = [ord(char) for message in messages for char in f"{message['role']}:{message['content']};"]
        return ids + ([0] if add_generation_prompt else [])

    def decode(self, ids, skip_special_tokens):
        return ""


def one_turn_trainer() -> SimpleNamespace:
    """What ``rollout_func`` reads of a ``GRPOTrainer``, with no room for a single completion token: each
    episode is its reset and one empty (invalid) turn."""
    return SimpleNamespace(
        processing_class=StubTokenizer(),
        max_completion_length=0,
        _generate_single_turn=lambda prompt_ids, *_: ([[] for _ in prompt_ids], None),
    )


def rollout_dataset(environment: GRPOEnvironment, trainer: SimpleNamespace, batch: int) -> None:
    """Call ``rollout_func`` as ``GRPOTrainer._generate`` does: the rows' ``prompt`` column, deep-copied, a
    batch at a time."""
    prompts = environment.train_dataset()["prompt"]
    for start in range(0, len(prompts), batch):
        environment(copy.deepcopy(prompts[start : start + batch]), trainer)


@pytest.mark.parametrize("env_id", main_ids())
def test_every_main_id_trains_on_256_tasks_whose_prompts_map_back_to_their_seeds(env_id):
    episodes: list[Episode] = []
    environment = GRPOEnvironment(env_id, seeds=range(256), on_episode=episodes.append)
    try:
        rollout_dataset(environment, one_turn_trainer(), batch=8)
    finally:
        environment.close()
    assert [episode.seed for episode in episodes] == list(range(256))
    assert len({episode.task_id for episode in episodes}) == 256


def test_rollout_func_plays_each_prompt_s_own_seed_where_prompt_texts_coincide():
    """ColBench seeds 2 and 4 (and 1 and 3) start different tasks, with different hidden specs, behind the
    same text: each plays its own, and the seed field never reaches the chat template."""
    env_id, seeds = "agentenvs/ColBench-v0", list(range(8))
    episodes: list[Episode] = []
    environment = GRPOEnvironment(env_id, seeds=seeds, on_episode=episodes.append)
    assert (
        environment.prompts[2] == environment.prompts[4]
        and environment.task_ids[2] != environment.task_ids[4]
    )
    trainer = one_turn_trainer()
    rollout_dataset(environment, trainer, batch=len(seeds))
    environment.close()
    assert [episode.seed for episode in episodes] == seeds
    assert [episode.task_id for episode in episodes] == environment.task_ids
    direct = gym.make(env_id)
    for episode in episodes:
        _, info = direct.reset(seed=episode.seed)
        assert episode.state_keys[0] == info["state_key"]
    assert len({episode.state_keys[0] for episode in episodes}) == len(seeds)
    assert trainer.processing_class.rendered and all(
        set(message) == {"role", "content"} for message in trainer.processing_class.rendered
    )
