"""AgentPRM's TD labels against Monte Carlo labels in miniature: label error at equal env-step budgets.

**The paper's claim** (Xi et al. 2025, AgentPRM): labelling a process reward model's promise
Q(s, a) by TD(λ) bootstrapping on the PRM's own predictions is more than 8× more compute-efficient
than labelling it by Monte Carlo continuations from each step.

**The miniature**: the env, rooms and label options of ``baselines/configs/agentprm_sokoban.yaml``
(Sokoban 5x5, one box, 10 turns of one move, its 8 fixed train rooms; outcome-only rewards, the
outcome = success; ``form: seed``, γ = 1, λ = 0.95; N_mc = 16 continuations) with the paper's groups
of N_TD = 16 episodes of one room (``--group-size``; the config's 8 is its CPU training size), and a
fixed policy, ``best_of_n.ValidActionPolicy`` (uniform over the 4 moves), as the paper trains its PRM
on a fixed policy's rollouts. The PRM is **tabular** (:class:`TabularPRM`): a dict from a key to the
mean of every label that key received, so that the labels are measured and not a network's
generalisation; an unseen key predicts 0 (what AgentPRM's
zero-initialised head predicts before training). The key is (the prompt the policy read, its reply)
under the full prompt template without history (``PromptTemplate.for_env(style="full",
history_window=0)``), which states the room (the ``state_key``'s grid) and the turn number: one key
per (state_key, turn, move), and the turn belongs in it because the turn limit makes a state's value
depend on the turns left.

Both labellings read the same stream of episodes (groups of N_TD episodes, the rooms in turn):

- **TD**: a group's labels are ``baselines.advantages.agentprm_labels`` of each episode (its rewards,
  the table's predictions q_t before the group, q_0 = the group's mean discounted return), then the
  table takes them; cost = the episodes' env steps;
- **MC**: an episode's labels are ``agentprm_mc_labels`` with V̂(s_t) the mean discounted outcome of
  N_mc continuations of the policy from the snapshot of each state s_1 … s_{T−1} whose value a
  promise label uses (Q̂_t = r_t + γ·V̂(s_{t+1}), Q̂_T = r_T; unlike the trainer, which also branches
  from s_0 for the progress label Â_0, no continuation is spent on s_0: the comparison gives MC its
  cheapest form); cost = the episode's steps plus every continuation's.

**Metric**: at each env-step budget B of ``--budgets`` (default 1,000 × 2^k, k = 0 … 8) a labelling's
table is the one after the last group (TD) or episode (MC) whose cumulative cost fits in B; its
**label error** is the mean abs(table(key) − Q(key)) over ``--eval-keys`` (64) keys drawn from other
episodes of the policy in the same rooms, Q(key) = r + γ·V(s') from M = ``--truth-rollouts`` (256)
continuations after the key's move (standard error at most 0.5/√256 = 0.031); ``coverage`` is the
share of those keys the table holds.

**Best-of-N** (``best_of_n.step_level``): with each labelling's table at the largest budget as the
scorer, N ∈ ``--n`` (1, 2, 4, 8, 16) candidate moves a turn from the same policy, the best-promised one
executed, on the 8 rooms. Not on held-out tasks: a table knows only the rooms it was labelled in
(held-out rooms need a network PRM, which ``best_of_n.py`` trains with TD labels); so this part
measures whether each labelling's promise ranks moves, not generalisation.

**Verdict rule** (:func:`verdict`), on the mean error curves over seeds: the target is half the
untrained table's error (the table that predicts 0 everywhere: its error is the mean truth); B_TD and
B_MC are the first budgets of the grid where each labelling's mean error is at most the target. The
direction *holds* when B_MC ≥ 8·B_TD, or when MC does not reach the target on the grid and its
largest budget is ≥ 8·B_TD; *does not hold* when TD does not reach it or B_MC < 8·B_TD; *not
testable here* when neither can be decided on the grid. Reported beside it: TD's error at B against
MC's at 8B for every such pair of the grid, and Best-of-N.

    python -m baselines.experiments.prm_labels --seeds 0 1 2 3 4 5 6 7 --out runs/prm_labels

A seed whose result under ``--out`` was made with these settings is read back. Everything draws from
``derive_seed`` streams and the table is plain Python: the numbers are exact on any machine (the
experiment still runs pinned like the others and records its numerics).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agentenvs.core import derive_rng, derive_seed
from agentenvs.core.env import AgentEnv
from baselines.advantages import agentprm_labels, agentprm_mc_labels
from baselines.experiments.best_of_n import (
    Counts,
    Episode,
    Policy,
    TurnView,
    ValidActionPolicy,
    make_envs,
    play,
    reset_seed,
    step_level,
)
from baselines.experiments.common import (
    environment_is_pinned,
    experiment_parser,
    markdown_row,
    pin_numerics,
    run_pinned,
    save_figure,
    seed_count,
)
from baselines.prompts import PromptTemplate
from baselines.trainers.agentprm import AgentPRMOptions
from baselines.trainers.branches import discounted_return
from baselines.trainers.config import ConfigError, TrainConfig, load_config

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "agentprm_sokoban.yaml"
RESULTS_NAME = "prm_labels"
LABELLINGS = {"td": "TD(λ)", "mc": "Monte Carlo"}
DEFAULT_BUDGETS = tuple(1000 * 2**k for k in range(9))
DEFAULT_N = (1, 2, 4, 8, 16)
EFFICIENCY = 8  # the paper's claimed factor
PAPER_N_TD = 16  # the paper's rollouts per query for TD labels

Key = tuple[str, str]


@dataclass
class TabularPRM:
    """Q(key) = the mean of the labels ``key`` received; 0 for a key never labelled."""

    sums: dict[Key, float] = field(default_factory=dict)
    counts: dict[Key, int] = field(default_factory=dict)

    def predict(self, key: Key) -> float:
        return self.sums[key] / self.counts[key] if key in self.counts else 0.0

    def add(self, key: Key, label: float) -> None:
        self.sums[key] = self.sums.get(key, 0.0) + float(label)
        self.counts[key] = self.counts.get(key, 0) + 1

    def score(self, prompts: Sequence[str], replies: Sequence[str]) -> np.ndarray:
        """The promise of each (prompt, reply): ``best_of_n``'s scorer."""
        return np.array([self.predict((p, r)) for p, r in zip(prompts, replies, strict=True)])


