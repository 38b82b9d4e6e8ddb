"""Miniature learning experiment: GRPO vs GiGPO vs VinePPO from scratch on small Sokoban rooms, several seeds.

Trains the tiny policy of ``baselines/configs/mini_sokoban.yaml`` with each
advantage estimator (:data:`ESTIMATORS`) and each seed: the same rooms,
model, sampler, optimiser and iterations; the seed changes the model's
initialisation and the sampling. GRPO and GiGPO are that config's
``critic_free`` algorithm (GiGPO: state anchors, gamma 0.95, omega 1);
VinePPO is ``baselines/configs/vineppo_sokoban.yaml``, which differs from it
only in its algorithm section: K = 4 Monte-Carlo branch rollouts per turn
and VinePPO's own discount gamma = 1 (its paper's default, as 0.95 is
GiGPO's); the results file records every estimator's algorithm section.
VinePPO's branches are extra env steps and generation that GRPO and GiGPO
do not pay for: the results file counts them per run.

Printed per run and per estimator: the success rate of the last iterations,
the best moving-average success, and the episodes needed until the moving
average of the success rate first reaches ``--threshold``; and each run's
cost: wall seconds and process CPU seconds of its training (``cost.json``
in the run's directory; a run resumed from a checkpoint is not timed), env
steps of the trained episodes and of VinePPO's branches, and its branch
rollouts. The runs (metrics, checkpoints, cost) go to ``--out``, and a run
whose metrics are complete there is read back, not retrained. With
``--earlier FILE`` (an earlier results file), a run missing under ``--out``
whose curve that file holds is carried over from it (neither counted nor
timed; listed under ``from_earlier_results``), and a run that is retrained
must reproduce that file's curve exactly. The results
file ``<results>/estimators.json`` (the summary, the cost, every run's
success curve and the settings) and the curves ``<results>/estimators.png``
(mean over seeds, needs matplotlib) go to ``--results``, by default
``baselines/experiments/results`` in the repo: the numbers quoted in the docs
(``docs/reference/baselines.md``) are :func:`docs_table` of that file.

    python -m baselines.experiments.estimators --seeds 0 1 2 3 4 5 6 7 --out runs/mini

The numbers are bit-reproducible on any x86-64 machine with AVX2: the experiment trains
in a process with pinned numerics (:mod:`baselines.experiments.common`), and records
them in the results file under ``numerics``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from baselines.experiments.common import (
    PINNED_TORCH_THREADS,
    UnpinnedNumerics,
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
from baselines.metrics import read_jsonl
from baselines.trainers.config import TrainConfig, load_config

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
RESULTS_NAME = "estimators"
COUNTS = ("env_steps", "branch_rollouts", "branch_env_steps", "all_env_steps")


@dataclass(frozen=True)
class Estimator:
    """An advantage estimator of the experiment: its config file, the overrides that select it, its name."""

    config: Path
    overrides: tuple[str, ...]
    label: str


# Only the algorithm sections differ (tests/baselines/test_experiment.py checks the rest).
ESTIMATORS = {
    "grpo": Estimator(CONFIGS / "mini_sokoban.yaml", ("algorithm.estimator=grpo",), "GRPO"),
    "gigpo": Estimator(CONFIGS / "mini_sokoban.yaml", ("algorithm.estimator=gigpo",), "GiGPO"),
    "vineppo": Estimator(CONFIGS / "vineppo_sokoban.yaml", (), "VinePPO"),
}


def summarise(
    runs: dict[str, dict[int, list[dict[str, Any]]]], threshold: float, window: int
) -> dict[str, Any]:
    summary: dict[str, Any] = {"threshold": threshold, "window": window, "estimators": {}}
    for estimator, by_seed in runs.items():
        per_seed = {}
        for seed, records in by_seed.items():
            per_seed[seed] = {
                "final_success": float(np.mean([r["success"] for r in records[-window:]])),
                "best_smoothed_success": float(moving_average([r["success"] for r in records], window).max()),
                "episodes_to_threshold": episodes_to_threshold(records, threshold, window),
                "singleton_share": float(np.mean([r["anchor/singleton_share"] for r in records])),
            }
        reached = [s["episodes_to_threshold"] for s in per_seed.values()]
        finals = [s["final_success"] for s in per_seed.values()]
        summary["estimators"][estimator] = {
            "seeds": per_seed,
            "mean_final_success": float(np.mean(finals)),
            "std_final_success": float(np.std(finals)),
            "min_final_success": float(min(finals)),
            "max_final_success": float(max(finals)),
            "runs_reaching_threshold": sum(r is not None for r in reached),
            "mean_episodes_to_threshold_of_those": float(np.mean([r for r in reached if r is not None]))
            if any(r is not None for r in reached)
            else None,
        }
    return summary


def estimator_config(
    estimator: str, seed: int, run_dir: Path, extra: Sequence[str] = (), iterations: int | None = None
) -> TrainConfig:
    """The training config of one run: the estimator's config file and overrides, then ``extra``."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}; estimators: {sorted(ESTIMATORS)}")
    spec = ESTIMATORS[estimator]
    overrides = [*spec.overrides, f"run.seed={seed}", f"run.out_dir={run_dir}", *extra]
    if iterations is not None:
        overrides.append(f"run.iterations={iterations}")
    overrides.append(f"policy.num_threads={PINNED_TORCH_THREADS}")
    return load_config(spec.config, overrides)


