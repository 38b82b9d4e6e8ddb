"""Turn-level rewards on Sokoban in miniature: GRPO-OR, GRPO-MR, PPO-OR, PPO-MR and MT-PPO, several seeds.

**The paper's claim** (Wei, Zeng et al. 2025, "Reinforcing multi-turn reasoning in LLM agents via
turn-level reward design", Sokoban case study: Qwen2.5-VL-3B, 6×6 rooms with one box, 3 turns of
up to 3 moves; +10 success, +1 per box on a target, +0.5 format, −0.1 per step): turn-level credit
beats outcome-only credit and a critic beats group baselines. Success GRPO-OR 0.0781 < GRPO-MR
0.2578 < PPO-OR 0.3828 < PPO-MR 0.5078 < MT-PPO 0.6563, and the valid-action rate in the same
order, 0.2604 < 0.6771 < 0.6953 < 0.8451 < 0.9870 (:data:`PAPER`).

**The miniature** (``baselines/configs/paper_turn_rewards_sokoban.yaml``): the paper's turn structure
and rewards (``agentenvs/Sokoban-v0``: 3 turns × up to 3 moves separated by ``||``, its reward
weights) on 8 fixed 6×6 one-box rooms whose solutions take 2 moves, played by a tiny causal LM
(2 layers, hidden 32) trained from scratch: 4 rooms × 8 copies an iteration, 20 iterations. Each
turn the policy samples exactly 5 tokens from {up, down, left, right, ``||``}; the turn is valid when
no two moves touch (``up||left||||`` reads up, left; ``upleft`` reads nothing), so a random turn is
valid with probability 5.76% and validity must be learnt, as an LLM must learn the answer format.
What it simplifies: rooms of 2 moves instead of at least 5 (so that a policy from scratch ever
solves one), 8 rooms instead of generated ones, a 48,096-parameter model instead of a
pretrained 3B one, 640 episodes per run; responses carry no ``<action>`` tags, so the +0.5 format
bonus never pays and validity is learnt from the invalid-action and step penalties alone. At 640
episodes every arm is still learning (``turn_rewards.png``), so the table compares early learning,
not converged success.

**The arms** (:data:`ARMS`; only the algorithm section differs): GRPO-OR and GRPO-MR are the
``critic_free`` trainer with estimator ``grpo_or`` (group-normalised last-turn reward) and ``grpo``
(group-normalised episode return), preset ``paper``; PPO-OR, PPO-MR and MT-PPO are the ``ppo``
trainer (critic: a copy of the policy with a scalar head; token-level GAE, γ = λ = 1) with
``reward_placement`` ``outcome`` (the last turn's reward on the last token), ``summed`` (the episode
return on the last token) and ``turn`` (each turn's reward on its last token). Every arm trains on
one full-context sequence per episode (``baselines/configs/mt_ppo_sokoban.yaml`` runs its GRPO arms
on per-turn samples, verl-agent's layout; here they share PPO's sequences, so each arm takes the
same optimizer steps on the same tokens and only the credit differs).

**Metrics**, per iteration over its 32 episodes: ``success`` (share of episodes that solve their
room) and ``valid_action_rate`` (share of turns whose moves could all be read:
1 − Σ invalid turns / Σ turns, from the env's ``invalid_action`` reward component;
:func:`valid_action_rate`). A run's *final* value is its mean over the last ``--window``
iterations; an arm's figure is the mean ± population std over seeds, with the range.

**Verdict rule** (:func:`verdict`, computed, never set by hand): a claim "arm A above arm B" *holds*
when the gap of their mean final values exceeds twice its standard error over seeds
(√(s²_A/n_A + s²_B/n_B), sample variances; about a 95% one-sided test with 8 seeds a side), is
*reversed* when it is below minus twice that, and is *unresolved* otherwise. The key claims on
success are MR above OR within GRPO and within PPO, and MT-PPO above each other arm; the table's
verdict is **holds** when every key claim on success holds, **not testable here** when no run of
any arm solves a room in its last ``--window`` iterations (no success to order), and **does not
hold** otherwise. The same claims on the valid-action rate, and every adjacent pair of the paper's
order on both metrics, are reported beside it.

Runs go to ``--out`` (``runs/paper_turn_sokoban``, shared with
:mod:`baselines.experiments.turn_decomposition`, whose trajectory-level arms are these PPO runs);
a complete run there is read back, not retrained. The results file
``<results>/turn_rewards.json`` holds the settings, every run's curves, the summary, the verdict and
each run's cost; ``turn_rewards.png`` the curves (mean ± std over seeds)::

    python -m baselines.experiments.turn_rewards --seeds 0 1 2 3 4 5 6 7

Seed 0 reruns bit for bit: the experiment trains in a process with pinned numerics
(:mod:`baselines.experiments.common`), recorded in the results file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from baselines.experiments.arms import (
    CONFIGS,
    Arm,
    cost_summary,
    cpu_cell,
    metric_curves,
    seed_spread,
    spread,
    train_arms,
    write_results,
)
from baselines.experiments.common import (
    environment_is_pinned,
    experiment_parser,
    markdown_row,
    pin_numerics,
    run_pinned,
)
from baselines.trainers.config import ConfigError, TrainConfig, load_config

NAME = "turn_rewards"
CONFIG = CONFIGS / "paper_turn_rewards_sokoban.yaml"
DEFAULT_OUT = "runs/paper_turn_sokoban"  # turn_decomposition.py reads its trajectory-level runs here
GRPO_ARM = "algorithm={{name: critic_free, estimator: {}, preset: paper}}"

# In the paper's order, lowest success first.
ARMS = {
    "grpo_or": Arm(CONFIG, (GRPO_ARM.format("grpo_or"),), "GRPO-OR"),
    "grpo_mr": Arm(CONFIG, (GRPO_ARM.format("grpo"),), "GRPO-MR"),
    "ppo_or": Arm(CONFIG, ("algorithm.reward_placement=outcome",), "PPO-OR"),
    "ppo_mr": Arm(CONFIG, ("algorithm.reward_placement=summed",), "PPO-MR"),
    "mt_ppo": Arm(CONFIG, ("algorithm.reward_placement=turn",), "MT-PPO"),
}
PAPER = {
    "setting": "Qwen2.5-VL-3B, 6×6 Sokoban, 1 box, 3 turns × ≤3 moves",
    "success": {"grpo_or": 0.0781, "grpo_mr": 0.2578, "ppo_or": 0.3828, "ppo_mr": 0.5078, "mt_ppo": 0.6563},
    "valid_action_rate": {
        "grpo_or": 0.2604,
        "grpo_mr": 0.6771,
        "ppo_or": 0.6953,
        "ppo_mr": 0.8451,
        "mt_ppo": 0.9870,
    },
}
METRICS = ("success", "valid_action_rate")
CURVES = (*METRICS, "return")  # the results file also keeps each run's mean episode return
# (above, below): MR above OR in GRPO and in PPO, MT-PPO above every other arm
KEY_CLAIMS = (
    ("grpo_mr", "grpo_or"),
    ("ppo_mr", "ppo_or"),
    ("mt_ppo", "grpo_or"),
    ("mt_ppo", "grpo_mr"),
    ("mt_ppo", "ppo_or"),
    ("mt_ppo", "ppo_mr"),
)
SIGNIFICANCE = 2.0  # standard errors a gap must exceed


def valid_action_rate(record: Mapping[str, Any]) -> float:
    """Share of an iteration's turns whose moves could all be read: 1 − invalid turns / turns.

    The record's ``component/invalid_action`` and ``turns`` are both means per
    episode over the same episodes, so their ratio is Σ invalid turns / Σ turns:
    32 episodes of 3 turns with 24 invalid turns log 0.75 and 3.0, rate 1 − 0.75/3 = 0.75.
    """
    return 1.0 - float(record["component/invalid_action"]) / float(record["turns"])


def with_valid_action_rates(
    runs: dict[str, dict[int, list[dict[str, Any]]]],
) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """Every record with its ``valid_action_rate`` (:func:`valid_action_rate`) added."""
    return {
        arm: {
            seed: [{**record, "valid_action_rate": valid_action_rate(record)} for record in records]
            for seed, records in by_seed.items()
        }
        for arm, by_seed in runs.items()
    }


def final_value(curve: Sequence[float], window: int) -> float:
    """A run's final value: the mean of its last ``window`` points ([0, 0.25, 0.5, 1.0], 2 → 0.75)."""
    return float(np.mean(curve[-window:]))


