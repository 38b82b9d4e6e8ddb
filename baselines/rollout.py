"""Multi-turn rollouts of a policy over ``agentenvs.vector.GroupedVectorEnv`` groups.

One :meth:`RolloutEngine.collect` call plays G groups × N copies to the end:
each turn, the prompts of the envs still running are rendered, encoded and
sampled as one batch, the decoded responses go to ``vec.step``, and every
turn is recorded with its tokens, reward, reward components, the keys of the
state it acted from (``obs_key``, ``state_key``) and the env's
``privileged`` training-time information.

Two ways to lay out a trajectory's tokens (``context``):

- ``"window"`` (GiGPO / verl-agent): every turn has its own prompt, rendered
  from the template's history window. A turn is one training sample; its
  response tokens are the policy tokens.
- ``"full"`` (MT-PPO / Search-R1): one growing sequence. The next turn's
  prompt is the previous prompt + response + the environment's reply, so
  the last turn's prompt + response holds the whole trajectory;
  :meth:`Trajectory.packed` returns it with a mask that is 1 on policy tokens
  and 0 on prompt and environment tokens, and the turn-end positions.

Time is split per call into generation (policy sampling) and environment
(``vec.step``) seconds.

Branching (VinePPO's Monte-Carlo values): ``collect(record_snapshots=True)``
keeps on every turn the snapshot of the state it acted from, and
:meth:`RolloutEngine.branch` continues ``(trajectory, turn)`` pairs from those
snapshots over ``vec.branch``: the N copies of group g continue ``starts[g]``,
each prompt built from that trajectory's history up to the turn, exactly as
the trajectory would have gone on. All branches' prompts of one step are
sampled in one call.

An episode whose env crashed (``info["crashed"]``, the reason and traceback
in ``info["error"]``: the vector env ends it as truncated with score 0) is
never training data: with ``on_crash="stop"`` (the default) ``collect``
raises :class:`EnvCrashed`; with ``"drop"`` the episode leaves the batch
(``RolloutBatch.crashed`` keeps it for the metrics). Each distinct error is
logged once, with its traceback.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from agentenvs.core import derive_seed
from baselines.policy import PolicyBackend
from baselines.prompts import HistoryEntry, PromptTemplate

logger = logging.getLogger(__name__)


@dataclass
class Turn:
    """One model response and what the env made of it."""

    prompt_text: str
    prompt_ids: list[int]
    response_ids: list[int]
    response_text: str
    observation: str
    obs_key: str
    state_key: str
    reward: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    privileged: Any = None
    snapshot: Any = None  # the env's snapshot before this turn (collect(record_snapshots=True))


@dataclass
class Trajectory:
    """One episode of one env copy."""

    group: int
    copy: int
    task_id: str
    turns: list[Turn] = field(default_factory=list)
    success: bool = False
    score: float = 0.0
    terminated: bool = False
    truncated: bool = False
    crashed: bool = False
    error: str = ""

    @property
    def turn_rewards(self) -> np.ndarray:
        return np.array([turn.reward for turn in self.turns], dtype=np.float64)

    @property
    def episode_return(self) -> float:
        return float(self.turn_rewards.sum())

    def component_sums(self) -> dict[str, float]:
        sums: dict[str, float] = {}
        for turn in self.turns:
            for name, value in turn.components.items():
                sums[name] = sums.get(name, 0.0) + float(value)
        return sums

    def packed(self) -> tuple[list[int], np.ndarray, np.ndarray]:
        """Full-context layout: (token ids, policy mask, turn index per token or −1).

        Valid for trajectories collected with ``context="full"``, where each
        turn's prompt extends the previous turn's prompt + response.
        """
        if not self.turns:
            return [], np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
        last = self.turns[-1]
        ids = last.prompt_ids + last.response_ids
        mask = np.zeros(len(ids), dtype=bool)
        turn_of = np.full(len(ids), -1, dtype=np.int64)
        for index, turn in enumerate(self.turns):
            start = len(turn.prompt_ids)
            if ids[:start] != turn.prompt_ids:
                raise ValueError("packed() needs a trajectory collected with context='full'")
            mask[start : start + len(turn.response_ids)] = True
            turn_of[start : start + len(turn.response_ids)] = index
        return ids, mask, turn_of


@dataclass
class Prefix:
    """What an env's next prompt is built from: first observation, history, full-context ids, turn number."""

    first_observation: str
    history: list[HistoryEntry]
    context: list[int]
    turn: int

    @classmethod
    def of(cls, trajectory: Trajectory, turn: int) -> Prefix:
        """The prefix ``trajectory`` had before its turn ``turn`` (0 ≤ turn < len(turns))."""
        before = trajectory.turns[:turn]
        return cls(
            first_observation=trajectory.turns[0].observation,
            history=[HistoryEntry(t.observation, t.response_text) for t in before],
            context=before[-1].prompt_ids + before[-1].response_ids if before else [],
            turn=turn,
        )


