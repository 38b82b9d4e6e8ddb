"""Best-of-N with a process reward model (AgentPRM, Xi et al. 2025): success against N on held-out tasks.

A fixed policy proposes replies and a PRM scores them by their *promise*,
its prediction of the outcome of taking reply a at prompt s (the PRM's
Q(s, a), ``baselines.trainers.agentprm``). Two modes of Best-of-N search:

- ``trajectory``: N episodes of each task; the one whose last turn has the
  highest promise (its *final promise*) is kept, and its success counts;
- ``step``: at each turn, N candidate replies are sampled from the policy at
  the turn's prompt; each is tried from the turn's env snapshot
  (``AgentEnv.snapshot``/``restore``: the env is put back before the next
  try), scored by the promise of (prompt, reply), and the argmax is
  executed: the env goes on from that candidate's tried state (restored
  from the snapshot taken after its try, so it is not stepped twice).

Ties go to the lowest candidate index (``np.argmax``). ``N = 1`` is the
plain policy: one episode, or one candidate per turn, nothing scored.

Printed per mode against N ∈ {1, 2, 4, 8, 16} (``--n``): the success rate and
the mean score (the env's ``score`` in [0, 1]) over the tasks; for
``trajectory`` also pass@N (one of the N episodes succeeded: what a perfect
chooser would keep), for ``step`` the share of invalid actions among the
tried candidates and among the executed ones (how far the PRM steers away
from them). And the cost: CPU seconds of the whole process over all its
threads (``time.process_time``), wall seconds, env steps, generations
(replies the policy proposed) and scored pairs (each distinct (prompt,
reply) of a scorer call is scored once). The results file
``<results>/best_of_n_<env>.json`` holds all of it, the per-task outcomes,
the PRM's training record and the settings; ``best_of_n_<env>.txt`` holds
the printed table.

Our choices (the paper has no released code), each an option:

- **Nested samples.** Every reply is drawn from its own stream,
  ``derive_seed("best_of_n/reply", seed, task, copy, turn, candidate)``:
  in ``trajectory`` the N episodes of a task are the first N of the
  ``max(--n)`` episodes sampled once (copy = episode, candidate 0), so the
  curve's points are nested, not independent draws; in ``step`` candidate j
  of a turn is the same draw whatever N. ``N = 1`` is then the same episode
  in both modes (copy 0, candidate 0) under the ``valid-actions`` policy.
  The ``lm`` policy samples a call's rows as one batch, seeded from the rows'
  seeds, so its candidates are nested only within a call.
- **The policy** (``--policy``): ``valid-actions`` (the default) draws
  uniformly from the env's ``admissible_actions`` where it lists them, else
  from the env's ``sample_action(rng)`` (as ``agentenvs.agents.scripted.RandomAgent``
  does), written in the env's protocol: a from-scratch tiny LM cannot write
  one valid TextCraft or WebShop command, and this policy acts on every
  family. ``lm`` is the language-model policy of the AgentPRM run
  (``load_run_models``): a ``--run``'s trained policy, or the untrained
  tiny model of the run trained here.
- **The PRM:** ``--run DIR``, an AgentPRM run folder
  (``python -m baselines.trainers --config ...`` with ``algorithm.name:
  agentprm`` and ``sampler.context: window``), its PRM read by ``load_prm``
  and applied by ``promise_scores`` (the reply's text encoded without an
  EOS, where the trainer saw the sampled ids). Without ``--run`` the
  experiment first trains one itself (:func:`train_prm`): the AgentPRM
  algorithm on :data:`PRM_CONFIG` (a tiny model from scratch; see there
  which defaults it changes), ``policy_update: none``, on the rollouts of
  the experiment's own policy on the env's **train** split:
  ``--prm-iterations`` iterations of ``--prm-groups`` tasks ×
  ``--prm-group-size`` episodes (16: the paper's N_TD), into ``--out``;
  a later run with the same settings reads it back.
- **Held-out tasks:** Best-of-N plays the first ``--tasks`` tasks of
  ``--split`` (``test`` by default; the splits are disjoint), never the
  train split the PRM learnt from.
- The prompts are the run's (``baselines.prompts.PromptTemplate`` with its
  sampler settings), so the PRM reads what it was trained on.

The same command reruns bit for bit on the same machine: every draw comes
from ``derive_seed`` streams and torch runs with the config's thread count.

The committed results (``results/best_of_n_*``) come from::

    python -m baselines.experiments.best_of_n agentenvs/TextCraft-v0 --tasks 20
    python -m baselines.experiments.best_of_n agentenvs/BabyAI-v0 --tasks 20 --env-kwargs '{"max_turns": 64}'
    python -m baselines.experiments.best_of_n agentenvs/WebShop-v0 --tasks 20 \\
        --set algorithm.outcome=score --label outcome-score

(WebShop's PRM learns from the episode's score: under ``outcome: success`` the
uniform policy's train episodes never succeed, every label is 0 and the PRM
stays the constant 0 its zero-initialised head starts at.)
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from agentenvs.core import derive_rng, derive_seed
from agentenvs.core.env import AgentEnv, agent_env
from baselines.experiments.common import RESULTS_DIR
from baselines.prompts import HistoryEntry, PromptTemplate

MODES = ("trajectory", "step")
POLICIES = ("valid-actions", "lm")
DEFAULT_N = (1, 2, 4, 8, 16)

Scorer = Callable[[Sequence[str], Sequence[str]], np.ndarray]
"""The PRM's promise of each (prompt text, reply) pair, as one float array."""


