"""Any agentenvs id as a verifiers ``MultiTurnEnv`` with the env's reward as its rubric (verifiers 0.3.1).

::

    from agentenvs.integrations.verifiers import load_environment

    env = load_environment("agentenvs/Sokoban-v0", seeds=range(32), split="test")
    results = env.evaluate_sync(vf.ClientConfig(api_base_url=..., api_key_var=...), model="...")

verifiers 0.3.1 is the newest release with the ``MultiTurnEnv``/``Rubric``
stack (``import verifiers as vf`` answers with it); 0.4.0 drops it for a
taskset/harness stack whose chat harness bootstraps ``uv`` and its script's
dependencies from the network before the first reply, which an offline
machine cannot run.

=========================  =====================================================
verifiers                  agentenvs
=========================  =====================================================
dataset row                one ``reset(seed=s)`` per seed given: ``prompt`` is
                           :func:`agentenvs.core.prompting.chat_messages`
                           (system: ``env.unwrapped.instructions``; user: the
                           first observation, with the admissible actions
                           where ``info`` lists them); ``info`` holds the seed
                           (a decimal string) and the task id
``setup_state``            a fresh ``gym.make(env_id, **env_kwargs)`` per
                           rollout, reset with the row's seed (nothing shared
                           between concurrent rollouts), in a worker thread
``env_response``           one ``env.step(the last assistant message's text)``,
                           in a worker thread; the next observation as the
                           user turn
``final_env_response``     set on the env's ``terminated`` or ``truncated``
                           (``max_turns``): the last observation, and the
                           rollout stops
rubric                     one function per reward component, named after it,
                           returning Σ over turns of the unweighted value in
                           ``info["reward_components"]``, weighted with
                           ``env.unwrapped.reward_weights``: the rollout's
                           ``reward`` is the episode return Σ ``reward``
metrics (weight 0)         ``success`` and ``score`` from the final ``info``
                           (0 when the rollout stopped before the env ended)
state keys                 ``state["agentenvs"]["state_keys"]``: the key after
                           reset and after each turn
privileged info            never shown: messages hold only observations,
                           instructions and admissible actions;
                           ``info["privileged"]`` is neither rendered nor kept
=========================  =====================================================

verifiers runs every rollout of an evaluation as a coroutine on one event
loop, and the env's calls block (a step may run code, render a page or
search an index; WebShop's first load takes 10–16 s). So ``gym.make`` with
``reset``, each ``step`` and ``close`` run in a worker thread
(``asyncio.to_thread``): while one env works, the other rollouts keep
generating and stepping. Each env is used by one rollout, one call at a
time (each call is awaited before the next); envs of different rollouts
run side by side in the default executor's threads. Where verifiers'
``timeout_seconds`` cuts a rollout off inside a call, that call runs on in
its thread (a thread cannot be stopped) and the env is closed when it
returns, never while it runs.

A reply that stops early (the model's token limit) still goes to the env as
written. verifiers ends some rollouts by itself, before the env sees the
reply: an empty reply (``EmptyModelResponseError``, where ``gym.make`` would
score an invalid turn), an error, a timeout, an overlong prompt; such a
rollout keeps the turns played so far (its reward is their return, its
``success`` and ``score`` 0) and carries verifiers' ``error``. Needs the ``verifiers`` extra, in a
venv of its own: verifiers 0.3.1 requires ``openai-agents``, which needs
``websockets<17``, below the test extra's (see ``.ci/run``).
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import gymnasium as gym
import verifiers as vf
from datasets import Dataset

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.core.prompting import chat_messages, observation_text

# where a rollout's episode lives in verifiers' state
EPISODE_KEY = "agentenvs"
# metrics (weight 0) beside the reward components: from the final info
OUTCOME_METRICS = ("success", "score")


class ComponentTotal:
    """Rubric function for one reward component: Σ over the episode's turns of its unweighted value.

    The rubric weighs it with the env's weight, so Σ over components is the episode return.
    """

    def __init__(self, component: str) -> None:
        self.__name__ = component

    def __call__(self, state: vf.State) -> float:
        turns = state[EPISODE_KEY]["components"]
        return math.fsum(turn.get(self.__name__, 0.0) for turn in turns)


class OutcomeMetric:
    """Rubric metric ``success`` or ``score``: the final ``info``'s value, 0 when the env did not end."""

    def __init__(self, name: str) -> None:
        self.__name__ = name

    def __call__(self, state: vf.State) -> float:
        return float(state[EPISODE_KEY]["outcome"].get(self.__name__, 0.0))