class EnvCrashed(RuntimeError):
    """An env raised during a rollout collected with ``on_crash="stop"``."""


@dataclass
class RolloutBatch:
    """Every trajectory of one collect call, with its cost.

    ``trajectories`` holds the episodes to train on; ``crashed`` the episodes
    whose env crashed, dropped from training (``on_crash="drop"``).
    """

    trajectories: list[Trajectory]
    generation_s: float
    env_s: float
    generated_tokens: int
    prompt_tokens: int
    crashed: list[Trajectory] = field(default_factory=list)

    @property
    def tokens_per_s(self) -> float:
        return self.generated_tokens / self.generation_s if self.generation_s > 0 else 0.0


class PromptEncoder:
    """Turns prompt text into token ids, through the tokenizer's chat template when it has one."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.chat = bool(getattr(tokenizer, "chat_template", None))
        self._after_assistant = ""
        if self.chat:
            # What the template writes after an assistant message and before the next user turn
            # ("<|im_end|>\n" for Qwen): measured on a probe conversation.
            probe = [{"role": "user", "content": "U"}, {"role": "assistant", "content": "A"}]
            rendered = self._render(probe, add_generation_prompt=False)
            self._after_assistant = rendered[rendered.rindex("A") + 1 :]
            self._probe, self._probe_text = probe, rendered

    def _render(self, messages: list[dict[str, str]], *, add_generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=add_generation_prompt, tokenize=False
        )

    def ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def first(self, text: str) -> list[int]:
        """The ids of a conversation's first prompt."""
        if self.chat:
            text = self._render([{"role": "user", "content": text}], add_generation_prompt=True)
        return self.ids(text)

    def continuation(self, text: str, response_ids: Sequence[int]) -> list[int]:
        """The environment tokens that follow a response in a full-context conversation."""
        if not self.chat:
            return self.ids(text)
        followed = self._render([*self._probe, {"role": "user", "content": text}], add_generation_prompt=True)
        if not followed.startswith(self._probe_text):
            raise ValueError("the chat template does not extend a conversation by appending to it")
        closing = self._after_assistant
        eos = self.tokenizer.eos_token or ""
        if response_ids and response_ids[-1] == self.tokenizer.eos_token_id and closing.startswith(eos):
            closing = closing[len(eos) :]
        return self.ids(closing + followed[len(self._probe_text) :])