@dataclass(frozen=True)
class TurnView:
    """What a policy sees of one turn: the env at the turn's state, its last info and the rendered prompt."""

    env: AgentEnv[Any, Any]
    info: dict[str, Any]
    prompt_text: str


class Policy(Protocol):
    """Proposes one reply per row: row i answers ``views[i]`` with the draw of ``seeds[i]``."""

    def propose(self, views: Sequence[TurnView], seeds: Sequence[int]) -> list[str]: ...


class ValidActionPolicy:
    """Uniform over ``info["admissible_actions"]``, else the env's ``sample_action(rng)``; ours.

    Row i draws from ``derive_rng("best_of_n/valid_actions", seeds[i])`` alone,
    and the action is written with the env's protocol (``protocol.format``).
    """

    def propose(self, views: Sequence[TurnView], seeds: Sequence[int]) -> list[str]:
        replies = []
        for view, seed in zip(views, seeds, strict=True):
            rng = derive_rng("best_of_n/valid_actions", seed)
            admissible = view.info.get("admissible_actions")
            sample_action = getattr(view.env, "sample_action", None)
            if admissible:
                action = admissible[int(rng.integers(len(admissible)))]
            elif sample_action is not None:
                action = sample_action(rng)
            else:
                raise ValueError(
                    f"{type(view.env).__name__} lists no admissible actions and has no sample_action(rng): "
                    "the valid-actions policy cannot act there; use --policy lm"
                )
            replies.append(view.env.protocol.format(action))
        return replies


class LanguageModelPolicy:
    """A language model's replies (decoded text): ``backend.generate`` on the encoded prompts, one batch
    per call.

    The batch's sampling seed is ``derive_seed("best_of_n/lm", *seeds)``; a
    prompt longer than ``max_prompt_tokens`` keeps its last tokens (as the
    trainer's window context does).
    """

    def __init__(
        self,
        backend: Any,
        tokenizer: Any,
        *,
        max_new_tokens: int,
        temperature: float,
        max_prompt_tokens: int | None,
    ) -> None:
        from baselines.rollout import PromptEncoder

        self.backend = backend
        self.tokenizer = tokenizer
        self.encoder = PromptEncoder(tokenizer)
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.max_prompt_tokens = max_prompt_tokens

    def prompt_ids(self, prompt_text: str) -> list[int]:
        ids = self.encoder.first(prompt_text)
        if self.max_prompt_tokens is not None and len(ids) > self.max_prompt_tokens:
            ids = ids[-self.max_prompt_tokens :]
        return ids

    def propose(self, views: Sequence[TurnView], seeds: Sequence[int]) -> list[str]:
        sampled = self.backend.generate(
            [self.prompt_ids(view.prompt_text) for view in views],
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            seed=derive_seed("best_of_n/lm", *seeds) >> 1,
        )
        return [self.tokenizer.decode(ids, skip_special_tokens=True) for ids in sampled]


@dataclass
class PlayedTurn:
    """One executed turn: the prompt, the chosen reply and what the env made of it."""

    prompt_text: str
    reply: str
    observation: str  # the observation the prompt was built from
    obs_key: str
    state_key: str
    reward: float
    components: dict[str, float]
    invalid: bool
    candidates: int = 1
    invalid_candidates: int = 0  # step mode: how many of the tried candidates were invalid
    promise: float | None = None  # step mode with N > 1: the chosen candidate's promise


@dataclass
class Episode:
    """One played episode of one task."""

    task_index: int
    task_id: str
    copy: int
    turns: list[PlayedTurn] = field(default_factory=list)
    success: bool = False
    score: float = 0.0
    terminated: bool = False
    truncated: bool = False


@dataclass
class Counts:
    """The cost of a phase: env steps, generations (proposed replies), scored pairs (all deterministic),
    and the wall seconds spent in the policy, the env and the scorer (``*_s``, measured)."""

    env_steps: int = 0
    generations: int = 0
    scored_pairs: int = 0
    policy_s: float = 0.0
    env_s: float = 0.0
    scorer_s: float = 0.0

    def add(self, other: Counts) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


