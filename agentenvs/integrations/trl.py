"""Multi-turn GRPO on any agentenvs id with TRL's ``GRPOTrainer`` (TRL 1.16, its ``rollout_func``).

::

    from trl import GRPOConfig, GRPOTrainer
    from agentenvs.integrations.trl import GRPOEnvironment

    environment = GRPOEnvironment("agentenvs/Sokoban-v0", seeds=range(256))
    trainer = GRPOTrainer(model=model, args=GRPOConfig(...), **environment.trainer_kwargs())
    trainer.train()

Why ``rollout_func`` and not ``environment_factory`` (both read in TRL 1.16's
``GRPOTrainer``): ``environment_factory`` reaches an environment only
through *tool calls*, JSON function calls that the tokenizer's response
template parses out of the reply; a reply with no tool call ends the
rollout, and the trainer refuses a chat template that cannot render tool
calls. agentenvs envs read the raw reply through their own action protocol
(``<action>up || left</action>``, Search-R1's ``<search>``), and score its
form (``format``, ``invalid_action``), so a tool layer would bypass the very
thing they measure. Its ``get_reward`` also gives one number per rollout,
logged under the env's class name, where agentenvs has named components.
``rollout_func`` hands the whole episode loop to the adapter: the reply
text goes to ``env.step`` as the model wrote it, the env's observation
comes back as the next user turn, and the trainer receives token ids, the
mask of the model's own tokens and per-component returns.

=========================  =====================================================
TRL                        agentenvs
=========================  =====================================================
dataset row (``prompt``)   one ``reset(seed=s)`` per seed given: the chat
                           messages of :func:`agentenvs.core.prompting.chat_messages`
                           (system: ``env.unwrapped.instructions``; user: the
                           first observation, and the admissible actions
                           where ``info`` lists them); the first message also
                           carries the seed, ``SEED_FIELD`` (below)
a completion               a whole episode: the model's reply of each turn,
                           then the next observation as a user turn in the
                           model's chat template; ``env_mask`` is 1 on the
                           model's tokens, 0 on the observations', so only
                           replies are trained
one turn                   one generation (TRL's own, same sampling settings
                           and backend: transformers or vLLM) and one
                           ``env.step(reply text)``
reward functions           one per reward component, named after it:
                           ``rewards/<name>`` = Σ over turns of weight · value
                           (``env.unwrapped.reward_weights``,
                           ``info["reward_components"]``), so their sum is the
                           episode return Σ ``reward``; checked every turn
termination                ``terminated`` from the env ends the episode
truncation                 ``truncated`` (``max_turns``) ends it; so does the
                           trainer's ``max_completion_length``, counted over
                           the whole multi-turn completion as TRL's tool loop
                           counts it (``Episode.out_of_tokens``)
state keys                 ``info["state_key"]`` after reset and each turn, in
                           :class:`Episode` (``state_keys``)
privileged info            never shown: prompts hold only observations,
                           instructions and admissible actions;
                           ``info["privileged"]`` is neither rendered nor kept
=========================  =====================================================

How the seed reaches the rollout. TRL 1.16 calls ``rollout_func(prompts, trainer)``
(``GRPOTrainer._generate``) with a deep copy of the batch's ``prompt`` column and
nothing else: the dataset's other columns go to the reward functions only, after
the rollout. Two seeds can start different tasks behind the same text (Sokoban
seeds 1 and 33, ColBench seeds 2 and 4), so the text cannot name the seed.
The seed therefore travels inside the prompt as data, not text: the first
message of each row holds the field ``agentenvs_seed`` (:data:`SEED_FIELD`,
the seed as a decimal string, since Arrow holds no integer past 2**63 - 1)
beside ``role`` and ``content``. Datasets keep it (Arrow adds it, as ``None``,
to the other messages), TRL passes the messages through unchanged, and the
adapter renders only ``role`` and ``content`` through the chat template, so
the model never sees it, whatever the template renders. A prompt without
the field, or whose text is not the one its seed starts, is refused.

Each finished episode goes to ``on_episode`` as an :class:`Episode` (id,
``env_kwargs``, seed, replies, rewards, components, state keys): all that
``gym.make(episode.env_id, **episode.env_kwargs)`` needs to replay it.

The adapter calls ``GRPOTrainer._generate_single_turn``, the
method TRL's own tool loop generates each turn with, so sampling follows the
trainer's configuration; that method is TRL 1.16's (the ``trl`` extra pins
it). Tested in one process (transformers generation on CPU); with several
processes the episodes of each may take different numbers of turns, so each
calls the generation backend a different number of times, which vLLM's
server mode (it gathers prompts across processes) does not allow. Needs the
``trl`` extra.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.core.prompting import chat_messages

# the turn reward equals Σ weight · component up to float summation order
REWARD_TOLERANCE = 1e-6
# the field of a prompt's first message that holds its seed (a decimal string), never rendered
SEED_FIELD = "agentenvs_seed"


@dataclass(frozen=True)
class Episode:
    """One episode a rollout played: what ``gym.make(env_id, **env_kwargs)`` replays from
    ``reset(seed=seed)``.

    ``components[t]`` holds turn ``t``'s unweighted ``info["reward_components"]``;
    ``state_keys[0]`` is the key after reset, ``state_keys[t + 1]`` after turn ``t``.
    """

    env_id: str
    env_kwargs: dict[str, Any]
    seed: int
    task_id: str
    responses: tuple[str, ...]
    rewards: tuple[float, ...]
    components: tuple[dict[str, float], ...]
    state_keys: tuple[str, ...]
    terminated: bool
    truncated: bool
    out_of_tokens: bool

    @property
    def episode_return(self) -> float:
        """Σ of the turns' rewards."""
        return math.fsum(self.rewards)


