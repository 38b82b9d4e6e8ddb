"""agentenvs.integrations.verifiers evaluated by verifiers 0.3.1's own ``evaluate_sync`` against the local
OpenAI-compatible server (a tiny random model on CPU), then replayed through ``gym.make``.

verifiers 0.3.1 needs ``websockets<17`` and ``openai`` 2, against the test extra's pins, so this module runs
in CI's verifiers step, in its own venv (``.venv-verifiers``: torch==2.13.0, then ``.[verifiers,train,serve]``).
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
    "verifiers", reason="verifiers is not installed here: CI's verifiers step runs this module in .venv-verifiers"
)
pytest.importorskip("torch")
from fixtures.app_server import serving  # noqa: E402
from test_readme import python_blocks  # noqa: E402

from agentenvs.agents.local import TransformersChat  # noqa: E402
from agentenvs.agents.openai_server import create_app  # noqa: E402
from agentenvs.integrations.verifiers import EPISODE_KEY, load_environment  # noqa: E402
from baselines.tiny import CHAT_TEMPLATE, bpe_tokenizer, random_causal_lm  # noqa: E402

ENV_ID = "agentenvs/Sokoban-v0"
MOVES = ["up", "down", "left", "right"]
SEEDS = range(3)
ROLLOUTS_PER_SEED = 2
API_KEY_VARIABLE = "AGENTENVS_LOCAL_SERVER_KEY"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The local OpenAI-compatible server over a tiny random model whose tokenizer is learnt from Sokoban's prompts."""
    env = load_environment(ENV_ID, seeds=SEEDS)
    texts = [message["content"] for row in env.get_eval_dataset() for message in row["prompt"]]
    tokenizer = bpe_tokenizer(texts, vocab_size=300, words=MOVES)
    tokenizer.chat_template = CHAT_TEMPLATE
    model = random_causal_lm(
        len(tokenizer), hidden_size=32, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id
    )
    folder = tmp_path_factory.mktemp("tiny-chat")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    chat = TransformersChat.from_pretrained(str(folder))
    with serving(create_app(chat, "tiny")) as url:
        yield f"{url}/v1"


@pytest.fixture(scope="module")
def evaluated(server):
    """verifiers' evaluation of the env: 3 seeds × 2 sampled rollouts from the tiny model behind the server."""
    env = load_environment(ENV_ID, seeds=SEEDS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(API_KEY_VARIABLE, "unused")
        client = vf.ClientConfig(api_base_url=server, api_key_var=API_KEY_VARIABLE, max_retries=0)
        results = env.evaluate_sync(
            client,
            model="tiny",
            sampling_args={"max_tokens": 8, "temperature": 1.0},
            num_examples=len(SEEDS),
            rollouts_per_example=ROLLOUTS_PER_SEED,
            state_columns=[EPISODE_KEY],
        )
    return env, results["outputs"]


def replies(output) -> list[str]:
    return [message["content"] or "" for message in output["completion"] if message["role"] == "assistant"]


def test_every_rollout_ran_to_the_env_s_end_without_error(evaluated):
    _, outputs = evaluated
    assert len(outputs) == len(SEEDS) * ROLLOUTS_PER_SEED
    for output in outputs:
        assert output.get("error") is None and output["is_completed"]
        episode = output[EPISODE_KEY]
        assert episode["terminated"] or episode["truncated"]
        assert replies(output) == episode["responses"] and len(episode["responses"]) >= 1
    # rollouts of one seed are sampled independently
    assert len({tuple(replies(output)) for output in outputs}) > 1


def test_rewards_and_components_equal_a_direct_gym_rollout_of_the_same_replies(evaluated):
    env, outputs = evaluated
    weights = gym.make(ENV_ID).unwrapped.reward_weights
    for output in outputs:
        direct = gym.make(ENV_ID)
        _, info = direct.reset(seed=output["info"]["seed"])
        assert info["task_id"] == output["info"]["task_id"]
        rewards, totals, keys = [], dict.fromkeys(weights, 0.0), [info["state_key"]]
        for reply in replies(output):
            _, reward, terminated, truncated, info = direct.step(reply)
            rewards.append(reward)
            keys.append(info["state_key"])
            for name, value in info["reward_components"].items():
                totals[name] += value
        assert terminated or truncated
        assert math.isclose(output["reward"], sum(rewards), abs_tol=1e-9)
        for name, total in totals.items():
            assert math.isclose(output["metrics"][name], total, abs_tol=1e-9)
        assert output["metrics"]["success"] == float(info["success"])
        assert output["metrics"]["score"] == info["score"]
        assert output[EPISODE_KEY]["state_keys"] == keys


def test_the_rubric_is_the_env_s_reward_components_with_their_weights(evaluated):
    env, _ = evaluated
    weights = gym.make(ENV_ID).unwrapped.reward_weights
    named = dict(zip(env.rubric._get_reward_func_names(), env.rubric._get_reward_weights()))
    assert {name: named[name] for name in weights} == dict(weights)
    assert named["success"] == named["score"] == 0.0
    assert isinstance(env, vf.MultiTurnEnv)


def test_the_readme_example_runs_against_the_local_server(server, tmp_path):
    (block,) = [
        code
        for _, code, _, _ in python_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
        if "agentenvs.integrations.verifiers" in code
    ]
    script = tmp_path / "readme_verifiers.py"
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
        [sys.executable, str(script)], check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(result.stdout.splitlines()) == 8  # 4 seeds × 2 rollouts, one line each