def score_pairs(scorer: Scorer, prompts: Sequence[str], replies: Sequence[str], counts: Counts) -> np.ndarray:
    """The promise of each (prompt, reply), every distinct pair scored once (one scorer call).

    Candidates repeat (a BabyAI turn has six actions to draw 16 candidates from), and the PRM is a
    function of the pair, so a repeat gets its first occurrence's score; ``counts.scored_pairs``
    counts the distinct pairs scored.
    """
    first: dict[tuple[str, str], int] = {}
    for pair in zip(prompts, replies, strict=True):
        first.setdefault(pair, len(first))
    distinct = list(first)
    started = time.perf_counter()
    scores = np.asarray(scorer([p for p, _ in distinct], [r for _, r in distinct]), dtype=np.float64)
    counts.scorer_s += time.perf_counter() - started
    if scores.shape != (len(distinct),):
        raise ValueError(f"the scorer returned shape {scores.shape} for {len(distinct)} pairs")
    counts.scored_pairs += len(distinct)
    return scores[[first[pair] for pair in zip(prompts, replies, strict=True)]]


def reply_seed(seed: int, task_index: int, copy: int, turn: int, candidate: int) -> int:
    """The stream of one reply (see the module docstring: nested samples)."""
    return derive_seed("best_of_n/reply", seed, task_index, copy, turn, candidate)


def reset_seed(seed: int, task_index: int) -> int:
    """The reset seed of a task's episodes: every copy and candidate of a task starts from the same state."""
    return derive_seed("best_of_n/reset", seed, task_index) >> 1


def play(
    slots: Sequence[tuple[AgentEnv[Any, Any], int, str, int]],
    policy: Policy,
    template: PromptTemplate,
    *,
    candidates: int,
    scorer: Scorer | None,
    seed: int,
    counts: Counts,
) -> list[Episode]:
    """Play each slot ``(env, task index, task id, copy)`` to the end, in lockstep; the episodes.

    With ``candidates`` = 1 each turn executes the policy's reply. With more,
    each turn samples ``candidates`` replies, tries each from the turn's
    snapshot, scores them with ``scorer`` (the promise of (prompt, reply))
    and continues from the argmax's tried state. Every row of a turn is
    proposed in one policy call and scored in one scorer call.
    """
    if candidates < 1:
        raise ValueError(f"candidates must be >= 1, got {candidates}")
    if candidates > 1 and scorer is None:
        raise ValueError("choosing among several candidates needs a scorer")
    episodes, observations, infos, firsts, histories = [], [], [], [], []
    for env, task_index, task_id, copy in slots:
        observation, info = env.reset(seed=reset_seed(seed, task_index), options={"task_id": task_id})
        episodes.append(Episode(task_index, task_id, copy))
        observations.append(str(observation))
        infos.append(info)
        firsts.append(str(observation))
        histories.append([])
    running = list(range(len(slots)))
    turn = 0
    while running:
        views = []
        for i in running:
            prompt = template.render(
                first_observation=firsts[i],
                history=histories[i],
                observation=observations[i],
                turn=turn,
                admissible=infos[i].get("admissible_actions"),
            )
            views.append(TurnView(slots[i][0], infos[i], prompt))
        rows = [view for view in views for _ in range(candidates)]
        seeds = [
            reply_seed(seed, episodes[i].task_index, episodes[i].copy, turn, j)
            for i in running
            for j in range(candidates)
        ]
        started = time.perf_counter()
        replies = policy.propose(rows, seeds)
        counts.policy_s += time.perf_counter() - started
        counts.generations += len(replies)
        promises = None
        if candidates > 1:
            assert scorer is not None
            promises = score_pairs(scorer, [row.prompt_text for row in rows], list(replies), counts)
        finished = []
        for k, i in enumerate(running):
            env, view = slots[i][0], views[k]
            tried = []
            start = env.snapshot() if candidates > 1 else None
            started = time.perf_counter()
            for j in range(candidates):
                if start is not None and j > 0:
                    env.restore(start)
                step = env.step(replies[k * candidates + j])
                counts.env_steps += 1
                tried.append((step, env.snapshot() if start is not None else None))
            best = 0 if promises is None else int(np.argmax(promises[k * candidates : (k + 1) * candidates]))
            (observation, reward, terminated, truncated, info), after = tried[best]
            if after is not None:
                env.restore(after)
            counts.env_s += time.perf_counter() - started
            components = {name: float(v) for name, v in info.get("reward_components", {}).items()}
            reply = replies[k * candidates + best]
            episodes[i].turns.append(
                PlayedTurn(
                    prompt_text=view.prompt_text,
                    reply=reply,
                    observation=observations[i],
                    obs_key=str(view.info["obs_key"]),
                    state_key=str(view.info["state_key"]),
                    reward=float(reward),
                    components=components,
                    invalid=components.get("invalid_action", 0.0) > 0,
                    candidates=candidates,
                    invalid_candidates=sum(
                        step[4].get("reward_components", {}).get("invalid_action", 0.0) > 0
                        for step, _ in tried
                    ),
                    promise=None if promises is None else float(promises[k * candidates + best]),
                )
            )
            histories[i].append(HistoryEntry(observations[i], reply))
            observations[i], infos[i] = str(observation), info
            if terminated or truncated:
                episode = episodes[i]
                episode.terminated, episode.truncated = bool(terminated), bool(truncated)
                episode.success = bool(info.get("success", False))
                episode.score = float(info.get("score", 0.0))
                finished.append(i)
        running = [i for i in running if i not in finished]
        turn += 1
    return episodes