def summarise(
    curves: Mapping[str, Mapping[str, Mapping[str, Sequence[float]]]], metrics: Sequence[str], window: int
) -> dict[str, Any]:
    """``summary[metric][arm]``: each seed's final value (``finals``) and their spread (``arms.seed_spread``),
    from the curves alone (``curves[metric][arm][seed]``)."""
    summary: dict[str, Any] = {}
    for metric in metrics:
        summary[metric] = {}
        for arm, by_seed in curves[metric].items():
            finals = {seed: final_value(curve, window) for seed, curve in by_seed.items()}
            summary[metric][arm] = {"finals": finals, **seed_spread(list(finals.values()))}
    return summary


def claim(above: Sequence[float], below: Sequence[float]) -> dict[str, Any]:
    """Whether the seeds' finals ``above`` exceed ``below``: the gap of means, its standard error, outcome.

    SE = √(s²_above/n_above + s²_below/n_below) with sample variances (ddof 1);
    ``holds`` when gap > 2·SE, ``reversed`` when gap < −2·SE, else ``unresolved``
    (always, with SE None, when a side has one seed: no variance to judge a gap by).
    [0.5, 0.7] against [0.1, 0.3]: gap 0.4, s² = 0.02 each, SE = √(0.01 + 0.01) = 0.1414,
    0.4 > 0.2828: holds.
    """
    high, low = np.asarray(above, dtype=np.float64), np.asarray(below, dtype=np.float64)
    gap = float(high.mean() - low.mean())
    if min(high.size, low.size) < 2:
        return {"gap": gap, "standard_error": None, "outcome": "unresolved"}
    error = float(np.sqrt(high.var(ddof=1) / high.size + low.var(ddof=1) / low.size))
    if gap > SIGNIFICANCE * error:
        outcome = "holds"
    elif gap < -SIGNIFICANCE * error:
        outcome = "reversed"
    else:
        outcome = "unresolved"
    return {"gap": gap, "standard_error": error, "outcome": outcome}