def outcome_rewards(success: bool, turns: int) -> np.ndarray:
    """The outcome (success, 1 or 0) on the last turn, 0 before: AgentPRM's ``rewards: outcome``."""
    rewards = np.zeros(turns)
    if turns:
        rewards[-1] = float(success)
    return rewards


def label_error(table: TabularPRM, truths: dict[Key, float]) -> tuple[float, float]:
    """(mean abs(table(key) − truth), share of the keys the table holds) over ``truths``' keys."""
    errors = [abs(table.predict(key) - truth) for key, truth in truths.items()]
    covered = [key in table.counts for key in truths]
    return float(np.mean(errors)), float(np.mean(covered))


Unit = tuple[int, Callable[[TabularPRM], None]]


def errors_at_budgets(
    units: Iterator[Unit], budgets: Sequence[int], evaluate: Callable[[TabularPRM], tuple[float, float]]
) -> tuple[list[tuple[float, float]], int]:
    """A labelling's (error, coverage) at each budget, and the env steps it spent.

    ``units`` yields (cost, apply): a unit of labelling work and what it does to the table. The table
    at budget B is the one after the last unit whose cumulative cost is at most B, so the units are
    applied while they fit in the largest budget, and before a unit is applied every budget it would
    overrun is evaluated.
    """
    table, spent, out = TabularPRM(), 0, []
    pending = sorted(budgets)
    for cost, apply in units:
        while pending and spent + cost > pending[0]:
            out.append(evaluate(table))
            pending.pop(0)
        if not pending:
            break
        apply(table)
        spent += cost
    return out, spent


def continuation_returns(
    env: AgentEnv[Any, Any],
    snapshot: Any,
    policy: Policy,
    template: PromptTemplate,
    first_observation: str,
    rollouts: int,
    gamma: float,
    seed: int,
) -> tuple[np.ndarray, int]:
    """The discounted outcome γ^(L−1)·success of ``rollouts`` continuations of ``policy`` from ``snapshot``
    (L: the continuation's turns), and the env steps they took. Continuation k's turn j replies with
    the draw ``derive_seed(seed, k, j)``."""
    returns, steps = np.zeros(rollouts), 0
    for k in range(rollouts):
        observation, info = env.restore(snapshot)
        turn, done, length = snapshot.turn, False, 0
        while not done:
            prompt = template.render(
                first_observation=first_observation,
                history=[],
                observation=str(observation),
                turn=turn,
                admissible=info.get("admissible_actions"),
            )
            (reply,) = policy.propose(
                [TurnView(env, info, prompt)], [derive_seed("prm-labels/continuation", seed, k, length)]
            )
            observation, _, terminated, truncated, info = env.step(reply)
            done, turn, length = bool(terminated or truncated), turn + 1, length + 1
        steps += length
        returns[k] = discounted_return(outcome_rewards(bool(info.get("success", False)), length), gamma)
    return returns, steps