class RolloutEngine:
    """Plays a policy in a grouped vector env; see the module docstring.

    Args:
        vec: a ``GroupedVectorEnv`` (any object with its ``reset``/``step``/``num_groups``/
            ``group_size``/``num_envs``).
        policy: the sampler.
        tokenizer: encodes prompts and decodes responses.
        template: renders each turn's prompt.
        max_new_tokens: response length limit.
        temperature: sampling temperature (GiGPO: 1.0 in training, 0.4 in validation).
        context: ``"window"`` or ``"full"``.
        max_prompt_tokens: window prompts longer than this keep their last tokens.
        on_crash: ``"stop"`` raises :class:`EnvCrashed` at an env crash; ``"drop"``
            leaves crashed episodes out of the batch's trajectories.
    """

    def __init__(
        self,
        vec: Any,
        policy: PolicyBackend,
        tokenizer: Any,
        template: PromptTemplate,
        *,
        max_new_tokens: int = 512,
        temperature: float = 1.0,
        context: Literal["window", "full"] = "window",
        max_prompt_tokens: int | None = 4096,
        on_crash: Literal["stop", "drop"] = "stop",
    ) -> None:
        if context not in ("window", "full"):
            raise ValueError(f"context must be 'window' or 'full', got {context!r}")
        if on_crash not in ("stop", "drop"):
            raise ValueError(f"on_crash must be 'stop' or 'drop', got {on_crash!r}")
        self.on_crash = on_crash
        self._logged_errors: set[str] = set()
        self.vec = vec
        self.policy = policy
        self.tokenizer = tokenizer
        self.encoder = PromptEncoder(tokenizer)
        self.template = template
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.context = context
        self.max_prompt_tokens = max_prompt_tokens

    def collect(
        self,
        *,
        seed: int,
        task_ids: Sequence[str] | None = None,
        sample_seed: int | None = None,
        record_snapshots: bool = False,
    ) -> RolloutBatch:
        """Play every group to the end. ``seed`` picks the tasks, ``sample_seed`` the sampling.

        ``record_snapshots`` keeps each turn's starting state in ``Turn.snapshot`` (for :meth:`branch`).
        """
        observations, infos = self.vec.reset(seed=seed, task_ids=task_ids)
        trajectories = [Trajectory(info["group"], info["copy"], str(info["task_id"])) for info in infos]
        prefixes = [Prefix(str(obs), [], [], 0) for obs in observations]
        sample_seed = seed if sample_seed is None else sample_seed
        return self._play(observations, infos, trajectories, prefixes, sample_seed, record_snapshots)

    def branch(self, starts: Sequence[tuple[Trajectory, int]], *, sample_seed: int) -> RolloutBatch:
        """Continue each ``(trajectory, turn)`` of ``starts`` to the end, N times (the vec's group size).

        The vec's group g restarts from ``starts[g]``'s snapshot (``vec.branch``); its copies' prompts
        continue that trajectory's history. The trajectories must come from
        ``collect(record_snapshots=True)``; the returned trajectories hold the branch turns only.
        """
        snapshots = []
        for trajectory, turn in starts:
            snapshot = trajectory.turns[turn].snapshot
            if snapshot is None:
                raise ValueError("branch() needs trajectories collected with record_snapshots=True")
            snapshots.append(snapshot)
        observations, infos = self.vec.branch(snapshots)
        trajectories = [Trajectory(info["group"], info["copy"], str(info["task_id"])) for info in infos]
        prefixes = [Prefix.of(*starts[info["group"]]) for info in infos]
        return self._play(observations, infos, trajectories, prefixes, sample_seed, False)

    def _play(
        self,
        observations: list[Any],
        infos: list[dict[str, Any]],
        trajectories: list[Trajectory],
        prefixes: list[Prefix],
        sample_seed: int,
        record_snapshots: bool,
    ) -> RolloutBatch:
        """Step every env from ``observations`` to the end of its episode, one sampled batch per step."""
        count = len(trajectories)
        done = np.zeros(count, dtype=bool)
        generation_s = env_s = 0.0
        generated = prompted = 0
        step = 0

        while not done.all():
            running = [i for i in range(count) if not done[i]]
            rendered = [self._prompt(prefixes[i], str(observations[i]), infos[i]) for i in running]
            prompts = [ids for _, ids in rendered]
            started = time.perf_counter()
            sampled = self.policy.generate(
                prompts,
                max_new_tokens=self.max_new_tokens,
                temperature=self.temperature,
                seed=derive_seed("rollout-turn", sample_seed, step) >> 1,
            )
            generation_s += time.perf_counter() - started
            responses: list[str | None] = [None] * count
            snapshots = self.vec.snapshots(running) if record_snapshots else {}
            for i, (prompt_text, prompt), response_ids in zip(running, rendered, sampled, strict=False):
                text = self.tokenizer.decode(response_ids, skip_special_tokens=True)
                responses[i] = text
                info = infos[i]
                trajectories[i].turns.append(
                    Turn(
                        prompt_text=prompt_text,
                        prompt_ids=list(prompt),
                        response_ids=list(response_ids),
                        response_text=text,
                        observation=str(observations[i]),
                        obs_key=str(info["obs_key"]),
                        state_key=str(info["state_key"]),
                        privileged=info.get("privileged"),
                        snapshot=snapshots.get(i),
                    )
                )
                generated += len(response_ids)
                prompted += len(prompt)

            started = time.perf_counter()
            next_observations, rewards, terminated, truncated, next_infos = self.vec.step(responses)
            env_s += time.perf_counter() - started
            for i in running:
                record = trajectories[i].turns[-1]
                record.reward = float(rewards[i])
                record.components = {
                    k: float(v) for k, v in next_infos[i].get("reward_components", {}).items()
                }
                prefix = prefixes[i]
                prefix.history.append(HistoryEntry(record.observation, record.response_text))
                if self.context == "full":
                    prefix.context = record.prompt_ids + record.response_ids
                prefix.turn += 1
                if terminated[i] or truncated[i]:
                    done[i] = True
                    trajectory = trajectories[i]
                    trajectory.terminated, trajectory.truncated = bool(terminated[i]), bool(truncated[i])
                    trajectory.success = bool(next_infos[i].get("success", False))
                    trajectory.score = float(next_infos[i].get("score", 0.0))
                    if next_infos[i].get("crashed", False):
                        self._crashed(trajectory, str(next_infos[i].get("error", "")))
            observations, infos = next_observations, next_infos
            step += 1
        kept = [t for t in trajectories if not t.crashed]
        dropped = [t for t in trajectories if t.crashed]
        if not kept:
            raise EnvCrashed(f"every one of the {len(dropped)} episodes crashed: nothing to train on")
        return RolloutBatch(kept, generation_s, env_s, generated, prompted, crashed=dropped)

    def _crashed(self, trajectory: Trajectory, error: str) -> None:
        trajectory.crashed, trajectory.error = True, error
        where = f"env of group {trajectory.group}, copy {trajectory.copy}, task {trajectory.task_id!r}"
        if self.on_crash == "stop":
            raise EnvCrashed(f"{where} crashed at turn {len(trajectory.turns)}:\n{error}")
        if error not in self._logged_errors:
            self._logged_errors.add(error)
            logger.error(
                "%s crashed at turn %d; its episode is dropped from training (later crashes with this "
                "error are only counted):\n%s",
                where,
                len(trajectory.turns),
                error,
            )

    def _prompt(self, prefix: Prefix, observation: str, info: dict[str, Any]) -> tuple[str, list[int]]:
        """The turn's prompt text (this turn's part in full context) and the ids the policy reads."""
        admissible = info.get("admissible_actions")
        turn, context = prefix.turn, prefix.context
        if self.context == "full" and turn > 0:
            text = self.template.followup(observation=observation, turn=turn, admissible=admissible)
            return text, context + self.encoder.continuation(text, context)
        text = self.template.render(
            first_observation=prefix.first_observation,
            history=prefix.history,
            observation=observation,
            turn=turn,
            admissible=admissible,
        )
        ids = self.encoder.first(text)
        if (
            self.context == "window"
            and self.max_prompt_tokens is not None
            and len(ids) > self.max_prompt_tokens
        ):
            ids = ids[-self.max_prompt_tokens :]
        return text, ids
