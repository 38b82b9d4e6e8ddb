"""agentenvs.integrations.verifiers evaluated by verifiers 0.3.1's own ``evaluate_sync`` against the local
OpenAI-compatible server (a tiny random model on CPU), then replayed through ``gym.make``.

The model's vocabulary is the words of a Sokoban reply (the moves, the separator, the action tags; every
other word of a prompt reads as unknown), so its random replies are sometimes legal and sometimes not.
A reply of nothing but the end of text is empty: verifiers itself ends such a rollout
(``EmptyModelResponseError``), keeping the turns played before it.

verifiers 0.3.1 requires openai-agents, which needs ``websockets<17``, below the test extra's, so this module
runs in CI's verifiers step, in its own venv (``.venv-verifiers``: torch==2.13.0, then
``.[verifiers,train,serve]``).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

vf = pytest.importorskip(
    "verifiers",
    reason="verifiers is not installed here: CI's verifiers step runs this module in .venv-verifiers",
)
pytest.importorskip("torch")
from agentenvs.agents.local import TransformersChat  # noqa: E402
from agentenvs.agents.openai_server import create_app  # noqa: E402
from agentenvs.integrations.verifiers import EPISODE_KEY, load_environment  # noqa: E402
from baselines.tiny import CHAT_TEMPLATE, random_causal_lm  # noqa: E402

from fixtures.app_server import serving  # noqa: E402
from fixtures.markdown import python_blocks  # noqa: E402

ENV_ID = "agentenvs/Sokoban-v0"
REPLY_WORDS = ["up", "down", "left", "right", "||", "<action>", "</action>"]
SEEDS = range(3)
ROLLOUTS_PER_SEED = 4
API_KEY_VARIABLE = "AGENTENVS_LOCAL_SERVER_KEY"
ROOT = Path(__file__).resolve().parents[2]


def reply_word_tokenizer():
    """A word-level tokenizer over :data:`REPLY_WORDS` and the special tokens, with the tiny chat template."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["<pad>", "<unk>", "<eos>", *REPLY_WORDS]
    backend = Tokenizer(
        models.WordLevel({word: index for index, word in enumerate(words)}, unk_token="<unk>")
    )
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The local OpenAI-compatible server over a tiny random model that speaks in Sokoban's reply words."""
    tokenizer = reply_word_tokenizer()
    model = random_causal_lm(
        len(tokenizer),
        hidden_size=32,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    folder = tmp_path_factory.mktemp("tiny-chat")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    chat = TransformersChat.from_pretrained(str(folder))
    with serving(create_app(chat, "tiny")) as url:
        yield f"{url}/v1"


@pytest.fixture(scope="module")
def evaluated(server):
    """verifiers' evaluation of the env: 3 seeds × 2 sampled rollouts from the tiny model behind the
    server."""
    env = load_environment(ENV_ID, seeds=SEEDS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(API_KEY_VARIABLE, "unused")
        client = vf.ClientConfig(api_base_url=server, api_key_var=API_KEY_VARIABLE, max_retries=0)
        results = env.evaluate_sync(
            client,
            model="tiny",
            sampling_args={"max_tokens": 6, "temperature": 1.0},
            num_examples=len(SEEDS),
            rollouts_per_example=ROLLOUTS_PER_SEED,
            state_columns=[EPISODE_KEY],
        )
    return env, results["outputs"]


def replies(output) -> list[str]:
    return [message["content"] or "" for message in output["completion"] if message["role"] == "assistant"]


def test_each_rollout_ran_to_the_env_s_end_or_stopped_on_an_empty_reply(evaluated):
    _, outputs = evaluated
    assert len(outputs) == len(SEEDS) * ROLLOUTS_PER_SEED
    ended = 0
    for output in outputs:
        episode = output[EPISODE_KEY]
        assert replies(output) == episode["responses"]
        if output.get("error") is None:
            assert output["is_completed"] and output["stop_condition"] == "has_final_env_response"
            assert episode["terminated"] or episode["truncated"]
            ended += 1
        else:  # verifiers' own rule, before the env sees the reply
            assert output["error"]["error"] == "EmptyModelResponseError"
            assert not (episode["terminated"] or episode["truncated"])
    assert ended > 0
    # the random replies are sometimes legal: invalid_action fired in some turns and not in others
    invalid = {turn["invalid_action"] for output in outputs for turn in output[EPISODE_KEY]["components"]}
    assert invalid == {0.0, 1.0}


def test_rewards_and_components_equal_a_direct_gym_rollout_of_the_same_replies(evaluated):
    _, outputs = evaluated
    weights = gym.make(ENV_ID).unwrapped.reward_weights
    for output in outputs:
        direct = gym.make(ENV_ID)
        _, info = direct.reset(seed=int(output["info"]["seed"]))
        assert info["task_id"] == output["info"]["task_id"]
        rewards, totals, keys = [], dict.fromkeys(weights, 0.0), [info["state_key"]]
        for reply in replies(output):
            _, reward, _, _, info = direct.step(reply)
            rewards.append(reward)
            keys.append(info["state_key"])
            for name, value in info["reward_components"].items():
                totals[name] += value
        assert math.isclose(output["reward"], sum(rewards), abs_tol=1e-9)
        for name, total in totals.items():
            assert math.isclose(output["metrics"][name], total, abs_tol=1e-9)
        assert output[EPISODE_KEY]["state_keys"] == keys
        ended = output.get("error") is None
        assert ended == ("success" in info)  # the env ended exactly the rollouts verifiers did not stop
        assert output["metrics"]["success"] == (float(info["success"]) if ended else 0.0)
        assert output["metrics"]["score"] == (info["score"] if ended else 0.0)


def test_the_rubric_is_the_env_s_reward_components_with_their_weights(evaluated):
    env, _ = evaluated
    weights = gym.make(ENV_ID).unwrapped.reward_weights
    named = dict(zip(env.rubric._get_reward_func_names(), env.rubric._get_reward_weights(), strict=False))
    assert {name: named[name] for name in weights} == dict(weights)
    assert named["success"] == named["score"] == 0.0
    assert isinstance(env, vf.MultiTurnEnv)


def test_the_docs_example_runs_against_the_local_server(server, tmp_path):
    (block,) = [
        code
        for _, code, _, _ in python_blocks(
            (ROOT / "docs" / "reference" / "integrations.md").read_text(encoding="utf-8")
        )
        if "agentenvs.integrations.verifiers" in code
    ]
    script = tmp_path / "docs_verifiers.py"
    script.write_text(block, encoding="utf-8")
    paths = [str(ROOT), os.environ.get("PYTHONPATH")]
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(path for path in paths if path),
        OPENAI_BASE_URL=server,
        OPENAI_API_KEY="unused",
        MODEL="tiny",
    )
    result = subprocess.run(
        [sys.executable, str(script)],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(result.stdout.splitlines()) == 8  # 4 seeds × 2 rollouts, one line each


def test_seeds_past_the_int64_range_make_rows_that_reset_to_the_same_prompt():
    env = load_environment(ENV_ID, seeds=[2**64, 10**30])
    direct = gym.make(ENV_ID)
    for row, seed in zip(env.get_eval_dataset(), [2**64, 10**30], strict=False):
        assert int(row["info"]["seed"]) == seed
        observation, _ = direct.reset(seed=seed)
        assert observation in row["prompt"][-1]["content"]
    with pytest.raises(TypeError, match="ints"):
        load_environment(ENV_ID, seeds=[1.5])