def run_counts(records: Sequence[dict[str, Any]]) -> dict[str, int]:
    """The deterministic cost of one run, summed over its iterations.

    ``env_steps`` = Σ episodes × mean turns of the trained episodes;
    ``branch_rollouts`` and ``branch_env_steps`` = Σ ``vine/rollouts`` and
    Σ ``vine/env_steps`` (VinePPO's K rollouts per turn; 0 for the others);
    ``all_env_steps`` is their sum.
    """
    env_steps = sum(round(r["episodes"] * r["turns"]) for r in records)
    branch_rollouts = sum(int(r.get("vine/rollouts", 0)) for r in records)
    branch_env_steps = sum(int(r.get("vine/env_steps", 0)) for r in records)
    return {
        "env_steps": env_steps,
        "branch_rollouts": branch_rollouts,
        "branch_env_steps": branch_env_steps,
        "all_env_steps": env_steps + branch_env_steps,
    }


def earlier_records(results: dict[str, Any], estimator: str, seed: int) -> list[dict[str, Any]] | None:
    """One run's records rebuilt from an earlier results file (None: the file lacks the run).

    The file keeps a run's success per iteration and its mean singleton share, so
    the records hold those and ``episodes_seen``; not the episodes' turns, so the
    run's steps are not counted (:func:`run_counts` needs them).
    """
    curve = results.get("success_curves", {}).get(estimator, {}).get(str(seed))
    if curve is None:
        return None
    share = results["estimators"][estimator]["seeds"][str(seed)]["singleton_share"]
    per_iteration = results["episodes_per_iteration"]
    return [
        {"success": success, "episodes_seen": (i + 1) * per_iteration, "anchor/singleton_share": share}
        for i, success in enumerate(curve)
    ]


def summarise_cost(costs: dict[str, dict[int, dict[str, Any]]]) -> dict[str, Any]:
    """Per estimator: every run's counts and times, their means over the runs counted and over those timed."""
    summary = {}
    for estimator, by_seed in costs.items():
        counted = [seed for seed, cost in by_seed.items() if cost["env_steps"] is not None]
        timed = [seed for seed, cost in by_seed.items() if cost["wall_s"] is not None]
        block: dict[str, Any] = {"seeds": by_seed, "counted_seeds": counted, "timed_seeds": timed}
        for count in COUNTS:
            block[f"mean_{count}"] = float(np.mean([by_seed[s][count] for s in counted])) if counted else None
        for clock in ("wall_s", "cpu_s"):
            block[f"mean_{clock}"] = float(np.mean([by_seed[s][clock] for s in timed])) if timed else None
        summary[estimator] = block
    return summary


