"""What the paper-table experiments share: arms x seeds, their curves, episodes to a threshold, cost.

An experiment (``archer_efficiency``, ``state_matching``, ``hicra_mechanics``)
is a few *arms* (:class:`Arm`: a config file and the overrides that make it
that arm) trained on several seeds each, through
:func:`baselines.experiments.common.train_or_read` (a complete run under
``--out`` is read back, not retrained). Its results file keeps, per arm and
per seed, the per-iteration curve of every metric its table reports
(:func:`metric_curves`); its summary is recomputed from those curves alone
(:func:`success_summary`), so a test can tie every figure to them.

Rules every table uses:

- *final success* of a run: the mean success of its last ``window``
  iterations;
- *episodes to threshold*: the episodes trained on when the moving average
  (``window`` iterations) of the success first reaches ``threshold``
  (:func:`baselines.experiments.common.episodes_to_threshold`); a run that
  never reaches it is *censored*: it counts as its whole budget of episodes
  (iterations x episodes per iteration), a lower bound on what it would
  need, so the *censored mean* over seeds never flatters an arm whose runs
  fail (ours: the papers report one run per method and say nothing of runs
  that never pass);
- spreads over seeds are the mean ± population std (ddof 0), the range and
  the number of seeds (:func:`spread`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from baselines.experiments.common import (
    PINNED_TORCH_THREADS,
    environment_is_pinned,
    episodes_to_threshold,
    experiment_parser,
    moving_average,
    pin_numerics,
    run_pinned,
    save_figure,
    seed_count,
    train_or_read,
)
from baselines.trainers.config import ConfigError, TrainConfig, load_config

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


@dataclass(frozen=True)
class Arm:
    """One arm of an experiment: its config file, the overrides that make it this arm, its label."""

    config: Path
    overrides: tuple[str, ...]
    label: str


def arm_config(
    arm: Arm, seed: int, run_dir: Path, shared: Sequence[str] = (), iterations: int | None = None
) -> TrainConfig:
    """The config of one run: the arm's file, the experiment's ``shared`` overrides, then the arm's own,
    the seed, the run folder, ``iterations`` when given, and the pinned thread count."""
    overrides = [*shared, *arm.overrides, f"run.seed={seed}", f"run.out_dir={run_dir}"]
    if iterations is not None:
        overrides.append(f"run.iterations={iterations}")
    overrides.append(f"policy.num_threads={PINNED_TORCH_THREADS}")
    return load_config(arm.config, overrides)


def run_counts(records: Sequence[dict[str, Any]]) -> dict[str, int]:
    """The deterministic cost of one run, summed over its iterations.

    ``env_steps`` = Σ episodes x mean turns (the records' ``turns``);
    ``generations`` = sampled responses: one per env step in these
    experiments (no branch rollouts, no resampling), so the two are equal;
    ``episodes`` = Σ episodes. Iteration records {episodes 32, turns 9.5}
    and {episodes 32, turns 8.25}: 304 + 264 = 568 env steps, 64 episodes.
    """
    env_steps = sum(round(r["episodes"] * r["turns"]) for r in records)
    return {
        "episodes": sum(int(r["episodes"]) for r in records),
        "env_steps": env_steps,
        "generations": env_steps,
    }


def train_arms(
    arms: dict[str, Arm],
    seeds: Sequence[int],
    out: Path,
    shared: Sequence[str] = (),
    iterations: int | None = None,
) -> tuple[dict[str, dict[int, list[dict[str, Any]]]], dict[str, dict[int, dict[str, Any]]], dict[str, Any]]:
    """Train (or read back) every arm on every seed under ``out/<arm>-s<seed>``.

    Returns the records per arm and seed, the cost per arm and seed
    (:func:`run_counts` and the CPU and wall seconds of ``train_or_read``,
    None for a run read back without its times) and each arm's settings (its
    config file, overrides and resolved algorithm section).
    """
    runs: dict[str, dict[int, list[dict[str, Any]]]] = {}
    costs: dict[str, dict[int, dict[str, Any]]] = {}
    settings: dict[str, Any] = {}
    for name, arm in arms.items():
        for seed in seeds:
            config = arm_config(arm, seed, out / f"{name}-s{seed}", shared, iterations)
            settings[name] = {
                "config": arm.config.name,
                "overrides": [*shared, *arm.overrides],
                "algorithm": config.to_dict()["algorithm"],
            }
            records, times = train_or_read(config)
            if len(records) != config.run.iterations:  # a longer run left there: its cost is not this one's
                raise RuntimeError(
                    f"{config.run.out_dir} holds {len(records)} iterations, not {config.run.iterations}: "
                    "give another --out"
                )
            runs.setdefault(name, {})[seed] = records
            costs.setdefault(name, {})[seed] = {
                **run_counts(records),
                "cpu_s": times["cpu_s"] if times else None,
                "wall_s": times["wall_s"] if times else None,
            }
            print(f"{name:10s} seed {seed}: success {[round(r['success'], 3) for r in records]}", flush=True)
    return runs, costs, settings


def metric_curves(
    runs: dict[str, dict[int, list[dict[str, Any]]]], metrics: Sequence[str]
) -> dict[str, dict[str, dict[str, list[float]]]]:
    """``curves[metric][arm][seed]``: the metric per iteration, for every arm whose records log it."""
    curves: dict[str, dict[str, dict[str, list[float]]]] = {}
    for metric in metrics:
        for arm, by_seed in runs.items():
            if all(metric in r for records in by_seed.values() for r in records):
                curves.setdefault(metric, {})[arm] = {
                    str(seed): [float(r[metric]) for r in records] for seed, records in by_seed.items()
                }
    return curves


def seed_spread(values: Sequence[float]) -> dict[str, float | int]:
    """Mean, population std (ddof 0), min and max over seeds, and how many: [0.5, 0.7] → 0.6 ± 0.1."""
    array = np.asarray(values, dtype=np.float64)
    return {
        "mean": float(array.mean()),
        "std": float(array.std()),
        "min": float(array.min()),
        "max": float(array.max()),
        "seeds": int(array.shape[0]),
    }


def run_episodes_to_threshold(
    curve: Sequence[float], episodes_per_iteration: int, threshold: float, window: int
) -> int | None:
    """Episodes to ``threshold`` of one success curve (None: never), iteration i having seen
    (i + 1) x ``episodes_per_iteration`` episodes."""
    records = [{"success": s, "episodes_seen": (i + 1) * episodes_per_iteration} for i, s in enumerate(curve)]
    return episodes_to_threshold(records, threshold, window)


def success_summary(
    curves: dict[str, dict[str, list[float]]], episodes_per_iteration: int, threshold: float, window: int
) -> dict[str, Any]:
    """Per arm, from its success curves alone: per seed the final success and episodes to threshold;
    over seeds the spread of the final success, the runs reaching the threshold, and the censored
    episodes to threshold (an unreached run counts as its budget, ``len(curve)`` x episodes per iteration).

    Two seeds with curves [0.5, 0.5, 1.0] and [0, 0, 0.25], 32 episodes per
    iteration, threshold 0.5, window 2: moving averages [0.5, 0.5, 0.75] and
    [0, 0, 0.125]; finals 0.75 and 0.125; the first run reaches 0.5 at
    iteration 0 (32 episodes), the second never (censored at 3 x 32 = 96):
    censored episodes 64 ± 32.
    """
    summary: dict[str, Any] = {}
    for arm, by_seed in curves.items():
        seeds: dict[str, Any] = {}
        for seed, curve in by_seed.items():
            reached = run_episodes_to_threshold(curve, episodes_per_iteration, threshold, window)
            seeds[seed] = {
                "final_success": float(np.mean(curve[-window:])),
                "best_smoothed_success": float(moving_average(curve, window).max()),
                "episodes_to_threshold": reached,
                "censored_episodes": reached if reached is not None else len(curve) * episodes_per_iteration,
            }
        summary[arm] = {
            "seeds": seeds,
            "final_success": seed_spread([s["final_success"] for s in seeds.values()]),
            "censored_episodes": seed_spread([s["censored_episodes"] for s in seeds.values()]),
            "runs_reaching_threshold": sum(s["episodes_to_threshold"] is not None for s in seeds.values()),
        }
    return summary


def curve_mean(curves: dict[str, dict[str, dict[str, list[float]]]], metric: str, arm: str) -> float:
    """The mean over seeds and iterations of one arm's curve of ``metric``."""
    return float(np.mean([np.mean(curve) for curve in curves[metric][arm].values()]))