def episode_snapshots(env: AgentEnv[Any, Any], episode: Episode, seed: int) -> list[Any]:
    """The snapshot before each turn of ``episode`` (played by ``best_of_n.play`` with ``seed``), by
    replaying its replies from its reset (a re-simulation: its steps are not counted)."""
    env.reset(seed=reset_seed(seed, episode.task_index), options={"task_id": episode.task_id})
    snapshots = []
    for turn in episode.turns:
        snapshot = env.snapshot()
        if snapshot.state_key != turn.state_key:
            raise RuntimeError(f"replaying {episode.task_id} left the episode at turn {len(snapshots)}")
        snapshots.append(snapshot)
        env.step(turn.reply)
    return snapshots


@dataclass
class Setting:
    """What one seed's labelling runs on: envs, rooms, the policy and template, and the label options."""

    envs: list[AgentEnv[Any, Any]]
    rooms: list[str]
    group_size: int
    policy: Policy
    template: PromptTemplate
    options: AgentPRMOptions
    seed: int

    def groups(self) -> Iterator[tuple[int, list[Episode]]]:
        """(group seed, its episodes): groups of ``group_size`` episodes of one room, the rooms in turn."""
        number = 0
        while True:
            room = number % len(self.rooms)
            seed = derive_seed("prm-labels/episodes", self.seed, number)
            slots = [(self.envs[c], room, self.rooms[room], c) for c in range(self.group_size)]
            yield (
                seed,
                play(
                    slots, self.policy, self.template, candidates=1, scorer=None, seed=seed, counts=Counts()
                ),
            )
            number += 1


def key_of(turn: Any) -> Key:
    return (turn.prompt_text, turn.reply)


def td_units(setting: Setting) -> Iterator[Unit]:
    """One unit per group: its labels from the table before it (``agentprm_labels``), then added."""
    options = setting.options
    for _, episodes in setting.groups():
        rewards = [outcome_rewards(e.success, len(e.turns)) for e in episodes]
        baseline = float(np.mean([discounted_return(r, options.gamma) for r in rewards]))

        def apply(
            table: TabularPRM,
            episodes: list[Episode] = episodes,
            rewards: list[np.ndarray] = rewards,
            baseline: float = baseline,
        ) -> None:
            labelled = []
            for episode, reward in zip(episodes, rewards, strict=True):
                q = np.array([table.predict(key_of(t)) for t in episode.turns])
                _, _, promise = agentprm_labels(
                    reward, q, baseline, gamma=options.gamma, lam=options.lam, form=options.form
                )
                labelled.extend(zip([key_of(t) for t in episode.turns], promise, strict=True))
            for key, label in labelled:
                table.add(key, label)

        yield sum(len(e.turns) for e in episodes), apply


def mc_units(setting: Setting) -> Iterator[Unit]:
    """One unit per episode: N_mc continuations from s_1 … s_{T−1}, ``agentprm_mc_labels``' promise."""
    options, env = setting.options, setting.envs[-1]
    for seed, episodes in setting.groups():
        for episode in episodes:
            snapshots = episode_snapshots(env, episode, seed)
            first = episode.turns[0].observation
            values, spent = np.zeros(len(episode.turns)), len(episode.turns)
            for t in range(1, len(episode.turns)):
                returns, steps = continuation_returns(
                    env,
                    snapshots[t],
                    setting.policy,
                    setting.template,
                    first,
                    options.mc_rollouts,
                    options.gamma,
                    derive_seed("prm-labels/mc", seed, episode.copy, t),
                )
                values[t], spent = float(returns.mean()), spent + steps
            _, promise = agentprm_mc_labels(
                outcome_rewards(episode.success, len(episode.turns)), values, gamma=options.gamma
            )
            keys = [key_of(t) for t in episode.turns]

            def apply(table: TabularPRM, keys: list[Key] = keys, promise: np.ndarray = promise) -> None:
                for key, label in zip(keys, promise, strict=True):
                    table.add(key, label)

            yield spent, apply