def make_envs(env_id: str, env_kwargs: dict[str, Any], count: int) -> list[AgentEnv[Any, Any]]:
    """``count`` copies of the env (the agentenvs env under gymnasium's wrappers, stepped directly)."""
    return [agent_env(gym.make(env_id, disable_env_checker=True, **env_kwargs)) for _ in range(count)]


def split_tasks(env: AgentEnv[Any, Any], split: str, count: int) -> list[str]:
    """The first ``count`` task ids of ``split`` (all of them when it holds fewer)."""
    source = env.task_source
    source.check_split(split)
    return [source.task_id(split, index) for index in range(min(count, source.size(split)))]


def final_promises(episodes: Sequence[Episode], scorer: Scorer, counts: Counts) -> np.ndarray:
    """The promise of each episode's last (prompt, reply): what ``trajectory`` ranks episodes by."""
    last = [episode.turns[-1] for episode in episodes]
    return score_pairs(scorer, [t.prompt_text for t in last], [t.reply for t in last], counts)


@dataclass
class ModeResult:
    """One mode's outcome per N, its per-task choices and its cost."""

    by_n: dict[int, dict[str, float]]
    per_task: dict[int, list[dict[str, Any]]]
    counts: Counts
    cpu_s: float
    wall_s: float


def trajectory_level(
    envs: Sequence[AgentEnv[Any, Any]],
    task_ids: Sequence[str],
    policy: Policy,
    template: PromptTemplate,
    scorer: Scorer,
    ns: Sequence[int],
    seed: int,
) -> ModeResult:
    """Per task, ``max(ns)`` episodes (one per env of ``envs``); for each N the first N's best final promise.

    ``success``/``score``: the mean over tasks of the kept episode's; ``pass_at_n``: the share of tasks
    where one of the N episodes succeeded (what a perfect chooser would keep).
    """
    counts, cpu, wall = Counts(), time.process_time(), time.perf_counter()
    kept: dict[int, list[dict[str, Any]]] = {n: [] for n in ns}
    for task_index, task_id in enumerate(task_ids):
        slots = [(env, task_index, task_id, copy) for copy, env in enumerate(envs[: max(ns)])]
        episodes = play(slots, policy, template, candidates=1, scorer=None, seed=seed, counts=counts)
        promises = final_promises(episodes, scorer, counts)
        for n in ns:
            best = int(np.argmax(promises[:n]))
            kept[n].append(
                {
                    "task_id": task_id,
                    "kept_episode": best,
                    "promise": float(promises[best]),
                    "success": episodes[best].success,
                    "score": episodes[best].score,
                    "any_success": any(e.success for e in episodes[:n]),
                    "turns": len(episodes[best].turns),
                }
            )
    by_n = {
        n: {
            "success": float(np.mean([k["success"] for k in chosen])),
            "score": float(np.mean([k["score"] for k in chosen])),
            "pass_at_n": float(np.mean([k["any_success"] for k in chosen])),
        }
        for n, chosen in kept.items()
    }
    return ModeResult(by_n, kept, counts, time.process_time() - cpu, time.perf_counter() - wall)


def step_level(
    envs: Sequence[AgentEnv[Any, Any]],
    task_ids: Sequence[str],
    policy: Policy,
    template: PromptTemplate,
    scorer: Scorer,
    ns: Sequence[int],
    seed: int,
) -> ModeResult:
    """For each N, every task played once (one env each of ``envs``, in lockstep) with N candidates a turn.

    Besides success and score, per N: ``invalid_candidates`` (the share of tried candidates that were
    invalid actions: their turn's ``invalid_action`` reward component is set, where the env has one)
    and ``invalid_chosen`` (the share of executed ones): how far the PRM steers away from them.
    """
    counts, cpu, wall = Counts(), time.process_time(), time.perf_counter()
    by_n: dict[int, dict[str, float]] = {}
    per_task: dict[int, list[dict[str, Any]]] = {}
    for n in ns:
        spent, n_cpu, n_wall = Counts(), time.process_time(), time.perf_counter()
        slots = [(envs[index], index, task_id, 0) for index, task_id in enumerate(task_ids)]
        episodes = play(slots, policy, template, candidates=n, scorer=scorer, seed=seed, counts=spent)
        counts.add(spent)
        turns = [turn for episode in episodes for turn in episode.turns]
        by_n[n] = {
            "success": float(np.mean([e.success for e in episodes])),
            "score": float(np.mean([e.score for e in episodes])),
            "invalid_candidates": sum(t.invalid_candidates for t in turns) / sum(t.candidates for t in turns),
            "invalid_chosen": float(np.mean([t.invalid for t in turns])),
            "mean_turns": float(np.mean([len(e.turns) for e in episodes])),
            **asdict(spent),
            "cpu_s": time.process_time() - n_cpu,
            "wall_s": time.perf_counter() - n_wall,
        }
        per_task[n] = [
            {"task_id": e.task_id, "success": e.success, "score": e.score, "turns": len(e.turns)}
            for e in episodes
        ]
    return ModeResult(by_n, per_task, counts, time.process_time() - cpu, time.perf_counter() - wall)