def cost_summary(costs: dict[str, dict[int, dict[str, Any]]]) -> dict[str, Any]:
    """Per arm: every run's cost and the totals over its runs; over all arms: the totals.

    Times are summed over the runs that were timed (``timed_runs`` of
    ``runs``); the counts over every run.
    """
    summary: dict[str, Any] = {"arms": {}}
    for arm, by_seed in costs.items():
        timed = [cost for cost in by_seed.values() if cost["cpu_s"] is not None]
        summary["arms"][arm] = {
            "seeds": {str(seed): cost for seed, cost in by_seed.items()},
            "runs": len(by_seed),
            "timed_runs": len(timed),
            "cpu_s": float(sum(cost["cpu_s"] for cost in timed)),
            "wall_s": float(sum(cost["wall_s"] for cost in timed)),
            **{key: int(sum(cost[key] for cost in by_seed.values())) for key in ("episodes", "env_steps")},
            "generations": int(sum(cost["generations"] for cost in by_seed.values())),
        }
    arms = summary["arms"].values()
    summary["total"] = {
        key: sum(block[key] for block in arms)
        for key in ("runs", "timed_runs", "cpu_s", "wall_s", "episodes", "env_steps", "generations")
    }
    return summary


def spread(stats: dict[str, Any], digits: int = 2) -> str:
    """``0.52 ± 0.10 (0.40–0.61, 8 seeds)`` from a :func:`seed_spread` block."""
    number = f",.{digits}f"
    return (
        f"{stats['mean']:{number}} ± {stats['std']:{number}} "
        f"({stats['min']:{number}}–{stats['max']:{number}}, {seed_count(stats['seeds'])})"
    )