def eval_truths(setting: Setting, keys: int, rollouts: int) -> tuple[dict[Key, float], int]:
    """``keys`` distinct keys from other episodes of the policy (2 per room), each with its Q from
    ``rollouts`` continuations after its move; and the env steps that cost."""
    seed = derive_seed("prm-labels/eval", setting.seed)
    env, options = setting.envs[-1], setting.options
    slots = [(setting.envs[i * 2 + c], i, room, c) for i, room in enumerate(setting.rooms) for c in range(2)]
    episodes = play(
        slots, setting.policy, setting.template, candidates=1, scorer=None, seed=seed, counts=Counts()
    )
    found: dict[Key, tuple[Episode, int]] = {}
    for episode in episodes:
        for t, turn in enumerate(episode.turns):
            found.setdefault(key_of(turn), (episode, t))
    chosen = derive_rng("prm-labels/eval-keys", setting.seed).permutation(len(found))[:keys]
    listed = list(found.items())
    truths, steps = {}, 0
    for index in sorted(int(i) for i in chosen):
        key, (episode, t) = listed[index]
        env.restore(episode_snapshots(env, episode, seed)[t])
        _, _, terminated, truncated, info = env.step(episode.turns[t].reply)
        steps += 1
        if terminated or truncated:
            truths[key] = float(bool(info.get("success", False)))
            continue
        returns, spent = continuation_returns(
            env,
            env.snapshot(),
            setting.policy,
            setting.template,
            episode.turns[0].observation,
            rollouts,
            options.gamma,
            derive_seed("prm-labels/truth", setting.seed, index),
        )
        truths[key], steps = options.gamma * float(returns.mean()), steps + spent
    return truths, steps


def make_setting(config: TrainConfig, seed: int, group_size: int = PAPER_N_TD) -> Setting:
    """The seed's envs (one per episode of a group, the last also replays and branches), rooms, uniform
    policy, full-style history-free template and AgentPRM label options; refuses other reward options."""
    options = config.algorithm_options(AgentPRMOptions)
    if options.rewards != "outcome" or options.outcome != "success":
        raise ConfigError(
            "the label experiment's truth is the success probability: algorithm.rewards must be outcome "
            f"and algorithm.outcome success (got {options.rewards!r}, {options.outcome!r})"
        )
    rooms = list(config.env.task_pool)
    envs = make_envs(config.env.id, dict(config.env.kwargs), max(group_size, 2 * len(rooms)) + 1)
    template = PromptTemplate.for_env(envs[0], history_window=0, style="full")
    return Setting(envs, rooms, group_size, ValidActionPolicy(), template, options, seed)


def run_seed(config: TrainConfig, seed: int, settings: dict[str, Any]) -> dict[str, Any]:
    """One seed: the truths, both labellings' errors over the budgets, Best-of-N, and the cost."""
    cpu, wall = time.process_time(), time.perf_counter()
    setting = make_setting(config, seed, settings["group_size"])
    truths, truth_steps = eval_truths(setting, settings["eval_keys"], settings["truth_rollouts"])
    budgets = settings["budgets"]

    def evaluate(table: TabularPRM) -> tuple[float, float]:
        return label_error(table, truths)

    curves: dict[str, Any] = {"empty_error": evaluate(TabularPRM())[0]}
    best_of_n: dict[str, Any] = {}
    spent: dict[str, int] = {}
    for name, units in (("td", td_units), ("mc", mc_units)):
        final = TabularPRM()

        def keep(table: TabularPRM, final: TabularPRM = final) -> tuple[float, float]:
            final.sums, final.counts = dict(table.sums), dict(table.counts)
            return evaluate(table)

        points, spent[name] = errors_at_budgets(units(setting), budgets, keep)
        curves[name] = {"error": [p[0] for p in points], "coverage": [p[1] for p in points]}
        if settings["n"]:
            outcome = step_level(
                setting.envs,
                setting.rooms,
                setting.policy,
                setting.template,
                final.score,
                settings["n"],
                derive_seed("prm-labels/best-of-n", seed),
            )
            best_of_n[name] = {str(n): row["success"] for n, row in outcome.by_n.items()}
            spent[f"{name}_best_of_n"] = outcome.counts.env_steps
    env_steps = truth_steps + sum(spent.values())
    cost = {
        "cpu_s": time.process_time() - cpu,
        "wall_s": time.perf_counter() - wall,
        "truth_env_steps": truth_steps,
        **{f"{name}_env_steps": steps for name, steps in spent.items()},
        "env_steps": env_steps,
        "generations": env_steps,  # one reply of the policy per env step
    }
    return {
        "settings": settings,
        "curves": curves,
        "best_of_n": best_of_n,
        "truth_mean": float(np.mean(list(truths.values()))),
        "cost": cost,
    }


