"""Any agentenvs id as a SkyRL-gym ``BaseTextEnv``, registered in SkyRL-gym's registry as ``"agentenvs"``.

Importing this module registers the env class, so a SkyRL dataset row names it
as ``env_class: "agentenvs"`` and its ``extra_info`` says which agentenvs id and
which task::

    import skyrl_gym
    import agentenvs.integrations.skyrl_gym  # registers "agentenvs"

    row = {"extra_info": {"env_id": "agentenvs/Sokoban-v0", "seed": 7}}
    env = skyrl_gym.make("agentenvs", env_config={}, extras=row)
    conversation, _ = env.init([])        # system: instructions, user: first observation
    out = env.step("<action>up</action>")  # out["observations"], out["reward"], out["done"], out["metadata"]

:func:`dataset_rows` writes such rows, each with the prompt ``init`` returns.

=============================  ==========================================================
SkyRL-gym                      agentenvs (``gym.make(env_id, **env_kwargs)``)
=============================  ==========================================================
``make(..., extras=...)``      ``extras["extra_info"]``: ``env_id`` (an id of agentenvs'
                               registry; any other is refused, naming it), and ``seed``
                               (a non-negative integer, numpy's too) or ``task_id``,
                               optional ``env_kwargs`` (JSON text, as :func:`dataset_rows`
                               writes it, or a mapping); an ``env_config`` (SkyRL's
                               ``skyrl_gym_cfg.agentenvs``) may give the ``env_id`` and
                               default ``env_kwargs``, a row overrides them
``init(prompt)``               ``reset(seed=...)`` or ``reset(options={"task_id": ...})``;
                               returns ``[system: instructions, user: observation]`` built
                               by ``agentenvs.core.prompting.chat_messages`` (the dataset
                               prompt is not read: the env owns its text)
``step(response)`` (one turn)  ``env.step(response)``: one model response per turn
``observations``               ``[user: observation]`` (with "Admissible actions: ..."
                               where the env lists them), ``[]`` when the episode is over,
                               as SkyRL-gym's own envs do
``reward``                     the turn's scalar reward (the weighted sum of components)
``done``                       ``terminated or truncated``; ``metadata`` tells which
``max_turns``                  after ``init``, the episode's own limit (``info["max_turns"]``:
                               the ``max_turns`` kwarg, the papers' default, or what the
                               env sets at reset, as BabyAI does per level); SkyRL's
                               ``generator.max_turns``, which its generator writes into
                               ``extras``, is not read
``metadata["info"]``           the step's whole ``info``: ``reward_components``,
                               ``state_key``, ``obs_key``, ``transitions``, ``success``,
                               ``score``, ``privileged`` (SkyRL's generator never renders
                               metadata into the conversation)
``get_metrics()``              the episode's ``return``, ``turns``, ``success``, ``score``
                               and the sum of each component, as ``component/<name>``
=============================  ==========================================================
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Iterable, Mapping
from typing import Any

import gymnasium as gym
from omegaconf import DictConfig, OmegaConf
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType
from skyrl_gym.envs.registration import register, registry

import agentenvs  # noqa: F401  (registers the ids with gymnasium)
from agentenvs.core.prompting import chat_messages
from agentenvs.core.registration import UnknownEnvError, entry_of
from agentenvs.core.untrusted import short_repr

ENV_CLASS = "agentenvs"


def _env_kwargs(value: Any, where: str) -> dict[str, Any]:
    """``env_kwargs`` as a dict: JSON text (what :func:`dataset_rows` writes), a mapping, or None (none)."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where} is not valid JSON ({exc}): {short_repr(value)}") from None
        if value is None:
            return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be a JSON object (or a mapping), got {short_repr(value)}")
    return dict(value)


def _seed(seed: Any) -> int:
    """A seed as a Python int: any non-negative integer, numpy's included (a dataframe's ``np.int64``)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"extra_info['seed'] must be a non-negative integer, got {short_repr(seed)}")
    return int(seed)


def _episode_settings(
    env_config: Mapping[str, Any] | None, extras: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The env id, task and kwargs of one episode: the row's ``extra_info`` over the ``env_config``."""
    if isinstance(env_config, DictConfig):  # what SkyRL's generator passes (``skyrl_gym_cfg.agentenvs``)
        env_config = OmegaConf.to_container(env_config, resolve=True)
    config = dict(env_config or {})
    extra_info = (extras or {}).get("extra_info") or {}
    if not isinstance(extra_info, Mapping):
        raise TypeError(f"extras['extra_info'] must be a mapping, got {type(extra_info).__name__}")
    env_id = extra_info.get("env_id")
    if env_id is None:  # absent, or None where Arrow merged rows of other shapes into one struct
        env_id = config.get("env_id")
    try:  # agentenvs' registry, not gymnasium's: CartPole-v1 is in gymnasium's and has no instructions
        env_id = entry_of(env_id).env_id
    except UnknownEnvError as exc:
        raise UnknownEnvError(
            f"extra_info['env_id'] (or env_config's env_id) must be a registered agentenvs id: {exc}"
        ) from None
    seed, task_id = extra_info.get("seed"), extra_info.get("task_id")
    if (seed is None) == (task_id is None):
        raise ValueError(f"extra_info must give exactly one of 'seed' and 'task_id', got {dict(extra_info)}")
    if seed is not None:
        seed = _seed(seed)
    if task_id is not None and not isinstance(task_id, str):
        raise ValueError(f"extra_info['task_id'] must be a string, got {task_id!r}")
    env_kwargs = {
        **_env_kwargs(config.get("env_kwargs"), "env_config's env_kwargs"),
        **_env_kwargs(extra_info.get("env_kwargs"), "extra_info['env_kwargs']"),
    }
    return {"env_id": env_id, "seed": seed, "task_id": task_id, "env_kwargs": env_kwargs}