def cpu_cell(cost: dict[str, Any]) -> str:
    """The docs row's cost cell: total CPU seconds and env steps of every run."""
    total = cost["total"]
    timed = (
        "" if total["timed_runs"] == total["runs"] else f" ({total['timed_runs']} of {total['runs']} timed)"
    )
    return f"{total['cpu_s']:,.0f} CPU s over {total['runs']} runs{timed} ({total['env_steps']:,} env steps)"


def plot_curves(
    curves: dict[str, dict[str, dict[str, list[float]]]],
    labels: dict[str, str],
    titles: dict[str, str],
    episodes_per_iteration: int,
    window: int,
    path: Path,
) -> Path | None:
    """One panel per metric of ``titles``: per arm the mean over seeds of its moving average (``window``
    iterations) against episodes trained on, band ± std. None without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(titles), figsize=(5.5 * len(titles), 4.2), squeeze=False)
    for axis, (metric, title) in zip(axes[0], titles.items(), strict=True):
        for arm, by_seed in curves[metric].items():
            smoothed = np.array([moving_average(curve, window) for curve in by_seed.values()])
            mean, std = smoothed.mean(0), smoothed.std(0)
            episodes = episodes_per_iteration * np.arange(1, mean.shape[0] + 1)
            (line,) = axis.plot(episodes, mean, label=f"{labels[arm]} ({seed_count(len(by_seed))})")
            axis.fill_between(episodes, mean - std, mean + std, alpha=0.2, color=line.get_color())
        axis.set_title(title)
        axis.set_xlabel("episodes trained on")
        axis.set_ylabel(f"moving average, {window} iterations (mean ± std over seeds)")
        axis.grid(alpha=0.3)
        axis.legend()
    return save_figure(figure, path, dpi=110)


def parse_arguments(
    description: str, name: str, iterations: int, threshold: float, window: int, argv: Sequence[str] | None
) -> argparse.Namespace:
    """The options every table's ``main`` takes, with the table's defaults; a :class:`ConfigError` for a
    threshold that is not a success rate in (0, 1] or a window below 1."""
    parser = experiment_parser(description, f"runs/{name}", "the runs' metrics, checkpoints and cost")
    parser.add_argument(
        "--iterations", type=int, default=iterations, help=f"iterations per run (default {iterations})"
    )
    parser.add_argument("--threshold", type=float, default=threshold, help=f"success (default {threshold})")
    parser.add_argument("--window", type=int, default=window, help=f"moving average (default {window})")
    args = parser.parse_args(argv)
    if not 0.0 < args.threshold <= 1.0:
        raise ConfigError(f"--threshold must be a success rate in (0, 1], got {args.threshold}")
    if args.window < 1:
        raise ConfigError(f"--window must be at least 1 iteration, got {args.window}")
    return args


def base_results(
    name: str,
    args: argparse.Namespace,
    numerics: dict[str, Any],
    runs: dict[str, dict[int, list[dict[str, Any]]]],
    costs: dict[str, dict[int, dict[str, Any]]],
    settings: dict[str, Any],
    metrics: Sequence[str],
) -> dict[str, Any]:
    """What every table's results file holds before its summary and verdict: the command, the pinned
    numerics, each arm's settings, the sizes, the curves of ``metrics`` and the cost."""
    first = next(iter(next(iter(runs.values())).values()))
    return {
        "command": f"python -m baselines.experiments.{name} --seeds {' '.join(map(str, args.seeds))} "
        f"--iterations {args.iterations} --threshold {args.threshold} --window {args.window}",
        "numerics": numerics,
        "settings": settings,
        "iterations": args.iterations,
        "episodes_per_iteration": int(first[0]["episodes"]),
        "threshold": args.threshold,
        "window": args.window,
        "curves": metric_curves(runs, metrics),
        "cost": cost_summary(costs),
    }