class ComponentReward:
    """TRL reward function for one component: Σ over the episode's turns of weight · value.

    TRL names a reward function by its ``__name__``, so each logs as ``rewards/<component>``.
    """

    def __init__(self, component: str) -> None:
        self.__name__ = component

    def __call__(
        self, completions: Sequence[Any], agentenvs_returns: Sequence[Mapping[str, float]], **_: Any
    ) -> list[float]:
        return [returns[self.__name__] for returns in agentenvs_returns]


def _prompt_key(messages: Sequence[Mapping[str, Any]]) -> tuple[tuple[str, str], ...]:
    return tuple((str(message["role"]), str(message["content"])) for message in messages)


def _chat(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The messages as the model sees them: role and content only (never the seed field)."""
    return [{"role": str(message["role"]), "content": str(message["content"])} for message in messages]


class _Rollout:
    """One episode in progress inside a batch."""

    def __init__(self, env: gym.Env, seed: int, prompt_ids: list[int], info: Mapping[str, Any]) -> None:
        self.env = env
        self.seed = seed
        self.prompt_ids = prompt_ids
        self.completion_ids: list[int] = []
        self.env_mask: list[int] = []
        # the sampler's log-probabilities of the completion's tokens (0 on observations); None when the
        # generation backend gives none (transformers), as TRL's own generation returns
        self.logprobs: list[float] | None = []
        self.task_id = str(info["task_id"])
        self.responses: list[str] = []
        self.rewards: list[float] = []
        self.components: list[dict[str, float]] = []
        self.state_keys: list[str] = [str(info["state_key"])]
        self.terminated = self.truncated = self.out_of_tokens = False

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated or self.out_of_tokens


class GRPOEnvironment:
    """An agentenvs id as the ``rollout_func``, reward functions and dataset of TRL's ``GRPOTrainer``.

    Args:
        env_id: a registered id, e.g. ``"agentenvs/Sokoban-v0"``.
        seeds: the ``reset`` seeds that make the training prompts (one dataset row each). Seeds whose
            prompts read alike stay apart: the row carries its seed (module docstring).
        env_kwargs: passed to every ``gym.make`` (``split``, ``max_turns``, ``reward_weights``, …).
        on_episode: called with each finished :class:`Episode` (to log or store it).

    ``prompts[i]`` holds the chat messages of ``seeds[i]`` as the model reads them (:meth:`train_dataset`
    adds the seed field to each), ``task_ids[i]`` the task that seed starts.
    """

    def __init__(
        self,
        env_id: str,
        seeds: Iterable[int],
        *,
        env_kwargs: Mapping[str, Any] | None = None,
        on_episode: Callable[[Episode], None] | None = None,
    ) -> None:
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.on_episode = on_episode
        self._envs: list[gym.Env] = [self._make_env()]
        probe = self._envs[0].unwrapped
        self.instructions: str = probe.instructions
        self.reward_weights: dict[str, float] = dict(probe.reward_weights)
        self.seeds: list[int] = []
        self.task_ids: list[str] = []
        self.prompts: list[list[dict[str, str]]] = []
        # each seed's prompt, to refuse a prompt whose text is not the one its seed field names
        self._prompt_of: dict[int, tuple[tuple[str, str], ...]] = {}
        for seed in seeds:
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise TypeError(f"seeds must be ints, got {seed!r}")
            observation, info = self._envs[0].reset(seed=seed)
            messages = chat_messages(self.instructions, observation, info)
            self._prompt_of[seed] = _prompt_key(messages)
            self.seeds.append(seed)
            self.task_ids.append(str(info["task_id"]))
            self.prompts.append(messages)
        if not self.prompts:
            raise ValueError("seeds is empty: the trainer needs at least one prompt")
        self.reward_funcs = [ComponentReward(name) for name in self.reward_weights]

    def _make_env(self) -> gym.Env:
        return gym.make(self.env_id, **self.env_kwargs)

    def close(self) -> None:
        """Close the envs the rollouts reuse (one per rollout slot of the largest batch seen)."""
        for env in self._envs:
            env.close()
        self._envs = []

    def dataset_prompt(self, index: int) -> list[dict[str, str]]:
        """The ``index``-th row's ``prompt``: its chat messages, the first also holding :data:`SEED_FIELD`."""
        first, *rest = self.prompts[index]
        return [{**first, SEED_FIELD: str(self.seeds[index])}, *(dict(message) for message in rest)]

    def train_dataset(self) -> Any:
        """A ``datasets.Dataset`` with one ``prompt`` (chat messages, carrying the seed) per seed."""
        from datasets import Dataset

        return Dataset.from_list([{"prompt": self.dataset_prompt(index)} for index in range(len(self.seeds))])

    def trainer_kwargs(self) -> dict[str, Any]:
        """``train_dataset``, ``reward_funcs`` and ``rollout_func`` for ``GRPOTrainer(...)``."""
        return {
            "train_dataset": self.train_dataset(),
            "reward_funcs": self.reward_funcs,
            "rollout_func": self,
        }

    # ------------------------------------------------------------------ the rollout
    def __call__(self, prompts: Sequence[Sequence[Mapping[str, Any]]], trainer: Any) -> dict[str, Any]:
        """Play one episode per prompt with the trainer's model (TRL's ``rollout_func`` contract)."""
        seeds = [self.seed_of(prompt) for prompt in prompts]
        tokenizer = trainer.processing_class
        template_kwargs = dict(getattr(trainer, "chat_template_kwargs", None) or {})
        budget = int(trainer.max_completion_length)
        while len(self._envs) < len(prompts):
            self._envs.append(self._make_env())
        rollouts = [
            self._start(prompt, seed, env, tokenizer, template_kwargs)
            for prompt, seed, env in zip(prompts, seeds, self._envs, strict=False)
        ]
        while True:
            active = [rollout for rollout in rollouts if not rollout.done]
            if not active:
                break
            generated, logprobs = trainer._generate_single_turn(
                [rollout.prompt_ids + rollout.completion_ids for rollout in active], None, {}, 1
            )
            for index, rollout in enumerate(active):
                room = budget - len(rollout.completion_ids)
                reply_ids = list(generated[index])[:room]
                reply_logprobs = list(logprobs[index])[:room] if logprobs is not None else None
                self._play_turn(rollout, reply_ids, reply_logprobs, tokenizer, template_kwargs, budget)
        for rollout in rollouts:
            if self.on_episode is not None:
                self.on_episode(self._episode(rollout))
        return {
            "prompt_ids": [rollout.prompt_ids for rollout in rollouts],
            "completion_ids": [rollout.completion_ids for rollout in rollouts],
            "logprobs": None if any(r.logprobs is None for r in rollouts) else [r.logprobs for r in rollouts],
            "env_mask": [rollout.env_mask for rollout in rollouts],
            "agentenvs_returns": [self._component_returns(rollout) for rollout in rollouts],
        }

    def seed_of(self, prompt: Sequence[Mapping[str, Any]]) -> int:
        """The seed a prompt of :meth:`train_dataset` carries, as ``rollout_func`` receives the prompt.

        Read from :data:`SEED_FIELD`, never from the text; refused (``ValueError``) when the field is
        missing, names a seed this environment was not built with, or the text is not that seed's prompt.
        """
        field = prompt[0].get(SEED_FIELD) if prompt and isinstance(prompt[0], Mapping) else None
        if not isinstance(field, str):
            raise ValueError(
                f"a prompt the rollout did not build reached it (its first message has no {SEED_FIELD!r}): "
                "train on GRPOEnvironment's own dataset"
            )
        try:
            seed = int(field)
        except ValueError:
            raise ValueError(f"a prompt's {SEED_FIELD!r} is not a seed: {field!r}") from None
        if self._prompt_of.get(seed) != _prompt_key(prompt):
            raise ValueError(
                f"a prompt the rollout did not build reached it: its {SEED_FIELD!r} says seed {seed}, whose "
                "prompt it is not; train on GRPOEnvironment's own dataset"
            )
        return seed

    def _start(
        self,
        prompt: Sequence[Mapping[str, Any]],
        seed: int,
        env: gym.Env,
        tokenizer: Any,
        template_kwargs: dict[str, Any],
    ) -> _Rollout:
        observation, info = env.reset(seed=seed)
        if _prompt_key(chat_messages(self.instructions, observation, info)) != _prompt_key(prompt):
            raise RuntimeError(f"{self.env_id} reset(seed={seed}) no longer gives the prompt it gave before")
        prompt_ids = list(
            tokenizer.apply_chat_template(
                _chat(prompt), add_generation_prompt=True, tokenize=True, return_dict=False, **template_kwargs
            )
        )
        return _Rollout(env, seed, prompt_ids, info)

    def _play_turn(
        self,
        rollout: _Rollout,
        reply_ids: list[int],
        reply_logprobs: list[float] | None,
        tokenizer: Any,
        template_kwargs: dict[str, Any],
        budget: int,
    ) -> None:
        """Step the env with the reply's text, then append the next observation's tokens if room is left."""
        rollout.completion_ids += reply_ids
        rollout.env_mask += [1] * len(reply_ids)
        rollout.logprobs = (
            None if reply_logprobs is None or rollout.logprobs is None else rollout.logprobs + reply_logprobs
        )
        response = tokenizer.decode(reply_ids, skip_special_tokens=True)
        observation, reward, terminated, truncated, info = rollout.env.step(response)
        components = {name: float(value) for name, value in info["reward_components"].items()}
        weighted = math.fsum(self.reward_weights[name] * value for name, value in components.items())
        if abs(weighted - float(reward)) > REWARD_TOLERANCE * max(1.0, abs(float(reward))):
            raise RuntimeError(
                f"{self.env_id} turn {len(rollout.rewards) + 1}: reward {reward} is not Σ weight · component "
                f"({weighted}); the per-component rewards would not add up to the return"
            )
        rollout.responses.append(response)
        rollout.rewards.append(float(reward))
        rollout.components.append(components)
        rollout.state_keys.append(str(info["state_key"]))
        rollout.terminated, rollout.truncated = bool(terminated), bool(truncated)
        if rollout.done:
            return
        next_user = chat_messages(self.instructions, observation, info)[-1]
        suffix = _turn_suffix_ids(tokenizer, next_user, template_kwargs)
        if len(rollout.completion_ids) + len(suffix) >= budget:
            rollout.out_of_tokens = True
            return
        rollout.completion_ids += suffix
        rollout.env_mask += [0] * len(suffix)
        if rollout.logprobs is not None:
            rollout.logprobs += [0.0] * len(suffix)

    def _component_returns(self, rollout: _Rollout) -> dict[str, float]:
        return {
            name: math.fsum(weight * turn.get(name, 0.0) for turn in rollout.components)
            for name, weight in self.reward_weights.items()
        }

    def _episode(self, rollout: _Rollout) -> Episode:
        return Episode(
            env_id=self.env_id,
            env_kwargs=dict(self.env_kwargs),
            seed=rollout.seed,
            task_id=rollout.task_id,
            responses=tuple(rollout.responses),
            rewards=tuple(rollout.rewards),
            components=tuple(rollout.components),
            state_keys=tuple(rollout.state_keys),
            terminated=rollout.terminated,
            truncated=rollout.truncated,
            out_of_tokens=rollout.out_of_tokens,
        )


def _turn_suffix_ids(
    tokenizer: Any, user_message: Mapping[str, str], template_kwargs: dict[str, Any]
) -> list[int]:
    """The tokens the chat template puts between an assistant reply and the next reply: the user turn and
    the assistant header.

    Rendered after a placeholder exchange and cut where that exchange ends (at its last EOS token, where the
    template closes turns with EOS, which the model's reply already carries), as TRL's tool loop cuts a tool
    result's tokens.
    """
    exchange = [{"role": "user", "content": "-"}, {"role": "assistant", "content": "-"}]
    render = tokenizer.apply_chat_template
    prefix = list(
        render(exchange, add_generation_prompt=False, tokenize=True, return_dict=False, **template_kwargs)
    )
    full = list(
        render(
            [*exchange, dict(user_message)],
            add_generation_prompt=True,
            tokenize=True,
            return_dict=False,
            **template_kwargs,
        )
    )
    eos_positions = [index for index, token in enumerate(prefix) if token == tokenizer.eos_token_id]
    if eos_positions:
        prefix = prefix[: eos_positions[-1] + 1]
    if full[: len(prefix)] != prefix:
        raise ValueError(
            "the chat template renders a conversation's start differently once a turn follows it"
        )
    return full[len(prefix) :]