class AgentenvsTextEnv(BaseTextEnv):
    """One agentenvs episode behind SkyRL-gym's ``init``/``step``/``close`` (mapping in the module docstring).

    Args:
        env_config: SkyRL's per-class config (``env_id``, ``env_kwargs`` defaults), or None.
        extras: the dataset row's fields; ``extras["extra_info"]`` names the id and the task.
    """

    def __init__(self, env_config: Mapping[str, Any] | None = None, extras: Mapping[str, Any] | None = None):
        super().__init__()
        settings = _episode_settings(env_config, extras)
        self.env_id: str = settings["env_id"]
        self._seed: int | None = settings["seed"]
        self._task_id: str | None = settings["task_id"]
        self.env = gym.make(self.env_id, **settings["env_kwargs"])
        self.instructions: str = self.env.unwrapped.instructions
        # the kwarg until init(); init() sets the episode's own (BabyAI sets it per level at reset)
        self.max_turns = int(self.env.unwrapped.max_turns)
        self.last_info: dict[str, Any] = {}
        self._episode_return = 0.0
        self._component_sums: dict[str, float] = {}

    def init(self, prompt: ConversationType) -> tuple[ConversationType, dict[str, Any]]:
        """Reset the episode; the conversation is the env's instructions and first observation."""
        options = None if self._task_id is None else {"task_id": self._task_id}
        observation, info = self.env.reset(seed=self._seed, options=options)
        self.turns = 0
        self.max_turns = int(info["max_turns"])
        self.last_info = info
        self._episode_return = 0.0
        self._component_sums = {}
        return chat_messages(self.instructions, observation, info), {"info": info}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """One turn: the model's whole response goes to ``env.step``."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.turns += 1
        self.last_info = info
        self._episode_return += float(reward)
        for name, value in info["reward_components"].items():
            self._component_sums[name] = self._component_sums.get(name, 0.0) + float(value)
        done = bool(terminated or truncated)
        turn_message = chat_messages(self.instructions, observation, info)[-1]
        return BaseTextEnvStepOutput(
            observations=[] if done else [turn_message],
            reward=float(reward),
            done=done,
            metadata={
                "info": info,
                "observation": turn_message["content"],
                "terminated": bool(terminated),
                "truncated": bool(truncated),
            },
        )

    def get_metrics(self) -> dict[str, Any]:
        """The episode's return, turns, success, score and per-component sums (``component/<name>``)."""
        metrics: dict[str, Any] = {"return": self._episode_return, "turns": self.turns}
        for key in ("success", "score"):
            if key in self.last_info:
                metrics[key] = float(self.last_info[key])
        metrics.update({f"component/{name}": total for name, total in self._component_sums.items()})
        return metrics

    def close(self) -> None:
        self.env.close()


def dataset_rows(
    env_id: str,
    seeds: Iterable[int],
    *,
    env_kwargs: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """SkyRL dataset rows, one per seed: ``prompt`` (what ``init`` returns), ``env_class``, ``extra_info``.

    ``extra_info["env_kwargs"]`` is JSON text (``"{}"`` when none), as the verl
    rows store it: Parquet would merge kwargs dicts of different envs into one
    struct, giving every row every key (``None`` where it had none), so rows of
    several envs could not share a file. Write them with
    ``datasets.Dataset.from_list(rows).to_parquet(path)`` for SkyRL's trainer.
    """
    try:
        kwargs_text = json.dumps(dict(env_kwargs or {}), sort_keys=True)
    except TypeError as exc:
        raise ValueError(f"env_kwargs must be JSON-serializable to go into a dataset row: {exc}") from None
    rows = []
    for seed in seeds:
        extra_info: dict[str, Any] = {"env_id": env_id, "seed": _seed(seed), "env_kwargs": kwargs_text}
        env = AgentenvsTextEnv(extras={"extra_info": extra_info})
        try:
            prompt, _ = env.init([])
        finally:
            env.close()
        rows.append(
            {"data_source": env_id, "prompt": prompt, "env_class": ENV_CLASS, "extra_info": extra_info}
        )
    return rows


def register_env_class() -> None:
    """Put ``"agentenvs"`` into SkyRL-gym's registry (done on import; calling again is harmless)."""
    if ENV_CLASS not in registry:
        register(id=ENV_CLASS, entry_point=f"{__name__}:AgentenvsTextEnv")


register_env_class()