def docs_table(results: dict[str, Any]) -> str:
    """The docs' table of the experiment (``docs/reference/baselines.md``), from its results file.

    One row per estimator: the mean ± (population) std of its runs' final
    success and their range; the mean episodes to the threshold over the runs
    that reach it; and per run, the mean wall and CPU seconds over its timed
    runs and the mean env steps (and branch rollouts) over its counted runs,
    saying on how many seeds when not on all. Under the table, VinePPO's mean
    env steps and CPU seconds per run as multiples of GiGPO's.
    """
    estimators = results["estimators"]

    def label(estimator: str) -> str:
        algorithm = results["algorithms"][estimator]
        if "mc_rollouts" in algorithm:
            return f"{ESTIMATORS[estimator].label} (K = {algorithm['mc_rollouts']})"
        return ESTIMATORS[estimator].label

    def spread(block: dict[str, Any]) -> str:
        return (
            f"{block['mean_final_success']:.3f} ± {block['std_final_success']:.3f} "
            f"({block['min_final_success']:.3f}–{block['max_final_success']:.3f}, "
            f"{seed_count(len(block['seeds']))})"
        )

    def episodes(block: dict[str, Any]) -> str:
        mean = block["mean_episodes_to_threshold_of_those"]
        reached = f"{block['runs_reaching_threshold']} of {len(block['seeds'])} runs"
        return f"{mean:,.0f} ({reached})" if mean is not None else f"not reached ({reached})"

    def on(block: dict[str, Any], part: str) -> str:
        runs, done = len(block["seeds"]), len(block[f"{part}_seeds"])
        return "" if done == runs else f" ({part} on {done} of {seed_count(runs)})"

    def clocks(estimator: str) -> str:
        block = results["cost"][estimator]
        if block["mean_wall_s"] is None:
            return "not timed"
        return f"{block['mean_wall_s']:,.0f} s / {block['mean_cpu_s']:,.0f} s" + on(block, "timed")

    def steps(estimator: str) -> str:
        block = results["cost"][estimator]
        if block["mean_all_env_steps"] is None:
            return "not counted"
        counted = f"{block['mean_all_env_steps']:,.0f}"
        if block["mean_branch_rollouts"]:
            counted += (
                f" ({block['mean_branch_env_steps']:,.0f} in "
                f"{block['mean_branch_rollouts']:,.0f} branch rollouts)"
            )
        return counted + on(block, "counted")

    def price(estimator: str, baseline: str) -> str:
        if estimator not in estimators or baseline not in estimators:
            return ""
        paid, base = results["cost"][estimator], results["cost"][baseline]
        if None in (
            paid["mean_all_env_steps"],
            base["mean_all_env_steps"],
            paid["mean_cpu_s"],
            base["mean_cpu_s"],
        ):
            return ""
        step_ratio = paid["mean_all_env_steps"] / base["mean_all_env_steps"]
        cpu_ratio = paid["mean_cpu_s"] / base["mean_cpu_s"]
        return (
            f"\n\nA {label(estimator)} run takes {step_ratio:.0f}× the env steps of a {label(baseline)} run "
            f"and {cpu_ratio:.1f}× its CPU seconds."
        )

    header = (
        "| estimator | final success: mean ± std (range, seeds) "
        f"| episodes to {results['threshold']} success | per run: wall / CPU | per run: env steps |"
    )
    rows = [
        f"| {label(e)} | {spread(estimators[e])} | {episodes(estimators[e])} | {clocks(e)} | {steps(e)} |"
        for e in estimators
    ]
    return "\n".join([header, "|---|---|---|---|---|", *rows]) + price("vineppo", "gigpo")


def mean_curve(by_seed: dict[int, list[dict[str, Any]]], window: int) -> tuple[np.ndarray, np.ndarray]:
    """Per iteration, the mean and std over seeds of the moving-average success."""
    curves = np.array(
        [moving_average([r["success"] for r in records], window) for records in by_seed.values()]
    )
    return curves.mean(0), curves.std(0)