def gap_text(found: Mapping[str, Any]) -> str:
    """A claim's gap ± SE (``+0.125 ± 0.031``; ``+0.125, 1 seed`` without an SE)."""
    error = found["standard_error"]
    return f"{found['gap']:+.3f} ± {error:.3f}" if error is not None else f"{found['gap']:+.3f}, 1 seed"


def claims(block: Mapping[str, Any], pairs: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """:func:`claim` of every (above, below) pair of arms in one metric's summary block."""
    return [
        {
            "above": high,
            "below": low,
            **claim(list(block[high]["finals"].values()), list(block[low]["finals"].values())),
        }
        for high, low in pairs
    ]


def nothing_learnt(block: Mapping[str, Any]) -> bool:
    """Whether no run of any arm in a metric's summary block has a final value above 0."""
    return all(value == 0.0 for stats in block.values() for value in stats["finals"].values())


def table_verdict(
    key: Sequence[dict[str, Any]], untestable: bool, labels: Mapping[str, str], window: int
) -> dict[str, Any]:
    """``holds`` when every key claim holds, ``not testable here`` when ``untestable``, else ``does not
    hold``; how many key claims hold, and a reason naming the unresolved ones and the reversed ones
    with their gap ± SE."""
    held = sum(c["outcome"] == "holds" for c in key)
    if untestable:
        reason = f"no run solves a room in its last {window} iterations"
        return {"verdict": "not testable here", "key_claims_held": held, "reason": reason}
    if held == len(key):
        return {"verdict": "holds", "key_claims_held": held, "reason": f"all {len(key)} key gaps exceed 2 SE"}

    def named(c: Mapping[str, Any]) -> str:
        return f"{labels[c['above']]} > {labels[c['below']]}"

    parts = [f"{held} of {len(key)} key gaps exceed 2 SE"]
    unresolved = [named(c) for c in key if c["outcome"] == "unresolved"]
    reversed_ = [f"{named(c)} ({gap_text(c)})" for c in key if c["outcome"] == "reversed"]
    parts += [f"unresolved: {', '.join(unresolved)}"] if unresolved else []
    parts += [f"reversed: {', '.join(reversed_)}"] if reversed_ else []
    return {"verdict": "does not hold", "key_claims_held": held, "reason": "; ".join(parts)}


def verdict(summary: Mapping[str, Any], window: int) -> dict[str, Any]:
    """The table's verdict from the summary (rule in the module docstring), and every claim behind it."""
    labels = {arm: spec.label for arm, spec in ARMS.items()}
    order = list(ARMS)
    adjacent = list(zip(order[1:], order[:-1], strict=True))
    per_metric = {
        metric: {
            "key_claims": claims(summary[metric], KEY_CLAIMS),
            "adjacent_claims": claims(summary[metric], adjacent),
        }
        for metric in METRICS
    }
    return {
        **table_verdict(
            per_metric["success"]["key_claims"], nothing_learnt(summary["success"]), labels, window
        ),
        "valid_action_rate": table_verdict(
            per_metric["valid_action_rate"]["key_claims"], False, labels, window
        ),
        "claims": per_metric,
    }


def miniature_setting(config: TrainConfig) -> str:
    """The miniature's setting in one line, from a run's config (the docs row's third cell)."""
    env, policy = config.env, config.policy
    rows, columns = env.kwargs["dim_room"]
    return (
        f"tiny LM ({policy.tiny_layers} layers, hidden {policy.tiny_hidden_size}) from scratch, "
        f"{len(env.task_pool)} fixed {rows}×{columns} 1-box rooms "
        f"(solutions ≤{env.kwargs['max_solution_length']} moves), "
        f"{env.kwargs['max_turns']} turns × ≤{env.kwargs['max_actions_per_turn']} moves "
        f"({config.sampler.max_new_tokens} tokens a turn, each a move or the separator), paper's rewards, "
        f"{config.run.iterations} iterations × {env.num_groups * env.group_size} episodes"
    )


def arm_results(
    name: str,
    arms: Mapping[str, Arm],
    args: argparse.Namespace,
    numerics: dict[str, Any],
    paper: dict[str, Any],
) -> dict[str, Any]:
    """Train (or read back) every arm × seed and build the results file's common part: command, numerics,
    settings, sizes, the paper's figures, the curves of :data:`CURVES`, the summary and the cost."""
    runs, costs, settings = train_arms(dict(arms), args.seeds, Path(args.out), iterations=args.iterations)
    runs = with_valid_action_rates(runs)
    first = next(iter(arms.values()))
    config = load_config(first.config, [*first.overrides, f"run.iterations={args.iterations}"])
    curves = metric_curves(runs, CURVES)
    return {
        "command": f"python -m baselines.experiments.{name} --seeds {' '.join(map(str, args.seeds))} "
        f"--iterations {args.iterations} --window {args.window}",
        "numerics": numerics,
        "settings": settings,
        "labels": {arm: spec.label for arm, spec in arms.items()},
        "miniature": miniature_setting(config),
        "paper": paper,
        "iterations": args.iterations,
        "episodes_per_iteration": int(next(iter(next(iter(runs.values())).values()))[0]["episodes"]),
        "window": args.window,
        "curves": curves,
        "summary": summarise(curves, METRICS, args.window),
        "cost": cost_summary(costs),
    }


def parse_arguments(description: str, argv: Sequence[str] | None) -> argparse.Namespace:
    """``--seeds``, ``--iterations`` (default: the config's), ``--window``, ``--out``, ``--results``;
    a :class:`ConfigError` for a window outside the run."""
    default_iterations = load_config(CONFIG).run.iterations
    parser = experiment_parser(description, DEFAULT_OUT, "the runs' metrics, checkpoints and cost")
    parser.add_argument("--iterations", type=int, default=default_iterations)
    parser.add_argument("--window", type=int, default=5, help="final value: mean of the last iterations")
    args = parser.parse_args(argv)
    if not 1 <= args.window <= args.iterations:
        raise ConfigError(f"--window must be in [1, --iterations = {args.iterations}], got {args.window}")
    return args


def arm_figures(results: Mapping[str, Any], metric: str, short: str, digits: int) -> dict[str, str]:
    """Per arm, ``<short> mean ± std (min–max, n seeds)`` of its final ``metric`` with ``digits`` decimals."""
    return {arm: f"{short} {spread(stats, digits)}" for arm, stats in results["summary"][metric].items()}


def docs_row(results: Mapping[str, Any]) -> str:
    """The page's row: title, the paper's figures, the miniature, ours per arm, the verdict, the CPU cost."""
    paper, labels = results["paper"], results["labels"]
    success = ", ".join(f"{labels[arm]} {value:.3f}" for arm, value in paper["success"].items())
    paper_valid = ", ".join(f"{value:.3f}" for value in paper["valid_action_rate"].values())
    success_ours = arm_figures(results, "success", "success", 3)
    valid_ours = arm_figures(results, "valid_action_rate", "valid", 2)
    ours = "<br>".join(f"{labels[arm]}: {success_ours[arm]}; {valid_ours[arm]}" for arm in labels)
    judged = results["verdict"]
    valid = judged["valid_action_rate"]  # the verdict on the valid-action rate
    cells = [
        "Turn-level rewards on Sokoban (MT-PPO)",
        f"{paper['setting']}. Success {success}; valid actions {paper_valid} (same order)",
        results["miniature"],
        ours,
        f"{judged['verdict']}: {judged['reason']}. Valid-action rate: {valid['verdict']} "
        f"({valid['key_claims_held']} of {len(KEY_CLAIMS)} key gaps exceed 2 SE)",
        cpu_cell(results["cost"]),
    ]
    return markdown_row(cells)


def print_table(results: Mapping[str, Any]) -> None:
    """Each arm's final success and valid-action rate, then every claim and the verdict."""
    labels = results["labels"]
    for arm in labels:
        figures = [f"{metric} {spread(results['summary'][metric][arm])}" for metric in METRICS]
        print(f"{labels[arm]:28s} " + "; ".join(figures))
    for metric, found in results["verdict"]["claims"].items():
        for kind, listed in found.items():
            for c in listed:
                print(
                    f"{metric:18s} {kind:15s} {labels[c['above']]} > {labels[c['below']]}: "
                    f"{gap_text(c)} {c['outcome']}"
                )
    print(f"verdict: {results['verdict']['verdict']} ({results['verdict']['reason']})")


def run_turn_table(table: ModuleType, argv: Sequence[str] | None) -> int:
    """The ``main`` of this table and of table 3: ``table``'s arms trained (or read back) in a pinned
    process, its ``verdict`` of the summary and the window, its ``print_table``, the results written
    with their curves, and its ``docs_row`` printed. ``table`` defines ``NAME``, ``ARMS`` and ``PAPER``
    too."""
    args = parse_arguments((table.__doc__ or table.NAME).splitlines()[0], argv)
    if not environment_is_pinned():
        return run_pinned(f"baselines.experiments.{table.NAME}", argv)
    numerics = pin_numerics()
    results = arm_results(table.NAME, table.ARMS, args, numerics, table.PAPER)
    results["verdict"] = table.verdict(results["summary"], args.window)
    table.print_table(results)
    titles = {metric: metric.replace("_", " ") for metric in METRICS}
    write_results(results, Path(args.results), table.NAME, results["labels"], titles)
    print(table.docs_row(results))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_turn_table(sys.modules[__name__], argv)


if __name__ == "__main__":
    raise SystemExit(main())