def table(results: dict[str, Any]) -> str:
    """The printed table: per mode, success, mean score (and pass@N, or invalid shares) against N."""
    prm = results["prm"]["config"]
    lines = [
        f"Best-of-N on {results['env_id']} ({results['split']} split, {len(results['task_ids'])} tasks), "
        f"policy {results['policy']}, PRM {results['prm']['source']} "
        f"(its labels: rewards {prm['algorithm']['rewards']}, outcome {prm['algorithm']['outcome']}; "
        f"{prm['run']['iterations']} iterations × {prm['env']['num_groups']} tasks × "
        f"{prm['env']['group_size']} episodes)"
    ]
    for mode, block in results["modes"].items():
        lines.append("")
        if mode == "trajectory":
            lines.append(f"{'trajectory':>10s} {'success':>8s} {'score':>7s} {'pass@N':>7s}")
            for n, row in block["by_n"].items():
                lines.append(
                    f"{'N = ' + n:>10s} {row['success']:8.3f} {row['score']:7.3f} {row['pass_at_n']:7.3f}"
                )
        else:
            lines.append(
                f"{'step':>10s} {'success':>8s} {'score':>7s} {'invalid tried':>14s} {'invalid kept':>13s}"
                f" {'env steps':>10s} {'CPU s':>8s}"
            )
            for n, row in block["by_n"].items():
                lines.append(
                    f"{'N = ' + n:>10s} {row['success']:8.3f} {row['score']:7.3f} "
                    f"{row['invalid_candidates']:14.3f} {row['invalid_chosen']:13.3f} "
                    f"{row['env_steps']:10d} {row['cpu_s']:8.1f}"
                )
        cost = block["cost"]
        lines.append(
            f"{mode} cost: {cost['cpu_s']:.1f} CPU s, {cost['wall_s']:.1f} wall s, "
            f"{cost['env_steps']} env steps, {cost['generations']} generations, "
            f"{cost['scored_pairs']} scored pairs"
        )
    total = results["cost"]
    lines.append("")
    lines.append(
        f"whole process: {total['cpu_s']:.1f} CPU s (all threads), {total['wall_s']:.1f} wall s"
        + (f"; PRM training {total['prm_training']['cpu_s']:.1f} CPU s" if total.get("prm_training") else "")
    )
    return "\n".join(lines)


def results_name(env_id: str, label: str = "") -> str:
    """``best_of_n_<env name>[_<label>]``: ``agentenvs/TextCraft-v0`` → ``best_of_n_TextCraft-v0``."""
    name = "best_of_n_" + env_id.split("/")[-1] + (f"_{label}" if label else "")
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


# The AgentPRM run this experiment trains when no --run is given (ours): a tiny model from scratch (2
# layers, hidden 32, BPE tokenizer of 512 learnt from the env's prompts), AgentPRM's labels and loss
# with the trainer's defaults (seed-form TD(λ), γ = 1, λ = 0.95, β = 1, outcome-only rewards) except
# its learning rate and minibatch: 1e-3 (a model trained from scratch, as agentprm_sokoban.yaml) over
# minibatches of 4 trajectories, so a few iterations make some steps. The prompts show the
# instructions, the goal and the current observation (history window 0: the PRM's sequences stay
# short on a CPU). The policy is never updated. --set SECTION.KEY=VALUE overrides a key.
PRM_CONFIG: dict[str, Any] = {
    "policy": {
        "model": "tiny",
        "tiny_hidden_size": 32,
        "tiny_layers": 2,
        "tiny_vocab_size": 512,
        "num_threads": 1,
    },
    "sampler": {
        "template_style": "full",
        "history_window": 0,
        "think": False,
        "context": "window",
        "max_new_tokens": 16,
        "max_prompt_tokens": 1024,
        "temperature": 1.0,
    },
    "optim": {"lr": 1.0e-3, "weight_decay": 0.0, "micro_batch_size": 64, "minibatch_size": 256},
    "algorithm": {"name": "agentprm", "policy_update": "none", "prm_lr": 1.0e-3, "prm_minibatch_size": 4},
}