def _spread(values: Sequence[float]) -> dict[str, Any]:
    return {
        "mean": float(np.mean(values)),
        "std": float(np.std(values)),
        "min": float(min(values)),
        "max": float(max(values)),
        "seeds": len(values),
    }


def summarise(curves: dict[str, dict[str, Any]], best_of_n: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Over seeds, per labelling: the error and coverage at each budget, and Best-of-N success per N."""
    summary: dict[str, Any] = {"empty_error": _spread([c["empty_error"] for c in curves.values()])}
    for name in LABELLINGS:
        by_seed = [seed_curves[name] for seed_curves in curves.values()]
        summary[name] = {
            "error": [_spread(values) for values in zip(*[c["error"] for c in by_seed], strict=True)],
            "coverage": [_spread(values) for values in zip(*[c["coverage"] for c in by_seed], strict=True)],
        }
        if best_of_n:
            ns = next(iter(best_of_n.values()))[name]
            summary[name]["best_of_n"] = {n: _spread([b[name][n] for b in best_of_n.values()]) for n in ns}
    return summary


def budget_to_reach(errors: Sequence[float], budgets: Sequence[int], target: float) -> int | None:
    """The first budget whose error is at most ``target`` (None: none on the grid)."""
    for error, budget in zip(errors, budgets, strict=True):
        if error <= target:
            return budget
    return None


def verdict(summary: dict[str, Any], budgets: Sequence[int]) -> dict[str, Any]:
    """The module docstring's rule, on the mean error curves over seeds.

    target = half the untrained table's mean error; B_TD, B_MC = the first budgets where each mean
    error is at most the target. Holds when B_MC ≥ 8·B_TD, or MC never reaches it and the grid's
    largest budget is ≥ 8·B_TD (so B_MC > 8·B_TD); does not hold when TD never reaches it or
    B_MC < 8·B_TD; not testable here when MC does not reach it and the grid ends below 8·B_TD.
    The pairwise comparison (TD at B against MC at 8B) is reported beside it.
    """
    target = summary["empty_error"]["mean"] / 2
    reached = {
        name: budget_to_reach([b["mean"] for b in summary[name]["error"]], budgets, target)
        for name in LABELLINGS
    }
    td, mc = reached["td"], reached["mc"]
    if td is None or (mc is not None and mc < EFFICIENCY * td):
        outcome = "does not hold"
    elif mc is None and budgets[-1] < EFFICIENCY * td:
        outcome = "not testable here"
    else:
        outcome = "holds"
    index = {budget: i for i, budget in enumerate(budgets)}
    pairs = []
    for budget in budgets:
        if budget * EFFICIENCY in index:
            td_error = summary["td"]["error"][index[budget]]["mean"]
            mc_error = summary["mc"]["error"][index[budget * EFFICIENCY]]["mean"]
            pairs.append(
                {
                    "budget": budget,
                    "td_error": td_error,
                    "mc_error_at_8x": mc_error,
                    "td_not_worse": td_error <= mc_error,
                }
            )
    return {
        "verdict": outcome,
        "rule": "holds when the env steps MC labels need to halve the untrained table's mean label error are "
        "at least 8x the steps TD labels need",
        "target_error": target,
        "budget_to_target": reached,
        "pairs": pairs,
    }


def docs_row(results: dict[str, Any]) -> str:
    """The docs page's row of this table (6 cells, each computed from ``results``)."""
    summary, settings, judged = results["summary"], results["settings"], results["verdict"]
    budgets = settings["budgets"]

    def at(name: str, budget: int) -> str:
        block = summary[name]["error"][budgets.index(budget)]
        return (
            f"{block['mean']:.3f} ± {block['std']:.3f} ({block['min']:.3f}–{block['max']:.3f}, "
            f"{seed_count(block['seeds'])})"
        )

    reached = judged["budget_to_target"]

    def steps(name: str) -> str:
        return f"{reached[name]:,}" if reached[name] is not None else f"more than {budgets[-1]:,}"

    shown = reached["td"] if reached["td"] is not None else budgets[0]
    ours = (
        f"untrained table's error {summary['empty_error']['mean']:.3f}; steps to halve it: TD {steps('td')}, "
        f"MC {steps('mc')}<br>error at {shown:,} steps: TD {at('td', shown)}, MC {at('mc', shown)}"
    )
    if EFFICIENCY * shown in budgets:
        ours += f"<br>MC at {EFFICIENCY * shown:,}: {at('mc', EFFICIENCY * shown)}"
    if "best_of_n" in summary["td"]:
        top = str(max(settings["n"]))
        ours += (
            f"<br>Best-of-{top} success: TD {summary['td']['best_of_n'][top]['mean']:.2f}, "
            f"MC {summary['mc']['best_of_n'][top]['mean']:.2f} "
            f"(N = 1: {summary['td']['best_of_n']['1']['mean']:.2f})"
        )
    passed = sum(p["td_not_worse"] for p in judged["pairs"])
    ratio = ""
    if reached["td"] is not None:
        if reached["mc"] is not None:
            ratio = f" ({reached['mc'] / reached['td']:g}× the steps)"
        else:
            ratio = f" (more than {budgets[-1] / reached['td']:g}× the steps; the grid ends there)"
    reason = (
        f"TD halves the error in {steps('td')} steps, MC in {steps('mc')}{ratio}; "
        f"TD at B ≤ MC at 8B on {passed} of {len(judged['pairs'])} budgets"
    )
    cost = results["cost_total"]
    cells = [
        "AgentPRM's TD labels vs Monte Carlo labels (Xi et al.)",
        "TD(λ) promise labels (N_TD = 16 rollouts per query) claimed more than 8× more compute-efficient "
        "than Monte Carlo labels (N_mc = 16 per step); Best-of-N gains growing with N (WebShop, BabyAI, "
        "TextCraft); no numbers quoted",
        f"Sokoban 5x5, 8 rooms, uniform policy, tabular PRM keyed by (state, turn, move); γ = "
        f"{settings['gamma']}, λ = {settings['lam']}, N_TD = {settings['group_size']}, "
        f"N_mc = {settings['mc_rollouts']}; truth M = "
        f"{settings['truth_rollouts']} on {settings['eval_keys']} keys; "
        f"budgets {budgets[0]:,}–{budgets[-1]:,} steps",
        ours,
        f"{judged['verdict']}: {reason}",
        f"{cost['cpu_s']:,.0f} CPU s, {cost['env_steps']:,} env steps",
    ]
    return markdown_row(cells)


def plot(summary: dict[str, Any], budgets: Sequence[int], out: Path) -> Path | None:
    """Label error against env steps per labelling (mean ± std over seeds); Best-of-N success against N."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for name, label in LABELLINGS.items():
        mean = np.array([b["mean"] for b in summary[name]["error"]])
        std = np.array([b["std"] for b in summary[name]["error"]])
        seeds = summary[name]["error"][0]["seeds"]
        (line,) = axes[0].plot(budgets, mean, marker="o", label=f"{label} ({seed_count(seeds)})")
        axes[0].fill_between(budgets, mean - std, mean + std, alpha=0.2, color=line.get_color())
        if "best_of_n" in summary[name]:
            ns = list(summary[name]["best_of_n"])
            mean = np.array([summary[name]["best_of_n"][n]["mean"] for n in ns])
            std = np.array([summary[name]["best_of_n"][n]["std"] for n in ns])
            axes[1].plot([int(n) for n in ns], mean, marker="o", color=line.get_color(), label=label)
            axes[1].fill_between(
                [int(n) for n in ns], mean - std, mean + std, alpha=0.2, color=line.get_color()
            )
    axes[0].set_xscale("log")
    axes[0].set_xlabel("env steps spent on labels")
    axes[0].set_ylabel("mean abs(label − truth)")
    axes[1].set_xscale("log", base=2)
    axes[1].set_xlabel("N (candidate moves a turn)")
    axes[1].set_ylabel("Best-of-N success (8 rooms)")
    for axis in axes:
        axis.grid(alpha=0.3)
        axis.legend()
    return save_figure(figure, out / f"{RESULTS_NAME}.png")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = experiment_parser(
        (__doc__ or "").splitlines()[0],
        "runs/prm_labels",
        "each seed's result",
        prog="python -m baselines.experiments.prm_labels",
    )
    parser.add_argument(
        "--budgets", nargs="+", type=int, default=list(DEFAULT_BUDGETS), help="env-step budgets"
    )
    parser.add_argument("--eval-keys", type=int, default=64)
    parser.add_argument("--group-size", type=int, default=PAPER_N_TD, help="N_TD, episodes per group")
    parser.add_argument("--truth-rollouts", type=int, default=256, help="M, the truth's continuations")
    parser.add_argument(
        "--n", nargs="*", type=int, default=list(DEFAULT_N), help="Best-of-N's N (none: skip it)"
    )
    args = parser.parse_args(argv)
    if (
        any(b < 1 for b in args.budgets)
        or args.group_size < 1
        or args.eval_keys < 1
        or args.truth_rollouts < 1
        or any(n < 1 for n in args.n)
    ):
        parser.error("budgets, --eval-keys, --truth-rollouts and N must be at least 1")
    args.budgets, args.n = sorted(set(args.budgets)), sorted(set(args.n))
    return args


def main(argv: Sequence[str] | None = None, progress: Callable[[str], None] = print) -> int:
    args = parse_args(argv)
    if not environment_is_pinned():
        return run_pinned("baselines.experiments.prm_labels", argv)
    numerics = pin_numerics()
    config = load_config(CONFIG)
    options = config.algorithm_options(AgentPRMOptions)
    settings = {
        "config": CONFIG.name,
        "budgets": args.budgets,
        "eval_keys": args.eval_keys,
        "truth_rollouts": args.truth_rollouts,
        "n": args.n,
        "group_size": args.group_size,
        "form": options.form,
        "gamma": options.gamma,
        "lam": options.lam,
        "mc_rollouts": options.mc_rollouts,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seeds: dict[str, dict[str, Any]] = {}
    for seed in args.seeds:
        stored = out / f"seed-{seed}.json"
        kept = json.loads(stored.read_text(encoding="utf-8")) if stored.exists() else None
        if kept is None or kept["settings"] != settings:
            kept = run_seed(config, seed, settings)
            stored.write_text(json.dumps(kept, indent=2) + "\n", encoding="utf-8")
        seeds[str(seed)] = kept
        errors = {name: " ".join(f"{e:.3f}" for e in kept["curves"][name]["error"]) for name in LABELLINGS}
        spent = kept["cost"]["cpu_s"]
        progress(f"seed {seed}: TD error {errors['td']}  MC error {errors['mc']}  ({spent:.1f} CPU s)")
    curves = {seed: kept["curves"] for seed, kept in seeds.items()}
    best_of_n = {seed: kept["best_of_n"] for seed, kept in seeds.items() if kept["best_of_n"]}
    summary = summarise(curves, best_of_n)
    costs = {seed: kept["cost"] for seed, kept in seeds.items()}
    results: dict[str, Any] = {
        "command": "python -m baselines.experiments.prm_labels "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "numerics": numerics,
        "settings": settings,
        "env": {"id": config.env.id, "kwargs": config.env.kwargs, "rooms": config.env.task_pool},
        "curves": curves,
        "best_of_n": best_of_n,
        "truth_mean": {seed: kept["truth_mean"] for seed, kept in seeds.items()},
        "summary": summary,
        "cost": costs,
        "cost_total": {
            "cpu_s": float(sum(c["cpu_s"] for c in costs.values())),
            "wall_s": float(sum(c["wall_s"] for c in costs.values())),
            "env_steps": int(sum(c["env_steps"] for c in costs.values())),
            "generations": int(sum(c["generations"] for c in costs.values())),
        },
    }
    results["verdict"] = verdict(summary, args.budgets)
    folder = Path(args.results)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{RESULTS_NAME}.json"
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    figure = plot(summary, args.budgets, folder)
    for name, label in LABELLINGS.items():
        errors = "  ".join(
            f"{b:,}: {e['mean']:.3f}" for b, e in zip(args.budgets, summary[name]["error"], strict=True)
        )
        progress(f"{label:12s} {errors}")
    progress(f"verdict: {results['verdict']['verdict']}")
    progress(docs_row(json.loads(path.read_text(encoding="utf-8"))))
    progress(f"results: {path}" + (f", curves: {figure}" if figure else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
