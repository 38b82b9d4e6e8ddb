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
                           between concurrent rollouts)
``env_response``           one ``env.step(the last assistant message's text)``;
                           the next observation as the user turn
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

import math
from collections.abc import Iterable, Mapping
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
        env = gym.make(self.gym_id, **self.env_kwargs)
        observation, info = env.reset(seed=int(state["info"]["seed"]))
        state[EPISODE_KEY] = {
            "env": env,
            "observation": observation,
            "info": info,
            "responses": [],
            "rewards": [],
            "components": [],
            "state_keys": [str(info["state_key"])],
            "outcome": {},
            "terminated": False,
            "truncated": False,
        }
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        episode = state[EPISODE_KEY]
        response = _message_text(messages[-1])
        observation, reward, terminated, truncated, info = episode["env"].step(response)
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
        if episode is not None and "env" in episode:
            episode.pop("env").close()
            episode.pop("observation")
            episode.pop("info")


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