def file_success_summary(results: dict[str, Any]) -> dict[str, Any]:
    """:func:`success_summary` of a results file's success curves with its own sizes and rules."""
    return success_summary(
        results["curves"]["success"],
        results["episodes_per_iteration"],
        results["threshold"],
        results["window"],
    )


def write_results(
    results: dict[str, Any], results_dir: Path, name: str, labels: dict[str, str], titles: dict[str, str]
) -> None:
    """``<results_dir>/<name>.json`` and the curves of ``titles`` in ``<name>.png``; prints where."""
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}.json"
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    figure = plot_curves(
        results["curves"],
        labels,
        titles,
        results["episodes_per_iteration"],
        results["window"],
        path.with_suffix(".png"),
    )
    print(f"results: {path}" + (f", curves: {figure}" if figure else ""))


def arm_outcome(label: str, block: dict[str, Any], threshold: float) -> str:
    """An arm's part of a docs row: its final success and its censored episodes to ``threshold``
    (:func:`spread` of each), and how many of its runs reach the threshold."""
    return (
        f"{label}: final success {spread(block['final_success'])}, "
        f"{spread(block['censored_episodes'], 0)} episodes to {threshold} "
        f"({block['runs_reaching_threshold']} of {len(block['seeds'])} reach it)"
    )


def run_table(
    table: ModuleType, argv: Sequence[str] | None, judge: Callable[[dict[str, Any]], None] | None = None
) -> int:
    """A table module's ``main``: its arms trained (or read back) in a pinned process, then ``judge``
    adds the summary and the verdict (and what else the table reports) to the results, which are
    written with their curves, and the docs row printed.

    ``table`` defines ``NAME``, ``ARMS``, ``SHARED``, ``METRICS``, ``TITLES``, the defaults
    ``ITERATIONS``, ``THRESHOLD`` and ``WINDOW``, ``docs_row``, and, without a ``judge``, ``summarise``
    (of the results) and ``verdict`` (of the summary), which then judge.
    """
    description = (table.__doc__ or table.NAME).splitlines()[0]
    args = parse_arguments(description, table.NAME, table.ITERATIONS, table.THRESHOLD, table.WINDOW, argv)
    if not environment_is_pinned():
        return run_pinned(f"baselines.experiments.{table.NAME}", argv)
    numerics = pin_numerics()
    runs, costs, settings = train_arms(table.ARMS, args.seeds, Path(args.out), table.SHARED, args.iterations)
    results = base_results(table.NAME, args, numerics, runs, costs, settings, table.METRICS)
    if judge is None:
        results["summary"] = table.summarise(results)
        results["verdict"] = table.verdict(results["summary"])
    else:
        judge(results)
    labels = {arm: spec.label for arm, spec in table.ARMS.items()}
    write_results(results, Path(args.results), table.NAME, labels, table.TITLES)
    print(table.docs_row(results))
    return 0
