"""agentenvs.integrations.verifiers evaluated by verifiers 0.3.1's own ``evaluate_sync`` against the local
OpenAI-compatible server (a tiny random model on CPU), then replayed through ``gym.make``.

The model's vocabulary is the words of a Sokoban reply (the moves, the separator, the action tags; every
other word of a prompt reads as unknown), so its random replies are sometimes legal and sometimes not.
A reply of nothing but the end of text is empty: verifiers itself ends such a rollout
(``EmptyModelResponseError``), keeping the turns played before it.

A slow test env (the counter fixture with a sleep in ``reset`` and ``step``) behind a scripted
OpenAI-compatible server shows verifiers' concurrent rollouts overlapping their env calls.

verifiers 0.3.1 requires openai-agents, which needs ``websockets<17``, below the test extra's, so this module
runs in CI's verifiers step, in its own venv (``.venv-verifiers``: torch==2.13.0, then
``.[verifiers,train,serve]``).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import time
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
from agentenvs.core import EnvEntry  # noqa: E402
from agentenvs.core.chat import ChatReply  # noqa: E402
from agentenvs.integrations.verifiers import EPISODE_KEY, load_environment  # noqa: E402
from baselines.tiny import CHAT_TEMPLATE, random_causal_lm  # noqa: E402

from fixtures.app_server import serving  # noqa: E402
from fixtures.counter_env import CounterEnv  # noqa: E402
from fixtures.markdown import python_blocks  # noqa: E402
from fixtures.registry import register_for_test  # noqa: E402

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


SLOW_COUNTER = EnvEntry(
    name="TestSlowCounter",
    entry_point="fixtures.counter_env:CounterEnv",
    summary="count to the target, slowly",
    family="Counter",
)
# long enough that rollouts started together meet inside each other's env calls; no assertion reads time
ENV_CALL_S = 0.5


class CallLog:
    """The order in which env calls started and ended, across the worker threads."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, int]] = []
        self._lock = threading.Lock()
        self._envs: list = []  # held, so that no two envs of a test share an id()

    def record(self, event: str, kind: str, env) -> None:
        with self._lock:
            self._envs.append(env)
            self.events.append((event, kind, id(env)))

    def slowed(self, kind: str, method):
        log = self

        def call(env, *args, **kwargs):
            log.record("start", kind, env)
            time.sleep(ENV_CALL_S)
            try:
                return method(env, *args, **kwargs)
            finally:
                log.record("end", kind, env)

        return call

    def logged(self, kind: str, method):
        log = self

        def call(env, *args, **kwargs):
            log.record(kind, kind, env)
            return method(env, *args, **kwargs)

        return call

    def most_in_flight(self, kind: str) -> int:
        """The most calls of ``kind`` that had started and not yet ended at any one point."""
        in_flight = most = 0
        for event, event_kind, _ in self.events:
            if event_kind == kind:
                in_flight += 1 if event == "start" else -1
                most = max(most, in_flight)
        return most


class ScriptedChat:
    """What the local server asks of a chat model: every request answered with the same reply."""

    def __init__(self, reply: str) -> None:
        self.reply = reply

    def context_length(self) -> int:
        return 4096

    def complete(self, messages, **_) -> ChatReply:
        return ChatReply(self.reply, "stop", prompt_tokens=1, completion_tokens=1, attempts=1)


@pytest.fixture
def slow_counter(monkeypatch):
    """A registered test env whose ``reset`` and ``step`` each sleep, logging when each call starts and
    ends."""
    log = CallLog()
    monkeypatch.setattr(CounterEnv, "reset", log.slowed("reset", CounterEnv.reset))
    monkeypatch.setattr(CounterEnv, "step", log.slowed("step", CounterEnv.step))
    monkeypatch.setattr(CounterEnv, "close", log.logged("close", CounterEnv.close))
    return register_for_test(monkeypatch, SLOW_COUNTER), log


def evaluate_scripted(env, rollouts: int) -> list:
    """verifiers' ``evaluate_sync`` of ``rollouts`` rows, one rollout each, against the local server whose
    model answers ``<action>inc</action>`` to everything."""
    with serving(create_app(ScriptedChat("<action>inc</action>"), "scripted")) as url:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(API_KEY_VARIABLE, "unused")
            client = vf.ClientConfig(api_base_url=f"{url}/v1", api_key_var=API_KEY_VARIABLE, max_retries=0)
            results = env.evaluate_sync(
                client,
                model="scripted",
                num_examples=rollouts,
                rollouts_per_example=1,
                state_columns=[EPISODE_KEY],
            )
    return results["outputs"]


def test_concurrent_rollouts_overlap_their_slow_env_calls(slow_counter):
    """verifiers runs an evaluation's rollouts as coroutines on one event loop: an env call that blocked
    the loop would run the rollouts' resets and steps one after the other."""
    env_id, log = slow_counter
    rollouts = 4
    env = load_environment(env_id, seeds=range(rollouts), max_turns=2)
    outputs = evaluate_scripted(env, rollouts)
    assert len(outputs) == rollouts and all(output.get("error") is None for output in outputs)
    played = [output[EPISODE_KEY] for output in outputs]
    assert all(episode["terminated"] or episode["truncated"] for episode in played)
    steps = sum(len(episode["responses"]) for episode in played)
    # every call ran and ended: one reset per rollout (and the probe's, per seed, when the rows were built)
    kinds = [kind for event, kind, _ in log.events if event == "end"]
    assert kinds.count("step") == steps and kinds.count("reset") == 2 * rollouts
    # rollouts overlapped inside their resets and inside their steps
    assert log.most_in_flight("reset") >= 2
    assert log.most_in_flight("step") >= 2


def test_a_rollout_cut_off_inside_an_env_call_closes_its_env_after_the_call(slow_counter):
    """verifiers' ``timeout_seconds`` cancels a rollout while its env call still runs in a worker thread:
    the env is closed once, after that call has returned, never during it."""
    env_id, log = slow_counter
    rollouts = 3
    env = load_environment(env_id, seeds=range(rollouts), max_turns=2)
    env.timeout_seconds = ENV_CALL_S * 1.5  # inside the first step (or, on a slow machine, the reset)
    outputs = evaluate_scripted(env, rollouts)
    assert [output["stop_condition"] for output in outputs] == ["timeout_reached"] * rollouts
    # the cut-off calls end, and close their envs, in their own threads (verifiers does not wait for them)
    made = {env_key for event, kind, env_key in log.events if (event, kind) == ("start", "reset")}
    deadline = time.monotonic() + 60
    while not made <= {env_key for event, _, env_key in log.events if event == "close"}:
        assert time.monotonic() < deadline, "an env was never closed"
        time.sleep(0.05)
    for env_key in made:
        events = [(event, kind) for event, kind, key in log.events if key == env_key]
        assert events.count(("close", "close")) == 1
        last_call_end = max(index for index, (event, _) in enumerate(events) if event == "end")
        assert events.index(("close", "close")) > last_call_end
    for output in outputs:  # the record keeps what ended before the cut, JSON-ready
        assert set(output[EPISODE_KEY]) >= {"responses", "rewards", "components", "state_keys"}
        assert "calls" not in output[EPISODE_KEY]