class AgentEnvsMultiTurnEnv(vf.MultiTurnEnv):
    """``vf.MultiTurnEnv`` over ``gym.make(env_id, **env_kwargs)`` (mapping in the module docstring)."""

    def __init__(
        self, env_id: str, seeds: Iterable[int], env_kwargs: Mapping[str, Any] | None = None
    ) -> None:
        self.gym_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        probe = gym.make(env_id, **self.env_kwargs)
        self.instructions: str = probe.unwrapped.instructions
        weights = dict(probe.unwrapped.reward_weights)
        rows = []
        for seed in seeds:
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise TypeError(f"seeds must be ints, got {seed!r}")
            observation, info = probe.reset(seed=seed)
            rows.append(
                {
                    "prompt": chat_messages(self.instructions, observation, info),
                    "answer": "",
                    # the seed as a decimal string: Arrow holds no integer past 2**63 - 1, reset takes any
                    "info": {"seed": str(seed), "task_id": str(info["task_id"])},
                }
            )
        probe.close()
        if not rows:
            raise ValueError("seeds is empty: the env needs at least one row")
        rubric = vf.Rubric(funcs=[ComponentTotal(name) for name in weights], weights=list(weights.values()))
        for name in OUTCOME_METRICS:
            rubric.add_metric(OutcomeMetric(name))
        dataset = Dataset.from_list(rows)
        super().__init__(dataset=dataset, eval_dataset=dataset, rubric=rubric, env_id=env_id)

    async def setup_state(self, state: vf.State, **kwargs: Any) -> vf.State:
        calls = _EnvCalls()
        episode = state[EPISODE_KEY] = {
            "calls": calls,
            "responses": [],
            "rewards": [],
            "components": [],
            "state_keys": [],
            "outcome": {},
            "terminated": False,
            "truncated": False,
        }
        # off the event loop: one slow env (a first data load) must not stall every other rollout
        observation, info = await calls.run(
            calls.make_and_reset, self.gym_id, self.env_kwargs, int(state["info"]["seed"])
        )
        episode["observation"], episode["info"] = observation, info
        episode["state_keys"].append(str(info["state_key"]))
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        episode = state[EPISODE_KEY]
        response = _message_text(messages[-1])
        calls: _EnvCalls = episode["calls"]
        observation, reward, terminated, truncated, info = await calls.run(calls.step, response)
        episode["responses"].append(response)
        episode["rewards"].append(float(reward))
        episode["components"].append(
            {name: float(value) for name, value in info["reward_components"].items()}
        )
        episode["state_keys"].append(str(info["state_key"]))
        episode["observation"], episode["info"] = observation, info
        if terminated or truncated:
            episode["terminated"], episode["truncated"] = bool(terminated), bool(truncated)
            episode["outcome"] = {name: float(info[name]) for name in OUTCOME_METRICS}
            final = [vf.UserMessage(content=observation_text(observation))]
            state["final_env_response"] = final
            return final
        return [vf.UserMessage(content=chat_messages(self.instructions, observation, info)[-1]["content"])]

    @vf.cleanup
    async def close_env(self, state: vf.State) -> None:
        """Close the rollout's env; the episode record stays, JSON-ready (replies, rewards, components,
        state keys, outcome), without the env and its last observation and info."""
        episode = state.get(EPISODE_KEY)
        if episode is None or "calls" not in episode:
            return
        calls: _EnvCalls = episode.pop("calls")
        episode.pop("observation", None)
        episode.pop("info", None)
        if calls.close_when_idle():
            await asyncio.to_thread(calls.close)


class _EnvCalls:
    """One rollout's env, its blocking calls run in worker threads (``asyncio.to_thread``), one at a time.

    verifiers' timeout cancels a rollout while a call may still run in its thread (a thread cannot be
    stopped); the env is then closed by that thread once the call returns, never while it runs.
    """

    def __init__(self) -> None:
        self.env: gym.Env | None = None
        self._lock = threading.Lock()
        self._busy = False
        self._close_requested = False

    async def run(self, call: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(self._guarded, call, *args)

    def _guarded(self, call: Callable[..., Any], *args: Any) -> Any:
        with self._lock:
            if self._close_requested:
                raise RuntimeError("the rollout's env is closed")
            self._busy = True
        try:
            return call(*args)
        finally:
            with self._lock:
                self._busy = False
                close = self._close_requested
            if close:
                self.close()

    def make_and_reset(self, env_id: str, env_kwargs: Mapping[str, Any], seed: int) -> tuple[Any, Any]:
        self.env = gym.make(env_id, **env_kwargs)
        return self.env.reset(seed=seed)

    def step(self, response: str) -> tuple[Any, ...]:
        if self.env is None:
            raise RuntimeError("the rollout's env was never made")
        return self.env.step(response)

    def close_when_idle(self) -> bool:
        """True: no call runs, close now; False: a call runs, and its thread closes the env after it."""
        with self._lock:
            self._close_requested = True
            return not self._busy

    def close(self) -> None:
        env, self.env = self.env, None
        if env is not None:
            env.close()


def _message_text(message: Any) -> str:
    """The text of a chat message (a verifiers message object or a dict), "" when it has none."""
    content = message.get("content") if isinstance(message, Mapping) else getattr(message, "content", None)
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) if isinstance(part, Mapping) else str(getattr(part, "text", ""))
            for part in content
        )
    return content if isinstance(content, str) else ""


def load_environment(env_id: str, seeds: Iterable[int] = range(32), **env_kwargs: Any) -> vf.MultiTurnEnv:
    """verifiers' entry point: ``env_id`` as a ``MultiTurnEnv``, one row per seed; ``env_kwargs`` go to
    ``gym.make``."""
    return AgentEnvsMultiTurnEnv(env_id, seeds, env_kwargs)