def prm_config(
    env_id: str,
    env_kwargs: dict[str, Any],
    *,
    out_dir: Path,
    seed: int,
    iterations: int,
    groups: int,
    group_size: int,
    overrides: Sequence[str],
) -> Any:
    """The training config of the PRM this experiment trains: :data:`PRM_CONFIG` on the train split."""
    from baselines.trainers.config import TrainConfig, apply_overrides

    values = {
        **PRM_CONFIG,
        "env": {
            "id": env_id,
            "kwargs": {**env_kwargs, "split": "train"},
            "num_groups": groups,
            "group_size": group_size,
        },
        "run": {
            "iterations": iterations,
            "seed": seed,
            "out_dir": str(out_dir),
            "save_every": max(iterations, 1),
        },
    }
    return TrainConfig.from_mapping(apply_overrides(values, overrides))


def make_policy(name: str, config: Any, model: Any, tokenizer: Any) -> Policy:
    """The experiment's policy: ``valid-actions`` or the run's language model ``model`` (``lm``)."""
    if name == "valid-actions":
        return ValidActionPolicy()
    if name == "lm":
        from baselines.trainers.sampler import make_sampler

        return LanguageModelPolicy(
            make_sampler(config, model, tokenizer),
            tokenizer,
            max_new_tokens=config.sampler.max_new_tokens,
            temperature=config.sampler.temperature,
            max_prompt_tokens=config.sampler.max_prompt_tokens,
        )
    raise ValueError(f"unknown policy {name!r}; policies: {list(POLICIES)}")


def rollout_batch(episodes: Sequence[Episode], encoder: Any, counts: Counts) -> Any:
    """The played episodes as the trainer's ``RolloutBatch`` (group = the task's slot in the iteration).

    Prompts are encoded as :func:`baselines.trainers.agentprm.promise_scores` encodes them (the
    rollout's first-prompt encoding) and replies as their text's ids, so the PRM learns on exactly
    the token sequences it scores at test time.
    """
    from baselines.rollout import RolloutBatch, Trajectory, Turn

    trajectories = []
    for episode in episodes:
        trajectory = Trajectory(episode.task_index, episode.copy, episode.task_id)
        for turn in episode.turns:
            trajectory.turns.append(
                Turn(
                    prompt_text=turn.prompt_text,
                    prompt_ids=encoder.first(turn.prompt_text),
                    response_ids=encoder.ids(turn.reply),
                    response_text=turn.reply,
                    observation=turn.observation,
                    obs_key=turn.obs_key,
                    state_key=turn.state_key,
                    reward=turn.reward,
                    components=dict(turn.components),
                )
            )
        trajectory.success, trajectory.score = episode.success, episode.score
        trajectory.terminated, trajectory.truncated = episode.terminated, episode.truncated
        trajectories.append(trajectory)
    generated = sum(len(t.response_ids) for tr in trajectories for t in tr.turns)
    prompted = sum(len(t.prompt_ids) for tr in trajectories for t in tr.turns)
    return RolloutBatch(trajectories, counts.policy_s, counts.env_s, generated, prompted)


TRAINING_FILE = "best_of_n_training.json"