def plot(runs: dict[str, dict[int, list[dict[str, Any]]]], out: Path, window: int) -> Path | None:
    """Mean success over seeds (band: ± std) against episodes trained on and against all env steps."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
    for estimator, by_seed in runs.items():
        mean, std = mean_curve(by_seed, window)
        episodes = [r["episodes_seen"] for r in next(iter(by_seed.values()))]
        name = ESTIMATORS[estimator].label
        label = f"{name} (mean ± std of {seed_count(len(by_seed))})"
        (line,) = axes[0].plot(episodes, mean, label=label)
        band = np.clip(mean - std, 0, 1), np.clip(mean + std, 0, 1)
        axes[0].fill_between(episodes, *band, alpha=0.2, color=line.get_color())
        counted = {seed: records for seed, records in by_seed.items() if "turns" in records[0]}
        if counted:  # all env steps per iteration (trained episodes and branches), mean over the runs counted
            steps = np.mean(
                [[run_counts([r])["all_env_steps"] for r in records] for records in counted.values()], 0
            )
            mean, std = mean_curve(counted, window)
            axes[1].plot(
                np.cumsum(steps),
                mean,
                color=line.get_color(),
                label=f"{name} ({seed_count(len(counted))} counted)",
            )
            band = np.clip(mean - std, 0, 1), np.clip(mean + std, 0, 1)
            axes[1].fill_between(np.cumsum(steps), *band, alpha=0.2, color=line.get_color())
    axes[0].set_xlabel("episodes trained on")
    axes[1].set_xlabel("env steps, VinePPO's branch rollouts included")
    axes[1].set_xscale("log")
    axes[0].set_ylabel(f"success rate (moving average, {window} iterations)")
    for axis in axes:
        axis.grid(alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend()
    return save_figure(figure, out / f"{RESULTS_NAME}.png")


def print_table(summary: dict[str, Any], cost: dict[str, Any], threshold: float, window: int) -> None:
    print(f"\nsuccess threshold {threshold} (moving average over {window} iterations)")
    header = f"{'estimator':10s} {'seed':>4s} {'final':>7s} {'best':>7s} {'episodes to threshold':>22s}"
    print(f"{header} {'wall s':>8s} {'CPU s':>8s} {'env steps':>10s} {'branches':>9s}")
    for estimator, block in summary["estimators"].items():
        for seed, stats in block["seeds"].items():
            reached = stats["episodes_to_threshold"]
            spent = cost[estimator]["seeds"][seed]
            spent = {
                key: "-" if spent[key] is None else f"{spent[key]:.0f}"
                for key in ("wall_s", "cpu_s", "all_env_steps", "branch_rollouts")
            }
            print(
                f"{estimator:10s} {seed:>4d} {stats['final_success']:7.3f} "
                f"{stats['best_smoothed_success']:7.3f} "
                f"{reached if reached is not None else 'not reached':>22} "
                f"{spent['wall_s']:>8s} {spent['cpu_s']:>8s} "
                f"{spent['all_env_steps']:>10s} {spent['branch_rollouts']:>9s}"
            )
        print(
            f"{estimator:10s} {'mean':>4s} {block['mean_final_success']:7.3f} {'':7s} "
            f"{block['runs_reaching_threshold']}/{len(block['seeds'])} runs, "
            f"mean {block['mean_episodes_to_threshold_of_those']}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = experiment_parser(
        __doc__.splitlines()[0], "runs/mini", "the runs' metrics, checkpoints and cost"
    )
    parser.add_argument("--estimators", nargs="+", choices=sorted(ESTIMATORS), default=list(ESTIMATORS))
    parser.add_argument(
        "--seeds-of",
        action="append",
        default=[],
        metavar="ESTIMATOR=SEED,SEED",
        help="this estimator's seeds instead of --seeds (repeatable)",
    )
    parser.add_argument("--iterations", type=int, default=None, help="override the configs' iterations")
    parser.add_argument("--threshold", type=float, default=0.4)
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument(
        "--earlier",
        default=None,
        metavar="RESULTS_JSON",
        help="an earlier results file: a run not complete under --out whose curve it holds is taken from it "
        "(not retrained, so neither counted nor timed), and a run that is retrained must reproduce its curve",
    )
    args = parser.parse_args(argv)
    seeds_of = {estimator: list(args.seeds) for estimator in args.estimators}
    for item in args.seeds_of:
        name, _, listed = item.partition("=")
        if name not in seeds_of or not re.fullmatch(r"\d+(,\d+)*", listed, flags=re.ASCII):
            parser.error(f"--seeds-of wants one of {args.estimators}=SEED,SEED,..., got {item!r}")
        seeds_of[name] = [int(seed) for seed in listed.split(",")]
    if not environment_is_pinned():
        return run_pinned("baselines.experiments.estimators", argv)
    numerics = pin_numerics()

    earlier = json.loads(Path(args.earlier).read_text(encoding="utf-8")) if args.earlier else {}
    if earlier and earlier["numerics"] != numerics:
        raise UnpinnedNumerics(f"{args.earlier} was made under other numerics: {earlier['numerics']}")
    out = Path(args.out)
    runs: dict[str, dict[int, list[dict[str, Any]]]] = {}
    costs: dict[str, dict[int, dict[str, Any]]] = {}
    algorithms: dict[str, dict[str, Any]] = {}
    carried: list[tuple[str, int]] = []
    for estimator in args.estimators:
        for seed in seeds_of[estimator]:
            config = estimator_config(
                estimator, seed, out / f"{estimator}-s{seed}", args.set, args.iterations
            )
            algorithms[estimator] = config.to_dict()["algorithm"]
            kept = earlier_records(earlier, estimator, seed)
            metrics = Path(config.run.out_dir) / "metrics.jsonl"
            if kept is not None and not (
                metrics.exists() and len(read_jsonl(metrics)) >= config.run.iterations
            ):
                records, times, counts = kept, None, dict.fromkeys(COUNTS)
                carried.append((estimator, seed))
            else:
                records, times = train_or_read(config)
                counts = run_counts(records)
                if kept is not None and [r["success"] for r in records] != [r["success"] for r in kept]:
                    raise RuntimeError(
                        f"{estimator} seed {seed} does not reproduce the success curve of {args.earlier}"
                    )
            runs.setdefault(estimator, {})[seed] = records
            costs.setdefault(estimator, {})[seed] = {
                **counts,
                "wall_s": times["wall_s"] if times else None,
                "cpu_s": times["cpu_s"] if times else None,
                "load_average_1min": times["load_average_1min"] if times else None,
            }
            smoothed = moving_average([r["success"] for r in records], args.window)
            print(
                f"{estimator:7s} seed {seed}: final success {smoothed[-1]:.3f}  best {smoothed.max():.3f}"
                + ("  (from the earlier results file)" if (estimator, seed) in carried else ""),
                flush=True,
            )

    summary = summarise(runs, args.threshold, args.window)
    for estimator, seed in carried:  # the file's own figure: its mean over the iterations would round anew
        share = earlier["estimators"][estimator]["seeds"][str(seed)]["singleton_share"]
        summary["estimators"][estimator]["seeds"][seed]["singleton_share"] = share
    cost = summarise_cost(costs)
    results_dir = Path(args.results)
    results_dir.mkdir(parents=True, exist_ok=True)
    command = ["--estimators", *args.estimators, "--seeds", *map(str, args.seeds)]
    command += [f"--seeds-of {item}" for item in args.seeds_of]
    command += [f"--earlier {args.earlier}"] if args.earlier else []
    command += ["--threshold", str(args.threshold), "--window", str(args.window)]
    results = {
        "command": "python -m baselines.experiments.estimators " + " ".join(command),
        "configs": {estimator: ESTIMATORS[estimator].config.name for estimator in args.estimators},
        "overrides": args.set
        + ([f"run.iterations={args.iterations}"] if args.iterations is not None else []),
        "algorithms": algorithms,
        "numerics": numerics,
        **summary,
        "cost": cost,
        "from_earlier_results": {
            estimator: [seed for name, seed in carried if name == estimator] for estimator in args.estimators
        },
        "episodes_per_iteration": int(next(iter(runs[args.estimators[0]].values()))[0]["episodes_seen"]),
        "success_curves": {
            estimator: {str(seed): [r["success"] for r in records] for seed, records in by_seed.items()}
            for estimator, by_seed in runs.items()
        },
    }
    results_path = results_dir / f"{RESULTS_NAME}.json"
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print_table(summary, cost, args.threshold, args.window)
    figure = plot(runs, results_dir, args.window)
    print(f"results: {results_path}" + (f", curves: {figure}" if figure else ""))
    table = docs_table(json.loads(results_path.read_text(encoding="utf-8")))
    print(f"docs/reference/baselines.md:\n{table}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