def train_prm(config: Any, policy_name: str, progress: Callable[[str], None]) -> dict[str, Any]:
    """Train the AgentPRM run ``config`` on the rollouts of policy ``policy_name``; its training record.

    The loop is ``run.TrainingRun``'s with the rollouts played by :func:`play` (the policy may be no
    language model): per iteration, ``num_groups`` train tasks (``sampler.iteration_tasks``) ×
    ``group_size`` episodes, then the AgentPRM algorithm's ``advantages`` (TD labels) and
    ``update`` (the PRM's L_Q + β·L_A; the policy stays fixed). The metrics go to
    ``<out_dir>/metrics.jsonl``, the PRM to ``<out_dir>/checkpoint.pt`` (what ``load_prm`` reads),
    the record to ``<out_dir>/best_of_n_training.json``.
    """
    from baselines.metrics import MetricsWriter, rollout_metrics
    from baselines.rollout import PromptEncoder
    from baselines.trainers.agentprm import AgentPRMOptions
    from baselines.trainers.checkpoints import save_checkpoint
    from baselines.trainers.config import ConfigError
    from baselines.trainers.run import TrainingRun
    from baselines.trainers.sampler import iteration_tasks

    options = config.algorithm_options(AgentPRMOptions)
    if options.policy_update != "none" or options.label_source != "td":
        raise ConfigError(
            "the Best-of-N experiment trains its PRM on a fixed policy with TD labels: "
            "algorithm.policy_update must be none and algorithm.label_source td "
            f"(got {options.policy_update!r}, {options.label_source!r})"
        )
    counts, cpu, wall = Counts(), time.process_time(), time.perf_counter()
    run = TrainingRun(config)
    policy = make_policy(policy_name, config, run.model, run.tokenizer)
    encoder = PromptEncoder(run.tokenizer)
    groups, copies = config.env.num_groups, config.env.group_size
    envs = make_envs(config.env.id, config.env.kwargs, groups * copies)
    source, split = envs[0].task_source, envs[0].split
    writer = MetricsWriter(run.out / "metrics.jsonl")
    writer.truncate_after(-1)
    records = []
    for iteration in range(config.run.iterations):
        first, pool = iteration_tasks(config, iteration)
        task_ids = pool or [source.task_id(split, (first + g) % source.size(split)) for g in range(groups)]
        spent = Counts()
        slots = [(envs[g * copies + c], g, task_ids[g], c) for g in range(groups) for c in range(copies)]
        episodes = play(
            slots,
            policy,
            run.template,
            candidates=1,
            scorer=None,
            seed=derive_seed("best_of_n/prm_rollouts", config.run.seed, iteration),
            counts=spent,
        )
        counts.add(spent)
        batch = rollout_batch(episodes, encoder, spent)
        prepared, label_stats = run.algorithm.advantages(batch, iteration)
        update_stats = run.algorithm.update(prepared, iteration)
        record = {
            "iteration": iteration,
            "episodes_seen": (iteration + 1) * groups * copies,
            "estimator": run.algorithm.label,
            **rollout_metrics(batch),
            **label_stats,
            **update_stats,
        }
        writer.write(record)
        records.append(record)
        progress(
            f"PRM iteration {iteration}: success {record['success']:.3f}  turns {record['prm/turns']}  "
            f"loss {record['prm/loss']:.4f}  |q - label| {record['prm/label_error_abs']:.4f}"
        )
    save_checkpoint(run.out, config.run.iterations - 1, run.modules, run.optimizers)
    training = {
        "config": config.to_dict(),
        "policy": policy_name,
        "train_split": split,
        "iterations": [
            {key: record[key] for key in ("iteration", "success", "prm/loss", "prm/label_error_abs")}
            for record in records
        ],
        "cost": {**asdict(counts), "cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall},
    }
    (run.out / TRAINING_FILE).write_text(json.dumps(training, indent=2) + "\n", encoding="utf-8")
    return training


def trained_prm(config: Any, policy_name: str, progress: Callable[[str], None]) -> dict[str, Any]:
    """The training record of the PRM of ``config`` under ``run.out_dir``: read back when that folder
    holds this very training (same config and policy), trained there when it holds none."""
    out = Path(config.run.out_dir)
    record_file = out / TRAINING_FILE
    if record_file.exists() and (out / "checkpoint.pt").exists():
        training: dict[str, Any] = json.loads(record_file.read_text(encoding="utf-8"))
        if (
            training["config"] == json.loads(json.dumps(config.to_dict()))
            and training["policy"] == policy_name
        ):
            progress(f"PRM: read back from {out} (trained by an earlier run of this experiment)")
            return training
        raise FileExistsError(f"{out} holds a PRM trained with other settings; choose another --out")
    return train_prm(config, policy_name, progress)


def agentenvs_ids() -> list[str]:
    return sorted(name for name in gym.registry if name.startswith("agentenvs/"))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m baselines.experiments.best_of_n", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("env_id", help="a registered env id (agentenvs list prints them)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--n", nargs="+", type=int, default=list(DEFAULT_N), help="the N of the table")
    parser.add_argument("--tasks", type=int, default=20, help="held-out tasks: the first TASKS of --split")
    parser.add_argument("--split", default="test", help="the held-out split Best-of-N plays (test)")
    parser.add_argument("--env-kwargs", default="{}", metavar="JSON", help="keyword arguments of the env")
    parser.add_argument("--policy", choices=POLICIES, default="valid-actions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--run", default=None, metavar="DIR", help="an agentprm run folder: its PRM (and lm policy)"
    )
    parser.add_argument("--out", default="runs/best_of_n", help="where the PRM trained here goes")
    parser.add_argument("--prm-iterations", type=int, default=4)
    parser.add_argument("--prm-groups", type=int, default=4, help="train tasks per PRM iteration")
    parser.add_argument("--prm-group-size", type=int, default=16, help="episodes per task (the paper's N_TD)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help="override a PRM_CONFIG key"
    )
    parser.add_argument("--results", default=str(RESULTS_DIR), help="where the results files go")
    parser.add_argument(
        "--label", default="", help="appended to the results' name (and the PRM's folder): a variant's files"
    )
    args = parser.parse_args(argv)
    if any(n < 1 for n in args.n):
        parser.error(f"--n takes N >= 1 (N replies or episodes to choose from), got {args.n}")
    for name in ("tasks", "prm_iterations", "prm_groups", "prm_group_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.env_id not in gym.registry:
        parser.error(f"unknown env id {args.env_id!r}; agentenvs ids: {', '.join(agentenvs_ids())}")
    try:
        args.env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as error:
        parser.error(f"--env-kwargs is not JSON: {error}")
    if not isinstance(args.env_kwargs, dict) or "split" in args.env_kwargs:
        parser.error("--env-kwargs takes a JSON object of env arguments; the split is --split")
    if args.run is not None and args.set:
        parser.error("--set changes the PRM trained here; with --run the run folder's settings hold")
    args.n = sorted(set(args.n))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cpu, wall = time.process_time(), time.perf_counter()
    from baselines.trainers.agentprm import load_run_models, promise_scores

    def progress(line: str) -> None:
        print(line, flush=True)

    training = None
    name = results_name(args.env_id, args.label)
    run_dir = Path(args.run) if args.run else Path(args.out) / f"{name}-s{args.seed}"
    if args.run is None:
        from baselines.trainers.config import ConfigError

        try:
            config = prm_config(
                args.env_id,
                args.env_kwargs,
                out_dir=run_dir,
                seed=args.seed,
                iterations=args.prm_iterations,
                groups=args.prm_groups,
                group_size=args.prm_group_size,
                overrides=args.set,
            )
        except ConfigError as error:
            raise SystemExit(f"--set: {error}") from error
        training = trained_prm(config, args.policy, progress)
    policy_model, prm, tokenizer, template, config = load_run_models(run_dir, device="cpu")
    if config.env.id != args.env_id:
        raise SystemExit(f"{run_dir} trained its PRM on {config.env.id}, not {args.env_id}")
    if config.sampler.context != "window":
        raise SystemExit(f"{run_dir} trained on full-context prompts; Best-of-N scores window prompts")
    policy = make_policy(args.policy, config, policy_model, tokenizer)

    def scorer(prompts: Sequence[str], replies: Sequence[str]) -> np.ndarray:
        return promise_scores(
            prm, tokenizer, list(prompts), list(replies), micro_batch_size=config.optim.micro_batch_size
        )

    env_kwargs = {**{k: v for k, v in config.env.kwargs.items() if k != "split"}, **args.env_kwargs}
    env_kwargs["split"] = args.split
    envs = make_envs(args.env_id, env_kwargs, max(args.n) if "trajectory" in args.modes else 1)
    task_ids = split_tasks(envs[0], args.split, args.tasks)
    if "step" in args.modes and len(envs) < len(task_ids):
        envs += make_envs(args.env_id, env_kwargs, len(task_ids) - len(envs))
    modes: dict[str, Any] = {}
    for mode in args.modes:
        run_mode = trajectory_level if mode == "trajectory" else step_level
        outcome = run_mode(envs, task_ids, policy, template, scorer, args.n, args.seed)
        modes[mode] = {
            "by_n": {str(n): row for n, row in outcome.by_n.items()},
            "per_task": {str(n): rows for n, rows in outcome.per_task.items()},
            "cost": {**asdict(outcome.counts), "cpu_s": outcome.cpu_s, "wall_s": outcome.wall_s},
        }
        progress(
            f"{mode}: "
            + "  ".join(f"N={n} success {row['success']:.3f}" for n, row in outcome.by_n.items())
            + f"  ({outcome.cpu_s:.1f} CPU s)"
        )
    usage = resource.getrusage(resource.RUSAGE_SELF)
    command = ["python", "-m", "baselines.experiments.best_of_n", *(sys.argv[1:] if argv is None else argv)]
    results = {
        "command": shlex.join(command),
        "env_id": args.env_id,
        "env_kwargs": env_kwargs,
        "split": args.split,
        "task_ids": task_ids,
        "n": args.n,
        "seed": args.seed,
        "policy": args.policy,
        "prm": {
            "source": f"--run {args.run}" if args.run else "trained here on the train split",
            "run_dir": str(run_dir),
            "config": config.to_dict(),
            "training": training,
        },
        "modes": modes,
        "cost": {
            "cpu_s": time.process_time() - cpu,
            "wall_s": time.perf_counter() - wall,
            "max_rss_mib": usage.ru_maxrss / 1024,
            "prm_training": training["cost"] if training else None,
            "evaluation": {
                mode: {
                    key: block["cost"][key]
                    for key in ("cpu_s", "wall_s", "env_steps", "generations", "scored_pairs")
                }
                for mode, block in modes.items()
            },
        },
    }
    printed = table(results)
    print(printed)
    folder = Path(args.results)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (folder / f"{name}.txt").write_text(printed + "\n", encoding="utf-8")
    print(f"results: {folder / name}.json, {folder / name}.txt")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
